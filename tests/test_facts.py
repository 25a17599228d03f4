"""The typed facts readers fill (ToolCall.op and its normalized arguments,
Event.edit / cwd / tools / model_usage, Session.outcome, Session.run), checked
against the native files read here by an independent route (plain
``json.load``), and on hostile input built from real corpus events.
"""

from __future__ import annotations

import copy
import json
import pickle
import shutil
from pathlib import Path

import pytest

from trajkit.certify import certify
from trajkit.model import (
    CODE_OP, CONTROL_OP, EDIT_OP, FINISH_OP, MESSAGE_OP, NO_EFFECT_OPS, OTHER_OP, READ_OP, SEARCH_OP, SHELL_OP, THINK_OP,
    TOOL_OPS, WRITE_OP, FileEdit, ToolCall, Usage,
)
from trajkit.registry import read
from trajkit.vocab import ToolSpec, ToolTable, classify
from trajkit.vocab.openhands import SDK_TOOLS, V0_TOOLS
from trajkit.vocab.opencode import OPENCODE_TOOLS

# ---------------------------------------------------------------- expected ops, written here from the harnesses' docs

#: OpenHands V0 action -> op (the str_replace_editor `edit` action depends on its command).
V0_OPS = {"run": SHELL_OP, "run_ipython": CODE_OP, "read": READ_OP, "write": WRITE_OP, "finish": FINISH_OP,
          "think": THINK_OP, "browse": "fetch", "browse_interactive": "fetch"}
#: OpenHands SDK action kind -> op.
SDK_OPS = {"TerminalAction": SHELL_OP, "ExecuteBashAction": SHELL_OP, "FinishAction": FINISH_OP, "ThinkAction": THINK_OP,
           "TaskTrackerAction": CONTROL_OP, "MessageAction": MESSAGE_OP}


def _editor_op(command: str | None) -> str:
    return {"view": READ_OP, "create": WRITE_OP}.get(command or "", EDIT_OP)


def _v0_files(corpus: Path) -> list[Path]:
    files = sorted((corpus / "openhands_v0" / "flat_exports").glob("*.json"))
    assert files
    return files


def _sdk_convs(corpus: Path) -> list[Path]:
    convs = sorted(p.parent for p in (corpus / "openhands_v1").rglob("base_state.json") if (p.parent / "events").is_dir())
    assert len(convs) >= 8
    return convs


# ---------------------------------------------------------------- ToolCall.op and its arguments


def test_v0_calls_are_described_by_the_v0_table(corpus):
    seen = 0
    for f in _v0_files(corpus) + [corpus / "openhands_v0" / "reconstructed_trials" / "vue-todo-app.1-of-1.killed-run"]:
        s = read(f)
        raws = {e["id"]: e for e in json.loads(f.read_text())} if f.is_file() else None
        for e in s.events:
            if e.kind != "action":
                continue
            raw = raws[e.id] if raws is not None else e.raw
            args = raw.get("args") or {}
            (call,) = e.tool_calls
            assert call.action == raw["action"] and call.input == args
            want = _editor_op(args.get("command")) if raw["action"] == "edit" else V0_OPS.get(raw["action"])
            assert call.op == want, (f, e.id)
            if want == SHELL_OP:
                assert call.command == args["command"]
            if raw["action"] in ("edit", "read"):
                assert call.path == args["path"]
            if raw["action"] == "edit" and args.get("command") == "create":
                assert call.content == args["file_text"]
            seen += 1
    assert seen >= 10


def test_sdk_calls_are_described_by_their_action(corpus):
    seen = set()
    for conv in _sdk_convs(corpus):
        files = sorted((conv / "events").glob("event-*.json"))
        natives = {d.get("id"): d for d in (json.loads(p.read_text()) for p in files) if isinstance(d, dict)}
        s = read(conv)
        for e in s.events:
            if e.type != "ActionEvent":
                continue
            raw = natives[e.id]
            (call,) = e.tool_calls
            act = raw.get("action")
            if isinstance(act, dict) and act:
                kind = act["kind"]
                assert call.action == kind and call.input == act
                want = _editor_op(act.get("command")) if kind == "FileEditorAction" else SDK_OPS.get(kind, OTHER_OP)
                assert call.op == want, (conv, e.id, kind)
                if want == SHELL_OP:
                    assert call.command == act["command"]
                if kind == "FileEditorAction":
                    assert call.path == act["path"]
                seen.add(kind)
            else:  # no executable action: the call's own tool name and arguments
                assert call.action == raw.get("tool_name")
                seen.add("no action")
    assert {"TerminalAction", "FinishAction"} <= seen


def test_rollout_calls_use_the_opencode_table(corpus):
    trace = corpus / "opencode" / "proxy_trace_synthetic.jsonl"
    written = {}
    for x in trace.read_text().splitlines():
        rec = json.loads(x) if x.strip() else {}
        for ch in ((rec.get("response") or {}).get("choices") or []):
            for tc in (ch.get("message") or {}).get("tool_calls") or []:
                written[tc["id"]] = tc["function"]
    s = read(trace)
    calls = [c for e in s.events for c in e.tool_calls]
    assert calls and len(calls) == len(written)
    for call in calls:
        fn = written[call.call_id]
        args = json.loads(fn["arguments"])
        assert call.name == fn["name"] == "bash" and call.op == SHELL_OP and call.command == args["command"]


def test_facts_leave_the_models_json_undecoded(corpus):
    """Describing a V0 call reads the executed args, not the model's JSON text: the lazy arguments stay lazy."""
    s = read(corpus / "openhands_v0" / "reconstructed_trials" / "vue-todo-app.1-of-1.killed-run")
    lazy = [c for e in s.events for c in e.tool_calls if object.__getattribute__(c, "_text") is not None]
    assert lazy
    assert all(c.op in TOOL_OPS for c in lazy)
    assert all(object.__getattribute__(c, "_text") is not None for c in lazy)
    text = object.__getattribute__(lazy[0], "_text")
    assert lazy[0].arguments == json.loads(text) and object.__getattribute__(lazy[0], "_text") is None


def test_the_tables_render_steps_as_before():
    assert V0_TOOLS.single_argument() == {"run": "command", "run_ipython": "code", "think": "thought"}
    assert SDK_TOOLS.single_argument() == {"terminal": "command", "think": "thought"}
    assert OPENCODE_TOOLS.single_argument() == {"bash": "command", "think": "thought"}


@pytest.mark.parametrize("name, args, op", [
    ("bash", {"command": "ls"}, SHELL_OP),
    ("Shell", {"command": ["ls", "-l"]}, SHELL_OP),
    ("anything", {"command": "make test"}, SHELL_OP),  # a command and no path: a shell line
    ("file_editor", {"command": "view", "path": "/w/a"}, READ_OP),
    ("file_editor", {"command": "str_replace", "path": "/w/a"}, EDIT_OP),
    ("Write", {"file_path": "/w/a", "content": "x"}, EDIT_OP),  # a name with "write" in it and a path: an edit
    ("glob", {"pattern": "*.py", "path": "/w"}, SEARCH_OP),
    ("ipython", {"code": "print(1)"}, CODE_OP),
    ("apply_patch", {"input": "*** Begin Patch\n*** Update File: a\n"}, "patch"),
    ("web", {"url": "https://example.com"}, "fetch"),
    ("submit", {}, FINISH_OP),
    ("todo", {"items": []}, OTHER_OP),
])
def test_undeclared_tools_are_classified_by_their_arguments(name, args, op):
    assert classify(name, args) == op
    call = ToolTable.of("h").call(name, args, "c1")
    assert call.op == op and call.action == name and call.input == args


def test_a_declared_op_whose_argument_is_missing_falls_back_to_the_arguments():
    t = ToolTable.of("h", ToolSpec("glob", SEARCH_OP), ToolSpec("bash", SHELL_OP))
    assert t.call("glob", {"pattern": "*.py"}, None).op == OTHER_OP  # no path: no listing of a known place
    bare = t.call("bash", {}, None)
    assert bare.op == SHELL_OP and bare.command == ""


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", 7, None, ["a"]])
def test_odd_arguments_never_raise(arguments):
    call = OPENCODE_TOOLS.call("bash", arguments, "c")
    assert call.op == SHELL_OP and isinstance(call.input, dict) and call.command == ""
    assert pickle.loads(pickle.dumps(call)).op == SHELL_OP


def test_equality_ignores_the_facts():
    assert ToolCall("run", {"command": "ls"}, "c") == V0_TOOLS.call("run", {"command": "ls"}, "c")


# ---------------------------------------------------------------- Event.edit, cwd, tools


def test_v0_edit_observations_carry_their_file_edit(corpus):
    seen = 0
    for f in _v0_files(corpus):
        raws = {e["id"]: e for e in json.loads(f.read_text())}
        for e in read(f).events:
            raw = raws.get(e.id, {})
            if raw.get("observation") == "edit":
                ex = raw["extras"]
                assert e.edit == FileEdit(ex["path"], ex.get("old_content"), ex.get("new_content"), ex.get("prev_exist"))
                seen += 1
            else:
                assert e.edit is None
    assert seen >= 1


def _check_sdk_edits(conv: Path) -> int:
    seen = 0
    natives = {d.get("id"): d for d in (json.loads(p.read_text()) for p in (conv / "events").glob("event-*.json")) if isinstance(d, dict)}
    for e in read(conv).events:
        obs = (natives.get(e.id) or {}).get("observation")
        obs = obs if isinstance(obs, dict) else {}
        changed = obs.get("kind") == "FileEditorObservation" and obs.get("command") not in (None, "view") and not obs.get("is_error")
        if changed:
            assert (e.edit.path, e.edit.old, e.edit.new, e.edit.existed) == (obs["path"], obs.get("old_content"), obs.get("new_content"), obs.get("prev_exist"))
            seen += 1
        else:
            assert e.edit is None
        wd = (obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}).get("working_dir")
        assert e.cwd == (wd if isinstance(wd, str) and wd.startswith("/") else None)
        if e.type == "SystemPromptEvent":
            assert e.tools == natives[e.id].get("tools")
    return seen


def test_sdk_file_editor_observations_carry_their_file_edit(corpus, tmp_path):
    for conv in _sdk_convs(corpus):
        _check_sdk_edits(conv)  # the corpus' editor observations are views: no edit
    from certify_shapes import WS, v1_run

    conv = v1_run(tmp_path / "run", [
        {"editor": "create", "path": f"{WS}/new.py", "file_text": "x = 1\n", "output": "File created"},
        {"editor": "str_replace", "path": f"{WS}/new.py", "old": "x = 1\n", "new": "x = 2\n", "output": "edited"},
        {"terminal": "ls", "output": "new.py", "cwd": WS},
    ])
    assert _check_sdk_edits(conv) == 2


# ---------------------------------------------------------------- Usage


def test_v0_usage_is_the_difference_of_running_totals(corpus, tmp_path):
    events = json.loads((corpus / "openhands_v0" / "flat_exports" / "basic_interactions.json").read_text())
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
    expected = {}
    for n, e in enumerate(x for x in events if x.get("action") and x.get("source") == "agent"):
        step = {"prompt_tokens": 100 * (n + 1), "completion_tokens": 7 + n, "cache_read_tokens": 3, "cache_write_tokens": 0}
        totals = {k: totals[k] + step[k] for k in totals}
        e["llm_metrics"] = {"accumulated_cost": 0.01 * (n + 1) * (n + 2) / 2, "accumulated_token_usage": dict(totals, model="m")}
        expected[e["id"]] = step
    assert len(expected) >= 2
    f = tmp_path / "with_metrics.json"
    f.write_text(json.dumps(events))
    s = read(f)
    got = {e.id: e.model_usage for e in s.events if e.model_usage is not None}
    assert set(got) == set(expected)
    for eid, step in expected.items():
        u = got[eid]
        assert (u.input, u.output, u.cache_read, u.cache_write) == (step["prompt_tokens"], step["completion_tokens"], 3, 0)
        assert u.source.startswith("llm_metrics") and u.model == "m"


def test_sdk_usage_comes_from_the_state_stats(corpus):
    n = 0
    for conv in _sdk_convs(corpus):
        state = json.loads((conv / "base_state.json").read_text())
        by_rid = {}
        for m in ((state.get("stats") or {}).get("usage_to_metrics") or {}).values():
            for tu in m.get("token_usages") or []:
                by_rid.setdefault(tu.get("response_id"), tu)
        for e in read(conv).events:
            if e.model_usage is not None:
                tu = by_rid[e.response_id]
                assert (e.model_usage.input, e.model_usage.output) == (tu["prompt_tokens"], tu["completion_tokens"])
                n += 1
    assert n >= 1


def test_usage_from_counts_reads_every_naming():
    assert Usage.from_counts({"prompt_tokens": 5, "completion_tokens": 2, "cache_read_tokens": 1}, "s") == Usage(5, 2, 1, source="s")
    u = Usage.from_counts({"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 3},
                           "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 13, "cost": 1}, "r")
    assert (u.input, u.output, u.cache_read, u.reasoning, u.total, u.cost) == (9, 4, 3, 2, 13, 1.0)
    assert Usage.from_counts({"prompt_tokens": True, "cost": "x"}, "s") == Usage(source="s")
    assert Usage.from_counts(None, "s") is None


# ---------------------------------------------------------------- Session.outcome and Session.run


def test_v0_outcome_and_run_come_from_the_trial_files(corpus):
    trial = corpus / "openhands_v0" / "reconstructed_trials" / "vue-todo-app.1-of-1.killed-run"
    results = json.loads((trial / "results.json").read_text())
    s = read(trial)
    assert s.outcome.budget_exhausted and s.outcome.status == results["failure_mode"]
    assert s.run.instance_id == results["task_id"] and s.run.trial_id == results["trial_name"]
    assert s.run.started_at == results["trial_started_at"] and s.run.ended_at == results["trial_ended_at"]
    assert s.run.result("terminal-bench").data == results and s.run.result("terminal-bench").path == str(trial / "results.json")
    assert s.run.default_workspace == "/workspace" and s.run.workspace is None


def test_sdk_outcome_and_run_come_from_the_state(corpus):
    for conv in _sdk_convs(corpus):
        state = json.loads((conv / "base_state.json").read_text())
        s = read(conv)
        assert s.outcome is not None
        if isinstance(state.get("execution_status"), str):
            assert s.outcome.status == state["execution_status"]
            assert s.outcome.reached_end == (state["execution_status"] == "finished")
        assert s.run.workspace == (state.get("workspace") or {}).get("working_dir")
        model = ((state.get("agent") or {}).get("llm") or {}).get("model")
        if model:
            assert s.run.models == [model]


def test_rollout_traces_record_no_end_signal(corpus):
    s = read(corpus / "opencode" / "proxy_trace_synthetic.jsonl")
    assert s.outcome is None  # the engine judges it from its events
    lines = [json.loads(x) for x in (corpus / "opencode" / "proxy_trace_synthetic.jsonl").read_text().splitlines() if x.strip()]
    assert s.run.models[0] == next(x["request"]["model"] for x in lines if isinstance(x.get("request"), dict) and "model" in x["request"])


def test_harbor_cost_and_verifier_are_run_facts(tmp_path, corpus):
    src = corpus / "openhands_v0" / "reconstructed_trials" / "game-2048-session.1-of-1.all-views"
    trial = tmp_path / "trial"
    shutil.copytree(src, trial / "agent")
    (trial / "agent" / "results.json").unlink()  # harbor only
    (trial / "verifier").mkdir()
    (trial / "verifier" / "reward.txt").write_text("1\n")
    result = {"task_name": "game-2048", "trial_name": "t1", "agent_result": {"cost_usd": 0.75}, "exception_info": None,
              "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:10:00Z"}
    (trial / "agent" / "result.json").write_text(json.dumps(result))
    s = read(trial / "agent")
    assert s.run.cost_usd == 0.75 and s.run.instance_id == "game-2048"
    assert s.run.trial_id == "t1" and (s.run.started_at, s.run.ended_at) == (result["started_at"], result["finished_at"])
    assert Path(s.run.verifier_dir).resolve() == (trial / "verifier").resolve()
    cert = certify(trial / "agent")
    assert cert.run["cost_usd"] == 0.75 and cert.gate["sources"]["holdout"]["kind"] == "harbor-verifier"


# ---------------------------------------------------------------- hostile input


def _v0_hostile(tmp_path: Path, corpus: Path) -> Path:
    events = json.loads((corpus / "openhands_v0" / "flat_exports" / "basic.json").read_text())
    obs = next(e for e in events if e.get("observation") == "edit")
    odd = []
    for i, change in enumerate([
        {"extras": {"path": 7, "old_content": ["x"], "new_content": {"y": 1}}},  # wrong types everywhere
        {"observation": "write", "extras": {"path": "/workspace/w.txt"}},  # a write without its content
        {"observation": "write", "extras": "not a dict"},
        {"extras": {"path": "/workspace/a.py", "old_content": None, "new_content": "b\n", "prev_exist": "yes"}},
    ]):
        e = copy.deepcopy(obs)
        e.update(change)
        e["id"] = 1000 + i
        odd.append(e)
    act = next(e for e in events if e.get("action") == "edit")
    bad_act = copy.deepcopy(act)
    bad_act.update({"id": 2000, "args": ["not", "a", "dict"]})
    out = tmp_path / "hostile.json"
    out.write_text(json.dumps(events + odd + [bad_act]))
    return out


def test_hostile_v0_edits_become_located_facts_not_crashes(tmp_path, corpus):
    s = read(_v0_hostile(tmp_path, corpus))
    by_id = {e.id: e for e in s.events}
    assert by_id[1000].edit == FileEdit(None, None, None, None)
    assert by_id[1001].edit == FileEdit("/workspace/w.txt", None, None, None, whole=True)
    assert by_id[1002].edit == FileEdit(None, whole=True)
    assert by_id[1003].edit == FileEdit("/workspace/a.py", None, "b\n", None)
    assert by_id[2000].tool_calls[0].input == {} and by_id[2000].tool_calls[0].op in TOOL_OPS
    cert = certify(tmp_path / "hostile.json")
    whys = {u.get("why") for u in cert.diff["unreconstructable"]} if "unreconstructable" in cert.diff else set()
    assert cert.state and ("write observation without content" in whys or not cert.diff.get("trustworthy", True))


def test_hostile_sdk_actions_are_described_without_raising(tmp_path, corpus):
    src = corpus / "openhands_v1" / "generated" / "localconv_condensation" / "0123456789abcdef0123456789abcdef"
    conv = tmp_path / src.name
    shutil.copytree(src, conv)
    files = sorted((conv / "events").glob("event-*.json"))
    term = next(p for p in files if (json.loads(p.read_text()).get("action") or {}).get("kind") == "TerminalAction")
    raw = json.loads(term.read_text())
    raw["action"] = "not a dict"
    raw["tool_call"]["arguments"] = "{cut"
    term.write_text(json.dumps(raw))
    s = read(conv)
    e = s.event_by_id(raw["id"])
    (call,) = e.tool_calls
    assert call.action == raw["tool_name"] and call.input == {"_raw": "{cut"}
    assert call.op == SHELL_OP and call.command == ""  # a terminal call without a command does nothing certify can see
    assert certify(conv).state


def test_no_effect_ops_are_the_documented_ones():
    assert NO_EFFECT_OPS == {THINK_OP, MESSAGE_OP, CONTROL_OP}
    assert set(TOOL_OPS) >= NO_EFFECT_OPS
