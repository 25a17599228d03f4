"""The SWE-agent reader (``swe-agent``): steps as agent-eval's ``sweagent_traj``
rule counts them, computed here from the raw JSON; the end signal, the
submission patch and the SWE-bench gate through certify; bad input as located
diagnostics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trajkit import registry
from trajkit.certify.pipeline import CertifyOptions, certify
from trajkit.export.convert import convert
from trajkit.model import ReadOptions

from conftest import CORPUS

SAMPLES = sorted((CORPUS / "swe_agent").rglob("*.traj"))


def reference_steps(path: Path) -> list[tuple[str, str | None, str | None]] | None:
    """agent-eval's sweagent_traj rule, from the format note: one step per
    trajectory[] entry; action the raw action (JSON when not a string, its JSON
    literal when blank), observation passed through, thinking the non-blank
    thought. None when the rule refuses the file (no trajectory list)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    traj = data.get("trajectory") if isinstance(data, dict) else None
    if not isinstance(traj, list):
        return None
    out = []
    for e in traj:
        a = e.get("action")
        text = a if isinstance(a, str) else json.dumps(a, ensure_ascii=False)
        if not text.strip():
            text = json.dumps(text, ensure_ascii=False)
        t = e.get("thought")
        out.append((text, e.get("observation"), t if isinstance(t, str) and t.strip() else None))
    return out


def test_the_corpus_has_the_samples():
    assert len(SAMPLES) == 6, SAMPLES


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_steps_follow_the_reference_rule(path):
    s = registry.read(path)
    assert s.format == "swe-agent"
    ref = reference_steps(path)
    if ref is None:
        # a history-only demonstration: the reference refuses it; trajkit rebuilds the steps
        # from history's assistant tool calls that a tool item answers, and says so
        data = json.loads(path.read_text(encoding="utf-8"))
        answered = {cid for h in data["history"] if h.get("role") == "tool" for cid in h.get("tool_call_ids") or []}
        calls = [tc["id"] for h in data["history"] if h.get("role") == "assistant" for tc in h.get("tool_calls") or [] if tc["id"] in answered]
        assert [st.extra["call_id"] for st in s.steps] == calls
        assert s.metadata["steps_source"].startswith("history (reconstructed")
        assert "swe-agent.history-only" in {d.code for d in s.diagnostics}
        return
    got = [(st.action, st.observation, st.thinking) for st in s.steps]
    assert got == [(a, o if o is not None else "", t) for a, o, t in ref]
    assert [st.step_id for st in s.steps] == list(range(1, len(ref) + 1))


def test_counts_named_in_the_format_note():
    counts = {p.name: len(registry.read(p).steps) for p in SAMPLES}
    assert counts == {
        "6e44b9__sweagenttestrepo-1c2844.traj": 5, "swe-agent__test-repo-i1.traj": 5, "pydicom__pydicom-1458.traj": 12,
        "networking_1.traj": 4, "humanevalfix-python-0.traj": 5, "function_calling_simple.traj": 5,
    }


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_expect_steps_on_the_cli(path, cli):
    ref = reference_steps(path)
    n = len(ref) if ref is not None else len(registry.read(path).steps)
    assert cli("steps", path, "--expect-steps", n).returncode == 0
    assert cli("steps", path, "--expect-steps", n + 1).returncode == 1


def test_ctb_row_checks_the_count_and_attaches_labels(tmp_path, cli):
    path = next(p for p in SAMPLES if p.name == "pydicom__pydicom-1458.traj")
    row = {"traj_id": "pydicom__pydicom-1458", "step_count": 12,
           "incorrect_stages": [{"incorrect_step_ids": [6], "unuseful_step_ids": [11]}]}
    (tmp_path / "row.json").write_text(json.dumps(row))
    p = cli("steps", path, "--ctb-row", tmp_path / "row.json", "--json", check=True)
    steps = json.loads(p.stdout)["steps"]
    assert steps[5]["labels"] == ["incorrect"] and steps[10]["labels"] == ["unuseful"]
    row["step_count"] = 13
    (tmp_path / "row.json").write_text(json.dumps(row))
    assert cli("steps", path, "--ctb-row", tmp_path / "row.json").returncode == 1


def test_function_calling_takes_ids_and_arguments_from_history():
    path = next(p for p in SAMPLES if p.name.startswith("6e44b9"))
    data = json.loads(path.read_text())
    s = registry.read(path)
    fc = [h["tool_calls"][0] for h in data["history"] if h.get("role") == "assistant"]
    acts = [e for e in s.events if e.type == "trajectory"]
    for tc, e in zip(fc, acts):
        call = e.tool_calls[0]
        assert (call.call_id, call.name, call.arguments) == (tc["id"], tc["function"]["name"], json.loads(tc["function"]["arguments"]))
    # the submit entry has no history item: a synthesised id
    assert acts[-1].tool_calls[0].call_id == "call_5"
    assert s.metadata["mode"] == "function calling" and s.run.models == ["gpt-4o"]


def test_text_commands_get_ops_for_certify():
    s = registry.read(next(p for p in SAMPLES if p.name == "swe-agent__test-repo-i1.traj"))
    calls = [e.tool_calls[0] for e in s.events if e.type == "trajectory"]
    assert [c.name for c in calls] == ["find_file", "open", "edit", "bash", "submit"]
    assert [c.op for c in calls] == ["other", "read", "edit", "shell", "finish"]
    assert calls[1].path == "tests/missing_colon.py"
    assert calls[2].path == "/klieret__swe-agent-test-repo/tests/missing_colon.py"  # the editor's open file
    assert calls[3].command == "python tests/missing_colon.py\n"


def test_task_skips_the_demonstration():
    s = registry.read(next(p for p in SAMPLES if p.name == "swe-agent__test-repo-i1.traj"))
    data = json.loads(Path(s.source_path).read_text())
    first_user = next(h["content"] for h in data["history"] if h.get("role") == "user" and "--- DEMONSTRATION ---" not in h["content"])
    assert s.task == first_user.strip()
    demo = [e for e in s.events if e.extra.get("demonstration")]
    assert len(demo) == 1 and demo[0].raw.get("is_demo") is True


def test_context_is_history_before_each_assistant_item():
    fmt = registry.get_format("swe-agent")
    for path in SAMPLES:
        s = registry.read(path)
        data = json.loads(path.read_text())
        hist = data["history"]
        ctx = fmt.context(s)
        idx = [k for k, h in enumerate(hist) if h.get("role") == "assistant"]
        assert len(ctx) == len(idx)
        for entry, k in zip(ctx, idx):
            assert [m["content"] for m in entry["messages"]] == [h["content"] for h in hist[:k]]
            assert [m["role"] for m in entry["messages"]] == [h["role"] for h in hist[:k]]


def test_engine_outcome_diff_and_cost_through_certify():
    path = next(p for p in SAMPLES if p.name == "pydicom__pydicom-1458.traj")
    data = json.loads(path.read_text())
    cert = certify(str(path))
    assert cert.engine["reached_end"] and cert.engine["claimed_success"] and cert.engine["status"] == "submitted"
    assert cert.diff["source"] == "events" and cert.diff["trustworthy"]
    # the diff is the submission patch: the files it names, nothing rebuilt from the edit commands
    named = [ln.split(" b/")[-1] for ln in data["info"]["submission"].splitlines() if ln.startswith("diff --git ")]
    assert [f["path"] for f in cert.diff["files"]] == named
    assert cert.run["cost_usd"] == data["info"]["model_stats"]["instance_cost"]


def _write(tmp_path: Path, doc, name: str = "run-1.traj") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _doc(status="submitted", traj=None, **more):
    traj = traj if traj is not None else [
        {"action": "ls\n", "observation": "a.py\n", "response": "Look.\n```\nls\n```", "thought": "Look.", "state": "{\"open_file\": \"n/a\", \"working_dir\": \"/repo\"}"},
    ]
    doc = {"environment": "swe_main", "trajectory": traj,
           "history": [{"role": "system", "content": "sys", "agent": "primary"}, {"role": "user", "content": "Fix it.", "agent": "primary"}],
           "info": {"exit_status": status, "submission": "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n",
                    "model_stats": {"instance_cost": 0.5, "tokens_sent": 10, "tokens_received": 2, "api_calls": 1}}}
    doc.update(more)
    return doc


@pytest.mark.parametrize("status,state", [
    ("submitted", "Succeeded-or-gate"),
    ("submitted (exit_cost)", "FailedBudget"),
    ("exit_cost", "FailedBudget"),
    ("exit_context", "FailedBudget"),
    ("submitted (exit_context)", "FailedBudget"),
    ("exit_format", "FailedBlocked"),
    ("exit_error", "FailedBlocked"),
    ("exit_environment_error", "FailedBlocked"),
    ("exit_forfeit", "FailedUnverifiable"),
    (None, "FailedUnverifiable"),
])
def test_exit_status_maps_to_the_terminal_state(tmp_path, status, state):
    doc = _doc(status)
    if status is None:
        del doc["info"]["exit_status"]
    p = _write(tmp_path, doc)
    s = registry.read(p)
    cert = certify(str(p))
    if state == "Succeeded-or-gate":
        assert s.outcome.reached_end and s.outcome.claimed_success
        assert cert.state == "FailedUnverifiable" and "no holdout" in cert.reason  # no report.json beside it
    else:
        assert cert.state == state, (cert.state, cert.reason)
    if status is None:
        assert "swe-agent.no-exit-status" in {d.code for d in s.diagnostics}


def test_swebench_report_beside_the_run_is_the_gate(tmp_path):
    p = _write(tmp_path, _doc(), "inst-1.traj")
    report = {"inst-1": {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True, "resolved": False,
                         "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": ["t_new"]},
                                          "PASS_TO_PASS": {"success": ["t_old"], "failure": []}}}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    cert = certify(str(p))
    assert cert.gate["verdict"] != "Succeeded"
    assert {c["id"]: c["passed"] for c in cert.gate["holdout"]} == {"FAIL_TO_PASS::t_new": False, "PASS_TO_PASS::t_old": True}
    report["inst-1"]["resolved"] = True
    report["inst-1"]["tests_status"]["FAIL_TO_PASS"] = {"success": ["t_new"], "failure": []}
    (tmp_path / "report.json").write_text(json.dumps(report))
    cert = certify(str(p))
    assert cert.state == "Succeeded", cert.reason
    assert cert.gate["verdict"] == "Succeeded"
    # the harness gate can be turned off
    assert certify(str(p), CertifyOptions(harness_gate=False)).gate["verdict"] == "NotReady"


def test_blank_actions_are_steps_rendered_as_json_literals(tmp_path):
    traj = [{"action": "", "observation": "", "response": "", "thought": "nothing", "state": {}},
            {"action": "\n", "observation": None, "response": "", "thought": "", "state": {}},
            {"action": "ls", "observation": "x", "response": "", "thought": "", "state": {}}]
    s = registry.read(_write(tmp_path, _doc(traj=traj)))
    assert [st.action for st in s.steps] == ['""', '"\\n"', "ls"]
    assert [st.observation for st in s.steps] == ["", "", "x"]
    assert [st.thinking for st in s.steps] == ["nothing", None, None]


def test_retry_agent_reads_the_chosen_attempt(tmp_path):
    a0 = _doc(traj=[{"action": "ls", "observation": "1", "thought": "t0", "response": "", "state": {}}])
    a1 = _doc(traj=[{"action": "pwd", "observation": "2", "thought": "t1", "response": "", "state": {}},
                    {"action": "submit", "observation": "", "thought": "", "response": "", "state": {}}])
    p = _write(tmp_path, {"attempts": [a0, a1], "info": {"best_attempt_idx": 1}})
    s = registry.read(p)
    assert [st.action for st in s.steps] == ["pwd", "submit"]
    assert [e.id for e in s.events if e.type == "attempt"] == ["attempts[0]"]
    assert s.metadata["attempt_read"] == "attempts[1]"
    # without a usable best_attempt_idx: the last attempt, said so
    p = _write(tmp_path, {"attempts": [a1, a0], "info": {"best_attempt_idx": 7}}, "run-2.traj")
    s = registry.read(p)
    assert [st.action for st in s.steps] == ["ls"]
    assert "swe-agent.retry-attempt" in {d.code for d in s.diagnostics}


def test_replay_config_as_a_json_string(tmp_path):
    cfg = {"agent": {"model": {"name": "claude-x"}, "type": "default"}, "problem_statement": {"id": "inst-9"}}
    s = registry.read(_write(tmp_path, _doc(replay_config=json.dumps(cfg))))
    assert s.run.models == ["claude-x"] and s.run.instance_id == "inst-9" and s.run.agent == "default"


# ----------------------------------------------------------------- bad input


def _codes(s):
    return {d.code for d in s.diagnostics}


def test_truncated_file(tmp_path):
    text = json.dumps(_doc())
    s = registry.read(_write(tmp_path, text[: len(text) // 2]))
    assert s.format == "swe-agent" and not s.steps
    assert "json.invalid" in _codes(s)


def test_empty_file(tmp_path):
    s = registry.read(_write(tmp_path, ""))
    assert s.format == "swe-agent" and "file.empty" in _codes(s)


def test_not_an_object(tmp_path):
    s = registry.read(_write(tmp_path, [1, 2]))
    assert "swe-agent.not-an-object" in _codes(s) and s.events[0].raw == [1, 2]


def test_trajectory_not_a_list(tmp_path):
    s = registry.read(_write(tmp_path, _doc(traj={"action": "ls"})))
    d = next(d for d in s.diagnostics if d.code == "swe-agent.bad-trajectory")
    assert d.severity == "error" and d.event_id == "trajectory" and d.file.endswith("run-1.traj")
    assert not s.steps and any(e.id == "trajectory" and e.raw == {"action": "ls"} for e in s.events)


def test_wrong_types_inside(tmp_path):
    traj = ["not an entry", {"action": 5, "observation": {"out": 1}, "thought": None}, {"observation": "no action key"}]
    s = registry.read(_write(tmp_path, _doc(traj=traj, history="nope", info=["x"])))
    codes = _codes(s)
    assert {"swe-agent.bad-record", "swe-agent.bad-observation", "swe-agent.bad-history", "swe-agent.bad-info"} <= codes
    assert [st.action for st in s.steps] == ['"not an entry"', "5", "null"]
    assert s.steps[1].observation == '{"out": 1}'
    bad = next(d for d in s.diagnostics if d.code == "swe-agent.bad-record")
    assert bad.event_id == "trajectory[0]"


def test_neither_trajectory_nor_history(tmp_path):
    s = registry.read(_write(tmp_path, {"info": {"exit_status": "submitted"}}))
    assert "swe-agent.bad-trajectory" in _codes(s) and not s.steps


def test_detection_from_the_run_folder(tmp_path):
    (tmp_path / "d1").mkdir()
    p = _write(tmp_path / "d1", _doc(), "x.traj")
    det = registry.detect(p.parent)
    assert det.format.name == "swe-agent" and Path(det.match.root) == p
    _write(p.parent, _doc(), "y.traj")
    det = registry.detect(p.parent)
    assert det.format is None  # two runs: name one
    s = registry.read(p.parent, format="swe-agent")
    assert "swe-agent.several-trajs" in _codes(s)
    assert [Path(x).name for x in registry.get_format("swe-agent").find_sessions(p.parent)] == ["x.traj", "y.traj"]


def test_exports_keep_tool_calls_and_thinking(tmp_path):
    path = next(p for p in SAMPLES if p.name.startswith("6e44b9"))
    s = registry.read(path)
    res = convert(s, "atif", tmp_path)
    assert res.problems == []
    doc = json.loads(Path(res.outputs[0]).read_text())
    agent = [st for st in doc["steps"] if st.get("source") == "agent" and st.get("tool_calls")]
    ids = [tc["tool_call_id"] for st in agent for tc in st["tool_calls"]]
    assert ids == [st.extra["call_id"] for st in s.steps]
    thoughts = [st.get("reasoning_content") for st in agent]
    assert thoughts == [st.thinking for st in s.steps]


def test_seeded_damage_never_raises(tmp_path):
    src = next(p for p in SAMPLES if p.name == "pydicom__pydicom-1458.traj")
    data = src.read_bytes()
    for cut in range(0, len(data), max(1, len(data) // 40)):
        p = tmp_path / "cut.traj"
        p.write_bytes(data[:cut])
        s = registry.read(p, format="swe-agent", options=ReadOptions())
        assert s.format == "swe-agent"
    shutil.rmtree(tmp_path)


def test_harbor_trial_copy(tmp_path):
    """Harbor copies the .traj to agent/swe-agent.trajectory.json; its verifier is the gate, its exception the end signal."""
    t = tmp_path / "swe-task__AbC123"
    (t / "agent").mkdir(parents=True)
    src = next(p for p in SAMPLES if p.name == "swe-agent__test-repo-i1.traj")
    (t / "agent" / "swe-agent.trajectory.json").write_bytes(src.read_bytes())
    (t / "verifier").mkdir()
    (t / "verifier" / "reward.txt").write_text("1\n")
    (t / "result.json").write_text(json.dumps({"verifier_result": {"rewards": {"reward": 1.0}}}))
    for p in (t, t / "agent", t / "agent" / "swe-agent.trajectory.json", t / "result.json"):
        det = registry.detect(p)
        assert det.format.name == "swe-agent" and Path(det.match.root) == t / "agent" / "swe-agent.trajectory.json", p
    s = registry.read(t)
    assert s.id == t.name and len(s.steps) == len(reference_steps(src))
    cert = certify(str(t))
    assert cert.gate["verdict"] == "Succeeded" and cert.state == "Succeeded", cert.reason
    (t / "result.json").write_text(json.dumps({"exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "timeout"}}))
    assert certify(str(t)).state == "FailedBudget"
