"""The mini-swe-agent reader (``mini-swe-agent``): steps as CodeTracer's
``miniswe`` rule counts them (extended to the ``mswea_bash_command`` fence),
computed here from the raw JSON; tool-calling and Responses-API runs; usage per
call; the SWE-bench report as certify's gate; bad input as located diagnostics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trajkit import registry
from trajkit.certify.gate import load_results
from trajkit.certify.pipeline import certify
from trajkit.export.convert import convert

from conftest import CORPUS, REPO

SAMPLES = sorted((CORPUS / "mini_swe_agent").rglob("*.traj.json"))
HAND = REPO / "tests" / "fixtures" / "mini_swe_agent"


def reference_steps(path: Path, fences=("bash", "mswea_bash_command")) -> list[tuple[str, str]]:
    """CodeTracer's miniswe rule, from the format note: an assistant message whose
    string content contains a fence marker is a step; its action is the first
    block's body stripped (else the whole content stripped); its observation the
    first later user message containing <returncode> (else empty). ``fences``
    ("bash",) is the unextended rule."""
    data = json.loads(path.read_text(encoding="utf-8"))
    msgs = data if isinstance(data, list) else data.get("messages")
    block = re.compile(r"```(?:" + "|".join(fences) + r")\s*\n(.*?)\n?```", re.DOTALL)
    out = []
    for i, m in enumerate(msgs):
        c = m.get("content")
        if m.get("role") != "assistant" or not isinstance(c, str) or not any("```" + f in c for f in fences):
            continue
        hit = block.search(c)
        action = hit.group(1).strip() if hit else c.strip()
        obs = next((m2["content"] for m2 in msgs[i + 1:] if m2.get("role") == "user" and isinstance(m2.get("content"), str)
                    and "<returncode>" in m2["content"]), "")
        out.append((action, obs))
    return out


def test_the_corpus_has_the_samples():
    assert len(SAMPLES) == 4, SAMPLES


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_steps_follow_the_reference_rule(path):
    s = registry.read(path)
    assert s.format == "mini-swe-agent"
    ref = reference_steps(path)
    assert [(st.action, st.observation) for st in s.steps] == ref
    assert s.metadata["step_rule"] == ["fence"]


def test_counts_named_in_the_format_note():
    counts = {p.name: len(registry.read(p).steps) for p in SAMPLES}
    assert counts == {"django__django-11163.traj.json": 13, "django__django-16255.traj.json": 17,
                      "local.traj.json": 2, "github_issue.traj.json": 10}
    # the unextended rule (```bash only) finds nothing in the list-form files: why the extension exists
    assert {p.name: len(reference_steps(p, ("bash",))) for p in SAMPLES if p.parent == CORPUS / "mini_swe_agent"} == {
        "local.traj.json": 0, "github_issue.traj.json": 0}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_expect_steps_on_the_cli(path, cli):
    n = len(reference_steps(path))
    assert cli("steps", path, "--expect-steps", n).returncode == 0
    assert cli("steps", path, "--expect-steps", n - 1).returncode == 1


def test_usage_per_call_from_the_provider_response():
    path = next(p for p in SAMPLES if p.name == "django__django-16255.traj.json")
    data = json.loads(path.read_text())
    s = registry.read(path)
    want = [m["extra"]["response"]["usage"] for m in data["messages"] if m["role"] == "assistant"]
    got = [st.model_usage for st in s.steps]
    assert [(u.input, u.output) for u in got] == [(w["prompt_tokens"], w["completion_tokens"]) for w in want]
    assert s.run.cost_usd == data["info"]["model_stats"]["instance_cost"]
    assert s.run.models == [data["info"]["config"]["model"]["model_name"]]
    # the provider's reasoning is the events' reasoning (ASF reasoning items, ATIF reasoning_content)
    reasons = [m["extra"]["response"]["choices"][0]["message"].get("reasoning") for m in data["messages"] if m["role"] == "assistant"]
    acts = [e for e in s.events if e.kind == "action"]
    assert [e.reasoning for e in acts] == [r if r and r.strip() else None for r in reasons]


def test_the_swebench_report_is_the_gate():
    path = next(p for p in SAMPLES if p.name == "django__django-11163.traj.json")
    report = json.loads((path.parents[2] / "logs" / "django__django-11163" / "report.json").read_text())
    ts = report["tests_status"]
    expected = {f"{g}::{t}": ok for g in ("FAIL_TO_PASS", "PASS_TO_PASS") for ok, key in ((True, "success"), (False, "failure")) for t in ts[g][key]}
    cert = certify(str(path))
    assert {c["id"]: c["passed"] for c in cert.gate["holdout"]} == expected
    assert cert.gate["verdict"] == "Succeeded" and report["resolved"] is True
    assert cert.engine["claimed_success"] and cert.engine["status"] == "Submitted"
    assert cert.diff["trustworthy"] and [f["path"] for f in cert.diff["files"]] == ["django/forms/models.py"]
    assert cert.state == "Succeeded", cert.reason
    # the same report given as --holdout reads the same way
    rs = load_results(path.parents[2] / "logs" / "django__django-11163" / "report.json")
    assert rs.kind == "swe-bench" and {c.id: c.passed for c in rs.checks} == expected


def test_an_unresolved_report_fails_the_gate(tmp_path):
    src = next(p for p in SAMPLES if p.name == "django__django-16255.traj.json")
    d = tmp_path / "trajs" / "django__django-16255"
    d.mkdir(parents=True)
    (d / src.name).write_bytes(src.read_bytes())
    logs = tmp_path / "logs" / "django__django-16255"
    logs.mkdir(parents=True)
    report = json.loads((src.parents[2] / "logs" / "django__django-16255" / "report.json").read_text())
    report["resolved"] = False
    report["tests_status"]["FAIL_TO_PASS"] = {"success": [], "failure": report["tests_status"]["FAIL_TO_PASS"]["success"]}
    (logs / "report.json").write_text(json.dumps({"django__django-16255": report}))  # the harness's keyed shape
    cert = certify(str(d / src.name))
    assert cert.state == "FailedUnverifiable" and cert.gate["verdict"] != "Succeeded"
    failed = [c["id"] for c in cert.gate["holdout"] if not c["passed"]]
    assert failed == [f"FAIL_TO_PASS::{t}" for t in report["tests_status"]["FAIL_TO_PASS"]["failure"]]


def test_list_form_outcome_from_the_completion_command():
    s = registry.read(CORPUS / "mini_swe_agent" / "github_issue.traj.json")
    assert s.outcome.reached_end and s.outcome.claimed_success
    cert = certify(str(CORPUS / "mini_swe_agent" / "github_issue.traj.json"))
    data = json.loads((CORPUS / "mini_swe_agent" / "github_issue.traj.json").read_text())
    named = [ln.split(" b/")[-1] for ln in data[-1]["content"].splitlines() if ln.startswith("diff --git ")]
    assert cert.diff["trustworthy"] and [f["path"] for f in cert.diff["files"]] == named


# ----------------------------------------------------------------- v2 and hand-made edge cases


def test_v2_tool_calling():
    path = HAND / "v2_tool_calling.traj.json"
    data = json.loads(path.read_text())
    s = registry.read(path)
    calls = [(tc["id"], json.loads(tc["function"]["arguments"])["command"]) for m in data["messages"] if m["role"] == "assistant" for tc in m["tool_calls"]]
    results = {m["tool_call_id"]: m["content"] for m in data["messages"] if m["role"] == "tool"}
    assert [(st.extra["call_id"], st.action) for st in s.steps] == calls
    assert [st.observation for st in s.steps] == [results.get(cid, "") for cid, _ in calls]
    assert s.metadata["step_rule"] == ["tool_calls"]
    # two calls of one response share a parallel group; usage and cost on the first
    assert s.steps[1].parallel_group == s.steps[2].parallel_group == "resp-2"
    costs = [m["extra"]["cost"] for m in data["messages"] if m["role"] == "assistant"]
    assert [st.model_usage.cost for st in s.steps if st.model_usage] == costs
    assert s.steps[0].model_usage.cache_read == 512
    assert s.outcome.claimed_success and s.run.cost_usd == data["info"]["model_stats"]["instance_cost"]


def test_v2_end_signal_in_the_final_message():
    s = registry.read(HAND / "v2_final_message_only.traj.json")
    assert s.outcome.reached_end and s.outcome.status == "Submitted"
    assert s.outcome.evidence[0]["event_id"] == f"messages[{len(s.events) - 2}]"
    final = [e for e in s.events if e.edit is not None]
    assert len(final) == 1 and final[0].edit.final and "diff --git a/calc.py" in final[0].edit.patch
    # no model_stats: the cost is the sum of the per-call costs
    data = json.loads((HAND / "v2_final_message_only.traj.json").read_text())
    assert s.run.cost_usd == pytest.approx(sum(m["extra"]["cost"] for m in data["messages"] if m["role"] == "assistant"))


def test_v2_responses_api():
    path = HAND / "v2_responses.traj.json"
    data = json.loads(path.read_text())
    s = registry.read(path)
    calls = [(it["call_id"], json.loads(it["arguments"])["command"]) for m in data["messages"] if m.get("object") == "response"
             for it in m["output"] if it["type"] == "function_call"]
    outs = {m["call_id"]: m["output"] for m in data["messages"] if m.get("type") == "function_call_output"}
    assert [(st.extra["call_id"], st.action) for st in s.steps] == calls
    assert [st.observation for st in s.steps] == [outs.get(c, "") for c, _ in calls]
    assert s.steps[0].thinking == "Read the file first."
    assert s.steps[0].model_usage.input == 700 and s.steps[0].model_usage.cost == 0.002
    cert = certify(str(path))
    assert cert.state == "FailedBudget"  # LimitsExceeded


def test_format_error_turns_follow_the_rule():
    path = HAND / "format_error.traj.json"
    s = registry.read(path)
    assert [(st.action, st.observation) for st in s.steps] == reference_steps(path)
    # a reply holding two blocks is a step (first block), one holding none is not; both skip to the same observation
    assert [st.action for st in s.steps] == ["ls", "cat calc.py", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"]
    assert s.steps[0].observation == s.steps[1].observation and s.steps[2].observation == ""
    assert s.steps[1].thinking == "THOUGHT: look."


def test_context_is_the_messages_before_each_assistant_message():
    fmt = registry.get_format("mini-swe-agent")
    for path in SAMPLES:
        data = json.loads(path.read_text())
        msgs = data if isinstance(data, list) else data["messages"]
        ctx = fmt.context(registry.read(path))
        idx = [k for k, m in enumerate(msgs) if m["role"] == "assistant"]
        assert [len(e["messages"]) for e in ctx] == idx
        for e, k in zip(ctx, idx):
            assert e["messages"] == [{kk: v for kk, v in m.items() if kk != "extra"} for m in msgs[:k]]


def test_exports_keep_usage_and_tool_calls(tmp_path):
    path = next(p for p in SAMPLES if p.name == "django__django-11163.traj.json")
    s = registry.read(path)
    res = convert(s, "atif", tmp_path)
    assert res.problems == []
    doc = json.loads(Path(res.outputs[0]).read_text())
    agent = [st for st in doc["steps"] if st.get("source") == "agent" and st.get("tool_calls")]
    assert len(agent) == len(s.steps)
    assert [st["metrics"]["prompt_tokens"] for st in agent] == [x.model_usage.input for x in s.steps]


# ----------------------------------------------------------------- bad input


def _write(tmp_path: Path, doc, name: str = "run.traj.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _codes(s):
    return {d.code for d in s.diagnostics}


def test_truncated_file(tmp_path):
    text = (HAND / "format_error.traj.json").read_text()
    s = registry.read(_write(tmp_path, text[: len(text) // 3]))
    assert s.format == "mini-swe-agent" and "json.invalid" in _codes(s) and not s.steps


def test_messages_not_a_list(tmp_path):
    s = registry.read(_write(tmp_path, {"info": {}, "messages": {"role": "user"}, "trajectory_format": "mini-swe-agent-1"}))
    d = next(d for d in s.diagnostics if d.code == "mini-swe-agent.bad-messages")
    assert d.severity == "error" and d.event_id == "messages" and not s.steps


def test_wrong_types_inside(tmp_path):
    doc = {"info": "x", "trajectory_format": "mini-swe-agent-1",
           "messages": [{"role": "system", "content": "s"}, 7, {"role": "user", "content": "task"},
                        {"role": "assistant", "content": ["not", "a", "string"]},
                        {"role": "assistant", "content": "```bash\nls\n```"}, {"role": "user"}]}
    s = registry.read(_write(tmp_path, doc))
    assert {"mini-swe-agent.bad-record", "mini-swe-agent.bad-info"} <= _codes(s)
    assert next(d for d in s.diagnostics if d.code == "mini-swe-agent.bad-record").event_id == "messages[1]"
    assert [(st.action, st.observation) for st in s.steps] == [("ls", "")]


def test_not_a_trajectory(tmp_path):
    s = registry.read(_write(tmp_path, 42))
    assert "mini-swe-agent.not-a-trajectory" in _codes(s)


def test_unknown_minor_version(tmp_path):
    doc = json.loads((HAND / "v2_tool_calling.traj.json").read_text())
    doc["trajectory_format"] = "mini-swe-agent-1.2"
    s = registry.read(_write(tmp_path, doc))
    assert "mini-swe-agent.unknown-version" in _codes(s) and len(s.steps) == 4


def test_detection_from_the_instance_folder(tmp_path):
    d = tmp_path / "inst"
    d.mkdir()
    p = _write(d, [{"role": "system", "content": "s"}], "inst.traj.json")
    det = registry.detect(d)
    assert det.format.name == "mini-swe-agent" and Path(det.match.root) == p
    _write(d, [{"role": "system", "content": "s"}], "other.traj.json")
    assert registry.detect(d).format is None
    assert "mini-swe-agent.several-trajs" in _codes(registry.read(d, format="mini-swe-agent"))


# ----------------------------------------------------------------- the terminal-bench layout (CodeTraceBench's mini-SWE rows)


def _tb_trial(tmp_path: Path, results: dict) -> Path:
    t = tmp_path / "fix-calc.1-of-1.run"
    (t / "agent-logs").mkdir(parents=True)
    (t / "agent-logs" / "mini.traj.json").write_bytes((HAND / "format_error.traj.json").read_bytes())
    (t / "results.json").write_text(json.dumps(results))
    (t / "sessions").mkdir()
    (t / "sessions" / "agent.log").write_text("```bash\nls\n```\n<returncode>0</returncode>\n")
    (t / "commands.txt").write_text("['ls', 'Enter']\n")
    return t


def test_terminal_bench_trial_is_one_run_from_any_path_inside(tmp_path):
    t = _tb_trial(tmp_path, {"instruction": "Fix add().", "failure_mode": "unset", "is_resolved": True,
                             "parser_results": {"test_add": "passed"}})
    for p in (t, t / "results.json", t / "agent-logs", t / "agent-logs" / "mini.traj.json", t / "sessions", t / "sessions" / "agent.log",
              t / "commands.txt"):
        det = registry.detect(p)
        assert det.format.name == "mini-swe-agent" and Path(det.match.root) == t, p
    s = registry.read(t)
    assert s.id == t.name and s.metadata["trial_root"] == str(t)
    assert [(st.action, st.observation) for st in s.steps] == reference_steps(t / "agent-logs" / "mini.traj.json")
    roles = {Path(f.path).name: (f.role, f.status) for f in s.files}
    assert roles["results.json"] == ("results", "read") and roles["sessions"][1] == roles["commands.txt"][1] == "unused"
    assert not [d for d in s.diagnostics if d.code == "read.unaccounted"]
    cert = certify(str(t))
    assert cert.gate["verdict"] == "Succeeded" and cert.state == "Succeeded", cert.reason


def test_terminal_bench_failure_mode_speaks_first(tmp_path):
    t = _tb_trial(tmp_path, {"instruction": "Fix add().", "failure_mode": "agent_timeout", "is_resolved": None})
    s = registry.read(t)
    assert s.outcome.budget_exhausted and s.outcome.status == "agent_timeout"
    assert certify(str(t)).state == "FailedBudget"


def test_ctb_row_matches_the_trial_name(tmp_path, cli):
    t = _tb_trial(tmp_path, {"instruction": "Fix add().", "failure_mode": "unset"})
    n = len(reference_steps(t / "agent-logs" / "mini.traj.json"))
    rows = [{"trial_name": t.name, "step_count": n, "incorrect_stages": [{"incorrect_step_ids": [1]}]},
            {"trial_name": "other", "step_count": 99}]
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    p = cli("steps", t, "--ctb-row", tmp_path / "rows.jsonl", "--json", check=True)
    assert json.loads(p.stdout)["steps"][0]["labels"] == ["incorrect"]


def test_ls_harness_lists_the_last_mini_run(tmp_path):
    """`mini` keeps its last run in its global config folder (MSWEA_GLOBAL_CONFIG_DIR, else ~/.config/mini-swe-agent)."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    cfg = home / ".config" / "mini-swe-agent"
    cfg.mkdir(parents=True)
    (cfg / "last_mini_run.traj.json").write_bytes((CORPUS / "mini_swe_agent" / "github_issue.traj.json").read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "MSWEA_GLOBAL_CONFIG_DIR"}
    env.update(HOME=str(home), COLUMNS="400")
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "mini-swe-agent", "--json"], capture_output=True,
                       text=True, env=env, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(Path(r["path"]).name, r["format"], r["id"]) for r in rows] == [("last_mini_run.traj.json", "mini-swe-agent", "last_mini_run")]
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "last_mini_run.traj.json").write_bytes((CORPUS / "mini_swe_agent" / "local.traj.json").read_bytes())
    env["MSWEA_GLOBAL_CONFIG_DIR"] = str(other)
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "mini-swe-agent", "--json"], capture_output=True,
                       text=True, env=env, cwd=REPO, timeout=300)
    assert [r["path"] for r in json.loads(p.stdout)] == [str(other / "last_mini_run.traj.json")]
