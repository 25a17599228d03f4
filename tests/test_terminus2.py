"""Terminus / Terminus-2 episode folders (format ``terminus2``, issue 10).

No episode folder is public under a usable licence, so the samples are the
synthetic trials shipped as the format's examples, written from
shared/formats/terminus2.md §9, plus the cases built below. Expected steps
come from :func:`reference_steps`, a few lines of plain ``json`` that apply
agent-eval's ``terminus2_commands`` rule as the note (§5) states it to the
raw files: it shares no code with the reader.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from trajkit import registry
from trajkit.export.convert import convert
from trajkit.model import ReadOptions

FIXTURES = Path(registry.__file__).resolve().parent / "formats" / "fixtures" / "terminus2"
TRIALS = sorted(p for sub in FIXTURES.iterdir() if sub.is_dir() for p in sub.iterdir() if p.is_dir())
BASIC = FIXTURES / "basic" / "hello-world.1-of-1.2025-09-02__10-00-00"
MIXED = FIXTURES / "mixed" / "fix-permissions.1-of-1.2025-09-02__10-00-00"
T1 = FIXTURES / "terminus1" / "count-lines.1-of-1.2025-09-02__10-00-00"


# ------------------------------------------------------------------ the reference rule, from the raw files

def reference_steps(trial: Path) -> list[dict]:
    """agent-eval's terminus2_commands rule (terminus2.md §5), on the files."""
    logs = trial / "agent-logs"
    eps = sorted((int(m.group(1)), d) for d in logs.iterdir() if d.is_dir() and (m := re.fullmatch(r"episode-(\d+)", d.name)))
    out = []
    for k, (n, d) in enumerate(eps):
        resp = d / "response.txt" if (d / "response.txt").exists() else d / "response.json"
        if not resp.is_file():
            continue
        try:
            doc = json.loads(resp.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("commands"), list) or not doc["commands"]:
            continue
        nxt = eps[k + 1][1] / "prompt.txt" if k + 1 < len(eps) else None
        obs = ""
        if nxt is not None and nxt.is_file():
            prompt = nxt.read_text(encoding="utf-8")
            i = prompt.find("New Terminal Output:")
            obs = (prompt[i + len("New Terminal Output:"):] if i >= 0 else prompt).strip()
        thought = "\n".join(v for v in (doc.get("analysis", doc.get("state_analysis")), doc.get("plan", doc.get("explanation"))) if isinstance(v, str) and v) or None
        for i, c in enumerate(doc["commands"]):
            if isinstance(c, dict):
                ks = c.get("keystrokes")
                action = ks if isinstance(ks, str) else json.dumps(c, ensure_ascii=False)
            elif isinstance(c, str):
                action = c
            else:
                action = json.dumps(c, ensure_ascii=False)
            if not action.strip():
                action = json.dumps(action)
            out.append({"action": action, "observation": obs if i == len(doc["commands"]) - 1 else "",
                        "thinking": thought if i == 0 else None, "parallel_group": n})
    return out


def _steps_cli(path: Path, *extra: str) -> dict:
    p = run_cli("steps", path, "--json", *extra)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("trial", TRIALS, ids=[t.parent.name for t in TRIALS])
def test_steps_equal_the_reference_rule(trial):
    got = _steps_cli(trial)
    assert got["format"] == "terminus2"
    want = reference_steps(trial)
    assert want, "every shipped sample has steps"
    assert [{k: s.get(k) for k in ("action", "observation", "thinking", "parallel_group")} for s in got["steps"]] == want
    assert [s["step_id"] for s in got["steps"]] == list(range(1, len(want) + 1))


def test_the_samples_cover_the_traps():
    """What the note's §9 asks the fixtures to hold is really there (checked on the files)."""
    names = [d.name for d in (MIXED / "agent-logs").iterdir()]
    assert "episode-10" in names and "episode-2" in names  # numeric, not lexical, order matters
    assert not (MIXED / "agent-logs" / "episode-6" / "response.txt").exists()  # a folder with no response
    basic = reference_steps(BASIC)
    assert [s["action"] for s in basic] == ["echo 'Hello, world!' > hello.txt\n", '""', "cat hello.txt\n"]  # a blank keystroke counts
    assert basic[1]["observation"].startswith("root@a1b2c3:/app# echo") and basic[2]["observation"]
    assert "[... output limited to 10000 bytes" in (MIXED / "agent-logs" / "episode-5" / "prompt.txt").read_text()
    assert (T1 / "agent-logs" / "episode-0" / "response.json").is_file()


def test_numeric_episode_order_and_expect_steps(cli, tmp_path):
    n = len(reference_steps(MIXED))
    assert cli("steps", MIXED, "--expect-steps", n).returncode == 0
    bad = cli("steps", MIXED, "--expect-steps", n + 1)
    assert bad.returncode == 1 and "step count mismatch" in bad.stderr
    groups = [s["parallel_group"] for s in _steps_cli(MIXED)["steps"]]
    assert groups == sorted(groups) and 11 in groups  # episode-11 after episode-9, not after episode-1


def test_ctb_row_checks_the_count_and_attaches_labels(cli, tmp_path):
    """A CodeTraceBench manifest row in the shape of the corpus's smoke-labels-terminus2.json."""
    n = len(reference_steps(MIXED))
    row = json.loads((Path(os.environ.get("TRAJKIT_SHARED", Path(__file__).resolve().parents[2] / "shared"))
                      / "corpus/openhands_v0/ctb_manifest_rows/smoke-labels-terminus2.json").read_text())[0]
    row.update(trial_name=MIXED.name, step_count=n, task_name="fix-permissions",
               incorrect_stages=[{"stage_id": 1, "incorrect_step_ids": [2], "unuseful_step_ids": [],
                                  "steps": [{"step_id": 2, "labels": ["incorrect"], "action_ref": None, "observation_ref": None}]}])
    f = tmp_path / "row.json"
    f.write_text(json.dumps(row))
    got = _steps_cli(MIXED, "--ctb-row", str(f))
    assert got["steps"][1].get("labels") == ["incorrect"] and not got["steps"][0].get("labels")
    row["step_count"] = n + 3
    f.write_text(json.dumps(row))
    assert cli("steps", MIXED, "--ctb-row", str(f)).returncode == 1


# ------------------------------------------------------------------ detection

def test_detected_over_the_v0_fallback_and_from_inside(tmp_path):
    """openhands-v0 claims a terminal-bench trial with no event stream (weakly);
    one with agent-logs/episode-N/ is a Terminus trial."""
    for p in (MIXED, MIXED / "results.json", MIXED / "panes" / "post-test.txt", MIXED / "sessions" / "agent.cast",
              MIXED / "agent-logs", MIXED / "agent-logs" / "episode-10" / "prompt.txt", MIXED / "agent-logs" / "episode-6"):
        det = registry.detect(p)
        assert det.format.name == "terminus2" and Path(det.match.root) == MIXED and not det.ambiguous, p
    # the same trial without its episode folders stays what it was
    bare = tmp_path / MIXED.name
    shutil.copytree(MIXED, bare)
    shutil.rmtree(bare / "agent-logs")
    assert registry.detect(bare).format.name == "openhands-v0"


def test_a_bare_folder_of_episodes(tmp_path):
    logs = tmp_path / "run"
    shutil.copytree(BASIC / "agent-logs", logs)
    s = registry.read(logs / "episode-1" / "response.txt")
    assert s.format == "terminus2" and Path(s.source_path) == logs
    assert [st.action for st in s.steps] == [x["action"] for x in reference_steps(_as_trial(logs, tmp_path))]
    assert s.outcome is not None and s.outcome.reached_end  # task_complete twice, no results.json


def _as_trial(logs: Path, tmp: Path) -> Path:
    t = tmp / "as-trial"
    shutil.copytree(logs, t / "agent-logs")
    return t


# ------------------------------------------------------------------ what the session holds

def test_lenient_commands_are_kept_but_not_counted():
    s = registry.read(MIXED)
    codes = {(d.code, Path(d.file).parent.name) for d in s.diagnostics if d.file}
    assert ("terminus2.commands-not-counted", "episode-1") in codes  # prose + a code fence around the JSON
    assert ("terminus2.commands-not-counted", "episode-5") in codes  # the XML variant
    assert [d.file for d in s.diagnostics if d.code == "terminus2.no-response"] == [str(MIXED / "agent-logs" / "episode-6")]
    ep1 = s.event_by_id("episode-1/response")
    assert [c.name for c in ep1.tool_calls] == ["bash_command"] and ep1.tool_calls[0].command == "cat /app/run.sh\n"
    ep5 = s.event_by_id("episode-5/response")
    assert ep5.tool_calls[0].arguments == {"keystrokes": "tail -n 5 /app/out.log\n", "duration": 0.1}
    assert s.metadata["uncounted_commands"] == [{"episode": 1, "commands": 1, "how": "the outermost JSON object in the text"},
                                                {"episode": 5, "commands": 1, "how": "the XML variant"}]
    # episode 2 lacked "plan": Terminus ran nothing, the benchmark counts it, and we say so
    assert any(d.code == "terminus2.not-executed" and "episode 2" in d.message for d in s.diagnostics)


def test_observation_event_answers_the_last_command():
    s = registry.read(BASIC)
    obs = s.event_by_id("episode-1/prompt")
    assert obs.kind == "observation" and obs.call_id == "call_0_2" and obs.cause == "episode-0/response"
    assert s.event_by_id("episode-0/prompt").kind == "message"
    first = s.event_by_id("episode-0/response")
    assert [c.call_id for c in first.tool_calls] == ["call_0_1", "call_0_2"]
    done = s.event_by_id("episode-2/response")
    assert [(c.name, c.op) for c in done.tool_calls] == [("mark_task_complete", "finish")]


def test_usage_per_call_from_debug_json():
    s = registry.read(BASIC)
    raw = json.loads((BASIC / "agent-logs" / "episode-1" / "debug.json").read_text())
    usage = json.loads(raw["original_response"])["usage"]
    u = s.event_by_id("episode-1/response").model_usage
    assert (u.input, u.output, u.cost) == (usage["input_tokens"], usage["output_tokens"], raw["response_cost"])
    assert s.event_by_id("episode-0/response").model_usage is None  # a request-only debug.json
    assert s.steps[2].model_usage is u and s.run.models == [raw["model"]]


def test_outcome_and_gate_from_results_json(cli):
    # a timeout in results.json decides, whatever the episodes say
    assert json.loads(cli("certify", T1, "--json").stdout)["state"] == "FailedBudget"
    basic = json.loads(cli("certify", BASIC, "--json").stdout)
    assert basic["engine"]["reached_end"] is True and basic["engine"]["claimed_success"] is True
    assert basic["gate"]["passed_holdout"] is True  # is_resolved / parser_results all passed
    # the agent wrote with the shell: without a workspace, no diff can vouch for it
    assert basic["state"] == "FailedUnverifiable" and "echo 'Hello, world!' > hello.txt" in basic["reason"]
    res = json.loads((MIXED / "results.json").read_text())
    cert = json.loads(cli("certify", MIXED, "--json").stdout)
    assert cert["engine"]["reached_end"] is True  # task_complete twice in a row
    assert {c["id"]: c["passed"] for c in cert["gate"]["holdout"]} == {k: v == "passed" for k, v in res["parser_results"].items()}
    assert cert["state"] != "Succeeded"


def test_exports_keep_every_command_usage_and_thinking(tmp_path):
    s = registry.read(MIXED)
    res = convert(s, "atif", tmp_path / "atif")
    assert res.problems == []
    doc = json.loads(res.outputs[0].read_text())
    calls = [tc for st in doc["steps"] for tc in st.get("tool_calls") or []]
    lenient = sum(len(e.tool_calls) for e in s.events if e.kind == "action")
    assert len(calls) == lenient > len(s.steps)
    assert sum(1 for c in calls if c["function_name"] == "mark_task_complete") == 2
    assert any(st.get("reasoning_content") == "Nothing has run yet; I need to see the files in /app.\nList /app with permissions." for st in doc["steps"])
    assert any((st.get("metrics") or {}).get("prompt_tokens") == 9120 for st in doc["steps"])
    res = convert(s, "asf", tmp_path / "asf")
    assert res.problems == [] and res.report["unaccounted"] == []
    lines = [json.loads(x) for x in res.outputs[0].read_text().splitlines()]
    assert sum(1 for x in lines if (x.get("item") or {}).get("type") == "function_call") == lenient


def test_context_is_the_chat_history_and_checks_against_debug_json(cli, tmp_path):
    p = cli("context", MIXED, "--json")
    entries = json.loads(p.stdout)
    eps = sorted((int(d.name.split("-")[1]), d) for d in (MIXED / "agent-logs").iterdir())
    want, hist = [], []
    for n, d in eps:
        hist.append({"role": "user", "content": (d / "prompt.txt").read_text()})
        if (d / "response.txt").exists():
            want.append(list(hist))
            hist.append({"role": "assistant", "content": (d / "response.txt").read_text()})
    assert [e["messages"] for e in entries] == want
    assert cli("context", MIXED, "--check").returncode == 0
    t = tmp_path / MIXED.name
    shutil.copytree(MIXED, t)
    dbg = t / "agent-logs" / "episode-11" / "debug.json"
    d = json.loads(dbg.read_text())
    d["messages"][0]["content"] = "a summary the harness wrote instead"
    dbg.write_text(json.dumps(d))
    bad = cli("context", t, "--check")
    assert bad.returncode == 1 and "message 0" in bad.stderr


# ------------------------------------------------------------------ bad input: located diagnostics, never a crash

def _damaged(tmp_path: Path, edit) -> tuple:
    t = tmp_path / BASIC.name
    shutil.copytree(BASIC, t)
    edit(t / "agent-logs")
    s = registry.read(t)
    assert s.format == "terminus2" and not [d for d in s.diagnostics if d.code == "read.format-failed"]
    return s, t


def _codes(s) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in s.diagnostics:
        out.setdefault(d.code, []).append(d.file or "")
    return out


def test_truncated_response(tmp_path):
    def cut(logs):
        f = logs / "episode-0" / "response.txt"
        f.write_text(f.read_text()[:120])
    s, t = _damaged(tmp_path, cut)
    assert _codes(s)["terminus2.response-not-json"] == [str(t / "agent-logs" / "episode-0" / "response.txt")]
    assert [st.action for st in s.steps] == [x["action"] for x in reference_steps(t)] == ["cat hello.txt\n"]


def test_missing_keys_and_wrong_types(tmp_path):
    def edit(logs):
        (logs / "episode-0" / "response.txt").write_text(json.dumps({"analysis": "no commands key"}))
        (logs / "episode-1" / "response.txt").write_text(json.dumps({"analysis": 3, "plan": None, "commands": {"keystrokes": "ls\n"}}))
        (logs / "episode-2" / "response.txt").write_text(json.dumps({"commands": [None, 7, {"duration": 1}, ""], "task_complete": "yes"}))
    s, t = _damaged(tmp_path, edit)
    c = _codes(s)
    assert len(c["terminus2.commands-not-list"]) == 2 and len(c["terminus2.bad-command"]) == 3
    assert [st.action for st in s.steps] == [x["action"] for x in reference_steps(t)] == ["null", "7", '{"duration": 1}', '""']
    assert s.steps[0].thinking is None


def test_episode_without_response_or_prompt_and_gaps(tmp_path):
    def edit(logs):
        (logs / "episode-1" / "response.txt").unlink()
        (logs / "episode-2" / "prompt.txt").unlink()
        (logs / "episode-2").rename(logs / "episode-5")
        (logs / "episode-7").mkdir()
        (logs / "notes.md").write_text("stray")
    s, t = _damaged(tmp_path, edit)
    c = _codes(s)
    assert c["terminus2.no-response"] == [str(t / "agent-logs" / "episode-1"), str(t / "agent-logs" / "episode-7")]
    assert c["terminus2.no-prompt"] == [str(t / "agent-logs" / "episode-5"), str(t / "agent-logs" / "episode-7")]
    assert "terminus2.episode-gap" in c and c["terminus2.unknown-file"] == [str(t / "agent-logs" / "notes.md")]
    assert [(st.action, st.observation) for st in s.steps] == [(x["action"], x["observation"]) for x in reference_steps(t)]


def test_unreadable_and_odd_files(tmp_path):
    def edit(logs):
        (logs / "episode-0" / "prompt.txt").write_bytes(b"New Terminal Output:\n\xff\xfe bad bytes\n")
        (logs / "episode-1" / "debug.json").write_text('{"model": "x", "messages": [')
        (logs.parent / "results.json").write_text("[1, 2")
        (logs / "episode-2" / "response.txt").unlink()
        (logs / "episode-2" / "response.txt").mkdir()
        if hasattr(os, "mkfifo"):
            (logs / "episode-1" / "prompt.txt").unlink()
            os.mkfifo(logs / "episode-1" / "prompt.txt")
    s, t = _damaged(tmp_path, edit)
    c = _codes(s)
    assert c["terminus2.not-utf8"] == [str(t / "agent-logs" / "episode-0" / "prompt.txt")]
    assert str(t / "agent-logs" / "episode-1" / "debug.json") in c["json.invalid"]
    assert str(t / "results.json") in c["json.invalid"]
    assert str(t / "agent-logs" / "episode-2") in c["terminus2.no-response"]
    if hasattr(os, "mkfifo"):
        assert c["file.unreadable"] == [str(t / "agent-logs" / "episode-1" / "prompt.txt")]
    assert s.run.results == [] and s.outcome is not None


def test_no_episodes_at_all(tmp_path):
    t = tmp_path / "trial"
    (t / "agent-logs" / "episode-0").mkdir(parents=True)
    (t / "agent-logs" / "episode-0" / "response.txt").write_text("{}")
    s = registry.read(t, format="terminus2")
    assert s.steps == [] and "terminus2.commands-not-list" in _codes(s)
    shutil.rmtree(t / "agent-logs" / "episode-0")
    s = registry.read(t, format="terminus2")
    assert _codes(s)["terminus2.no-episodes"] == [str(t / "agent-logs")]
    s = registry.read(tmp_path / "nope", format="terminus2", options=ReadOptions())
    assert "terminus2.not-a-trial" in _codes(s)
