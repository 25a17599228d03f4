"""The claude-code format over every shared sample (issue 11).

Expected values come from the raw lines by an independent route: a few
lines of plain ``json`` below implementing the rules of
``shared/formats/claude-code.md`` (§4 traps 1-2, §5), never trajkit's reader.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trajkit import registry
from trajkit.export.convert import convert
from trajkit.model import BRANCH_ABANDONED, CONDENSATION, ReadOptions

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus" / "claude_code"
CORPUS = CORPUS.resolve()
LOG = CORPUS / "iansherr+claude-code-log" / "test" / "test_data"
REAL = LOG / "real_projects"
ATIF_MAKE = CORPUS / "pypi+atif-make-0.10.0" / "tests" / "fixtures"
TRIALS = CORPUS / "NJU-LINK+CodeTracer" / "data" / "traj" / "kimi_k2.5"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside the checkout")


def _samples() -> list[Path]:
    out = sorted(p for p in CORPUS.rglob("*.jsonl") if p.name != "journal.jsonl")
    out += sorted(CORPUS.rglob("claude-code.txt"))
    return out


# ------------------------------------------------------------ the reference rule, in plain json


def _rows(path: Path) -> list[dict]:
    rows = []
    for line in path.read_bytes().split(b"\n"):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            rows.append(v)
    return rows


def _is_stream(rows: list[dict]) -> bool:
    return any(r.get("type") == "system" and r.get("subtype") == "init" for r in rows) or any(
        "session_id" in r or "parent_tool_use_id" in r for r in rows if r.get("type") in ("user", "assistant"))


def reference(path: Path) -> tuple[int, dict[str, dict]]:
    """(tool_use count, {response id: usage}) of one file by the note's rule:
    one step per tool_use block of the file's own assistant rows (inline
    sidechain rows belong to a sub-agent; a resumed file's repeated uuids
    count once); one usage per message.id (fallback requestId, then uuid)
    with input = input + cache_read + cache_creation and output = the
    largest output_tokens of its rows, unless a row has a stop_reason."""
    rows = _rows(path)
    stream = _is_stream(rows)
    conv = [r for r in rows if r.get("type") in ("user", "assistant")]
    whole_side = bool(conv) and all(r.get("isSidechain") is True for r in conv)
    seen: set[str] = set()
    calls = 0
    groups: dict[str, list[dict]] = {}
    for i, r in enumerate(rows):
        if r.get("type") != "assistant":
            continue
        if r.get("isSidechain") is True and not whole_side:
            continue
        if stream and isinstance(r.get("parent_tool_use_id"), str):
            continue
        u = r.get("uuid")
        if not stream and isinstance(u, str):
            if u in seen:
                continue
            seen.add(u)
        msg = r.get("message") if isinstance(r.get("message"), dict) else {}
        content = msg.get("content")
        if isinstance(content, list):
            calls += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
        rid = msg.get("id") or r.get("requestId") or u or f"(row {i})"  # no id at all: the row alone
        groups.setdefault(rid, []).append(msg)
    usage = {}
    for rid, msgs in groups.items():
        with_usage = [m for m in msgs if isinstance(m.get("usage"), dict)]
        if not with_usage:
            continue
        stopped = [m for m in with_usage if isinstance(m.get("stop_reason"), str)]
        u = (stopped or with_usage)[0]["usage"]
        inp = (u.get("input_tokens") or 0) + (u.get("cache_read_input_tokens") or 0) + (u.get("cache_creation_input_tokens") or 0)
        out = u.get("output_tokens") if stopped else max(m["usage"].get("output_tokens") or 0 for m in with_usage)
        usage[rid] = {"input": inp, "output": out, "cache_read": u.get("cache_read_input_tokens"), "lower_bound": not stopped}
    return calls, usage


def _read_file(path: Path):
    return registry.read(path, format="claude-code")


@pytest.mark.parametrize("path", _samples(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_steps_and_usage_equal_the_reference(path):
    s = _read_file(path)
    calls, usage = reference(path)
    assert len(s.steps) == calls
    got = {}
    for e in s.events:
        u = e.model_usage
        if u is not None:
            assert e.response_id not in got, f"usage counted twice for {e.response_id}"
            got[e.response_id] = {"input": u.input, "output": u.output, "cache_read": u.cache_read, "lower_bound": u.output_lower_bound}
    named = {k for k in usage if not k.startswith("(row ")}
    assert named <= set(got)
    assert {k: got[k] for k in named} == {k: usage[k] for k in named}
    assert sorted(map(repr, got.values())) == sorted(map(repr, usage.values()))


@pytest.mark.parametrize("path", _samples() + [TRIALS / "polyglot-rust-c__s3NDv6x", LOG / "workflow_basic"],
                         ids=lambda p: str(p.relative_to(CORPUS)))
def test_exports_validate_and_account_for_every_row(path, tmp_path):
    """ASF verifies and round-trips, ATIF validates (Harbor's atif, when
    installed), and the loss report places every row of every file."""
    s = registry.read(path) if path.is_dir() else _read_file(path)
    for target in ("asf", "atif"):
        res = convert(s, target, tmp_path / target)
        assert res.problems == [] and res.report["unaccounted"] == [], res.problems
    placed = {(r["session"], repr(r["event_id"])) for r in res.report["events"]}
    for x in s.walk():
        for e in x.events:
            assert (x.id, repr(e.id)) in placed


# the note's published table (§5): rows / assistant rows / distinct ids / tool_use
NOTE_TABLE = [
    (REAL / "-src-experiments-claude_p" / "256ba646-2c15-437a-98e9-4171aafd030e.jsonl", 4, 3),
    (REAL / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl", 2, 1),
    (REAL / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20" / "subagents" / "agent-a2271d1.jsonl", 10, 24),
    (REAL / "-src-experiments-claude_p" / "2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl", 10, 9),
    (REAL / "-src-experiments-claude_p" / "94604a7b-062f-4369-bdf0-da948381c3e5.jsonl", 1, 0),
    (REAL / "-experiments-ideas" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl", 9, 2),
    (REAL / "-experiments-ideas" / "a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl", 0, 0),
    (ATIF_MAKE / "claude-code-transcript.jsonl", 2, 1),
    (ATIF_MAKE / "claude-code-stream.jsonl", 2, 3),
    (TRIALS / "qemu-startup__8shUpSy" / "agent" / "claude-code.txt", 4, 3),
]


@pytest.mark.parametrize("path,ids,calls", NOTE_TABLE, ids=lambda x: x.name if isinstance(x, Path) else str(x))
def test_the_notes_counts(path, ids, calls):
    s = _read_file(path)
    assert len({e.response_id for e in s.events if e.role == "assistant"}) == ids
    assert len(s.steps) == calls


def test_atif_keeps_one_agent_step_per_model_response(tmp_path):
    atif = pytest.importorskip("atif")
    s = registry.read(REAL / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl")
    res = convert(s, "atif", tmp_path)
    assert res.problems == []
    doc = json.loads(res.outputs[0].read_text())
    atif.Trajectory.model_validate(doc)
    sub = doc["subagent_trajectories"]
    assert len(sub) == 1
    path = REAL / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20" / "subagents" / "agent-a2271d1.jsonl"
    ids = {r["message"]["id"] for r in _rows(path) if r.get("type") == "assistant"}
    agent_steps = [st for st in sub[0]["steps"] if st["source"] == "agent"]
    assert len(agent_steps) == len(ids) == 10
    # every call of a response sits on that response's one step
    assert sum(len(st.get("tool_calls") or []) for st in agent_steps) == 24
    # and the usage of a response is counted once
    _calls, usage = reference(path)
    assert sub[0]["final_metrics"]["total_completion_tokens"] == sum(u["output"] for u in usage.values())


def test_stream_json_interleaved_response_is_one_atif_step(tmp_path):
    pytest.importorskip("atif")
    s = _read_file(ATIF_MAKE / "claude-code-stream.jsonl")
    res = convert(s, "atif", tmp_path)
    assert res.problems == []
    doc = json.loads(res.outputs[0].read_text())
    agent = [st for st in doc["steps"] if st["source"] == "agent"]
    assert len(agent) == 2
    by_call = {r["source_call_id"]: r["content"] for r in agent[0]["observation"]["results"]}
    assert by_call == {"c_slow": "SLOW", "c_f1": "F1", "c_f2": "F2"}  # paired by id, never by position
    assert s.metadata["model_usage_totals"] == {"claude-opus-4-5": {"inputTokens": 100, "outputTokens": 37, "cacheReadInputTokens": 10}}
    assert s.outcome is not None and s.outcome.reached_end and s.outcome.claimed_success and s.outcome.status == "success"
    assert s.run.cost_usd == 0.01
    assert "claude-code.response-regrouped" in {d.code for d in s.diagnostics}


def test_reused_tool_ids_stay_apart():
    """kimi-k2.5 behind Claude Code reuses functions.Bash:0 in a retried
    response: the result answers the latest earlier call of that id."""
    path = TRIALS / "polyglot-rust-c__s3NDv6x" / "agent" / "claude-code.txt"
    s = _read_file(path)
    calls = [tc for e in s.events for tc in e.tool_calls]
    assert [tc.call_id for tc in calls] == ["functions.Bash:0", "functions.Bash:0#2"]
    assert [st.extra.get("unanswered", False) for st in s.steps] == [True, False]
    assert s.steps[1].observation == "(Bash completed with no output)"
    obs = [e for e in s.events if e.kind == "observation"]
    assert obs[0].extra["native_call_id"] == "functions.Bash:0"


def test_killed_trial_outcome_comes_from_result_json():
    s = registry.read(TRIALS / "polyglot-rust-c__s3NDv6x")
    assert s.format == "claude-code" and s.run.trial_id == "polyglot-rust-c__s3NDv6x"
    assert s.outcome is not None and not s.outcome.reached_end and s.outcome.budget_exhausted
    assert s.run.results and s.run.results[0].kind == "harbor"


# ------------------------------------------------------------ sub-agents


def _children(s):
    return {c.id: c for c in s.walk() if c is not s}


def test_subagent_linked_by_tool_use_result_agent_id():
    s = registry.read(REAL / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20" / "subagents" / "agent-a2271d1.jsonl")
    assert s.id == "29ccd257-68b1-427f-ae5f-6524b7cb6f20"  # a path inside the session reads the session
    (child,) = s.children
    assert child.id == "a2271d1" and child.spawned_by.method == "toolUseResult.agentId"
    task = next(r for r in _rows(Path(s.source_path)) if r.get("type") == "user" and isinstance(r.get("toolUseResult"), dict))
    assert len(child.steps) == task["toolUseResult"]["totalToolUseCount"] == 24
    assert s.steps[child.spawned_by.step_id - 1].children == [child]


def test_nested_subagents_linked_by_sidecars(tmp_path):
    s = registry.read(ATIF_MAKE / "claude-code-transcript.jsonl")
    kids = _children(s)
    assert set(kids) == {"abc123", "def456"}
    assert kids["abc123"] in s.children and kids["def456"] in kids["abc123"].children  # parentAgentId
    metas = {p.stem.split(".")[0][6:]: json.loads(p.read_text()) for p in (ATIF_MAKE / "claude-code-transcript" / "subagents").glob("*.meta.json")}
    for aid, c in kids.items():
        host = s if aid == "abc123" else kids["abc123"]
        st = host.steps[c.spawned_by.step_id - 1]
        assert st.extra["call_id"] == metas[aid]["toolUseId"]


def test_workflow_agents_linked_by_run_id():
    s = registry.read(LOG / "workflow_basic")
    wf = next(st for st in s.steps if st.tool_type == "Workflow")
    assert {c.id for c in wf.children} == {"ag000001", "ag000002", "ag000003"}
    journal = [json.loads(x) for x in (LOG / "workflow_basic" / "11110000-0000-4000-8000-000000000001" / "subagents" / "workflows" / "wf_demo01" / "journal.jsonl").read_text().splitlines() if x.strip()]
    results = {j["agentId"]: j["result"] for j in journal if j["type"] == "result"}
    assert {c.id: c.metadata["workflow_result"] for c in wf.children} == results


def test_teammates_and_async_agents_linked():
    s = registry.read(LOG / "teammates")
    kids = _children(s)
    assert kids["aaaa111111111111"].spawned_by.method == "toolUseResult.agentId"
    assert kids["bbbb222222222222"].spawned_by.method == "prompt"  # bob's spawn has no agentId
    a = registry.read(LOG / "async_agents")
    (child,) = a.children
    assert child.spawned_by is not None and child.id == "cccc333"


def test_project_level_agent_files_are_linked_not_orphaned(tmp_path):
    """The 2.0.x layout: agent-<id>.jsonl beside the session (claude-code-log places the pair so)."""
    main_rows = _rows(LOG / "dedup_main.jsonl")
    sid = main_rows[0]["sessionId"]
    proj = tmp_path / "-proj"
    proj.mkdir()
    shutil.copy(LOG / "dedup_main.jsonl", proj / f"{sid}.jsonl")
    shutil.copy(LOG / "dedup_agent.jsonl", proj / "agent-e1c84ba5.jsonl")
    for p in (proj / f"{sid}.jsonl", proj / "agent-e1c84ba5.jsonl", proj):
        s = registry.read(p)
        assert Path(s.source_path).name == f"{sid}.jsonl"
        (child,) = s.children
        assert child.id == "e1c84ba5" and child.spawned_by is not None
        assert len(child.steps) == reference(LOG / "dedup_agent.jsonl")[0]


def test_stream_json_subagent_rows_become_the_spawned_session(tmp_path):
    rows = [
        {"type": "system", "subtype": "init", "session_id": "s1", "claude_code_version": "2.1.90", "model": "m"},
        {"type": "assistant", "session_id": "s1", "parent_tool_use_id": None, "message": {"id": "r1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}], "usage": {"input_tokens": 5, "output_tokens": 2}}},
        {"type": "assistant", "session_id": "s1", "parent_tool_use_id": "t1", "message": {"id": "r2", "role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}]}},
        {"type": "user", "session_id": "s1", "parent_tool_use_id": "t1", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "a b"}]}},
        {"type": "user", "session_id": "s1", "parent_tool_use_id": None, "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "found"}]}},
        {"type": "result", "subtype": "success", "session_id": "s1", "total_cost_usd": 0.5, "result": "ok"},
    ]
    p = tmp_path / "out.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = registry.read(p)
    assert [st.action for st in s.steps] == ['Task({"prompt": "look"})']
    (child,) = s.children
    assert child.spawned_by.method == "parent_tool_use_id" and [st.action for st in child.steps] == ["ls"]
    for target in ("asf", "atif"):
        res = convert(s, target, tmp_path / target)
        assert res.problems == [] and res.report["unaccounted"] == []


# ------------------------------------------------------------ the row tree


def test_fork_keeps_the_last_written_branch_active():
    s = _read_file(LOG / "dag_fork.jsonl")
    rows = [r for r in _rows(LOG / "dag_fork.jsonl") if "uuid" in r]
    by = {r["uuid"]: r for r in rows}
    path, cur = [], rows[-1]["uuid"]
    while cur in by:
        path.append(cur)
        cur = by[cur].get("parentUuid")
    active = {e.id for e in s.events if e.branch == "active"}
    assert active == set(path)
    assert {e.id for e in s.events if e.branch == BRANCH_ABANDONED} == set(by) - set(path)
    assert s.metadata["leaf_event_id"] == rows[-1]["uuid"]


def test_resume_across_session_ids_is_one_branch():
    s = _read_file(LOG / "dag_resume.jsonl")
    assert all(e.branch == "active" for e in s.events)
    assert len({r.get("sessionId") for r in _rows(LOG / "dag_resume.jsonl")}) > 1


def _compaction_rows(trigger: str = "auto") -> list[dict]:
    base = {"sessionId": "c1", "version": "2.1.42", "cwd": "/w", "isSidechain": False, "userType": "external"}
    return [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "fix it"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-01T00:00:01Z", "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 4}}},
        {**base, "type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": "2026-01-01T00:00:02Z", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "error"}]}},
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None, "logicalParentUuid": "r1", "content": "Conversation compacted", "level": "info", "timestamp": "2026-01-01T00:00:03Z", "compactMetadata": {"trigger": trigger, "preTokens": 1234}},
        {**base, "type": "user", "uuid": "cs", "parentUuid": "cb", "isCompactSummary": True, "isVisibleInTranscriptOnly": True, "timestamp": "2026-01-01T00:00:03Z", "message": {"role": "user", "content": "This session is being continued from a previous conversation: make failed."}},
        {**base, "type": "assistant", "uuid": "a2", "parentUuid": "cs", "timestamp": "2026-01-01T00:00:04Z", "message": {"id": "m2", "role": "assistant", "model": "claude-x", "content": [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/w/Makefile", "old_string": "a", "new_string": "b"}}], "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 6}}},
        {**base, "type": "user", "uuid": "r2", "parentUuid": "a2", "timestamp": "2026-01-01T00:00:05Z", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}},
        {**base, "type": "assistant", "uuid": "a3", "parentUuid": "r2", "timestamp": "2026-01-01T00:00:06Z", "message": {"id": "m3", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "Fixed."}], "stop_reason": "end_turn", "usage": {"input_tokens": 30, "output_tokens": 2}}},
    ]


@pytest.mark.parametrize("trigger", ["auto", "manual"])
def test_compaction_rejoins_the_branch_and_exports_a_compaction(tmp_path, trigger):
    p = tmp_path / "c1.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in _compaction_rows(trigger)))
    s = registry.read(p)
    assert all(e.branch == "active" for e in s.events)
    (cond,) = [e for e in s.events if e.kind == CONDENSATION]
    assert cond.text.startswith("This session is being continued") and cond.extra["compact"] == {"trigger": trigger, "preTokens": 1234}
    assert [st.action for st in s.steps] == ["make", 'Edit({"file_path": "/w/Makefile", "old_string": "a", "new_string": "b"})']
    assert s.task == "fix it"  # the summary row is no prompt
    assert s.outcome.reached_end and s.outcome.status == "end_turn"
    res = convert(s, "asf", tmp_path / "asf")
    assert res.problems == []
    entries = [json.loads(x) for x in res.outputs[0].read_text().splitlines()[1:]]
    (comp,) = [e for e in entries if e["type"] == "compaction"]
    assert "make failed" in comp["summary"]["content"][0]["text"]
    ctx = registry.get_format("claude-code").context(s)
    assert [c["llm_response_id"] for c in ctx] == ["m1", "m2", "m3"]
    assert ctx[1]["messages"][0]["content"].startswith("This session is being continued")  # history restarts at the summary
    assert "system prompt" in ctx[0]["missing"]


def test_microcompact_boundary_is_kept_as_state(tmp_path):
    rows = _compaction_rows()[:3] + [{"type": "system", "subtype": "microcompact_boundary", "uuid": "mc", "parentUuid": "r1", "sessionId": "c1", "content": "cleared", "microcompactMetadata": {"trigger": "auto", "preTokens": 9, "tokensSaved": 5}}]
    p = tmp_path / "c1.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = registry.read(p)
    assert [e.type for e in s.events][-1] == "system/microcompact_boundary" and len(s.steps) == 1


# ------------------------------------------------------------ bad input


def test_truncated_final_line_and_pending_call():
    base = CORPUS / "kenn-io+agentsview" / "internal" / "parser" / "testdata" / "claude"
    s = _read_file(base / "truncated.jsonl")
    n = len((base / "truncated.jsonl").read_bytes().rstrip(b"\n").split(b"\n"))
    assert any(d.code in ("jsonl.truncated-line", "jsonl.invalid-line") and d.line == n for d in s.diagnostics)
    assert len(s.events) == n - 1
    s = _read_file(base / "tool_call_pending.jsonl")
    assert len(s.steps) == 1 and s.steps[0].extra.get("unanswered") and s.steps[0].observation == ""


def test_bad_lines_anywhere_are_located_and_the_rest_is_read(tmp_path):
    rows = _compaction_rows()
    lines = [json.dumps(r) for r in rows]
    lines.insert(0, "{not json")  # an unparseable first line (Letta's cleanup case)
    lines.insert(4, '{"type": "assistant", "message": {"id": "m9", "content": [{"type": "tool_use", "id": "tX"')  # cut mid-file
    lines.insert(6, "[1, 2]")  # no object
    lines.insert(7, json.dumps({"type": "brand-new-row", "uuid": "zz", "sessionId": "c1"}))
    lines.insert(8, json.dumps({"type": "assistant", "uuid": "dr", "parentUuid": "r1", "message": "drifted: a string"}))
    lines.append('{"type": "user", "message": {"role": "user", "content": "cut')
    p = tmp_path / "c1.jsonl"
    p.write_text("\n".join(lines))
    s = registry.read(p)
    codes = [(d.code, d.line) for d in s.diagnostics]
    assert ("jsonl.invalid-line", 1) in codes and ("jsonl.invalid-line", 5) in codes
    assert ("claude-code.row-not-object", 7) in codes and ("claude-code.unknown-row-type", 8) in codes
    assert ("jsonl.truncated-line", len(lines)) in codes
    assert [st.action for st in s.steps][:1] == ["make"] and len(s.steps) == 2
    assert any(e.type == "brand-new-row" and e.kind == "other" for e in s.events)


def test_empty_and_snapshot_only_files_are_empty_sessions(tmp_path):
    p = tmp_path / "0f0f0f0f-0000-4000-8000-000000000000.jsonl"
    p.write_bytes(b"")
    s = registry.read(p)
    assert s.format == "claude-code" and s.events == [] and s.steps == []
    snap = REAL / "-experiments-ideas" / "a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl"
    s = registry.read(snap)
    assert s.format == "claude-code" and s.steps == [] and len(s.events) == 4


def test_letta_cleanup_case_matches_letta_on_what_is_dropped():
    """Letta drops the unparseable first line and the inline sidechain row
    with a diagnostic; trajkit reports the first and keeps the second aside."""
    path = CORPUS / "letta-ai+trajectory" / "fixtures" / "claude-code" / "cleanup" / "input.jsonl"
    expected = json.loads((path.parent / "expected.json").read_text())
    s = _read_file(path)
    assert expected["diagnostics"] and any(d.code == "jsonl.invalid-line" and d.line == 1 for d in s.diagnostics)
    side = [e for e in s.events if e.extra.get("sidechain")]
    assert side and not any(st.action_event_id in {e.id for e in side} for st in s.steps)


# ------------------------------------------------------------ images


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def test_images_are_written_beside_the_export_never_inline(tmp_path):
    rows = _compaction_rows()[:3]
    rows[0]["message"]["content"] = [{"type": "text", "text": "what is this?"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]
    rows[2]["message"]["content"][0]["content"] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]
    p = tmp_path / "c1.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = registry.read(p)
    assert s.events[0].extra["images"] == 1 and s.events[0].text == "what is this?\n[image image/png]"
    for target in ("asf", "atif"):
        out = tmp_path / target
        res = convert(s, target, out)
        assert res.problems == []
        (media,) = res.media
        assert media.read_bytes() == base64.b64decode(PNG) and media.parent.name == "media"
        for o in res.outputs:
            assert PNG[:200] not in o.read_text()
            assert "media/" in o.read_text()


# ------------------------------------------------------------ ls, context, the CLI


def test_ls_lists_sessions_under_a_claude_home(tmp_path):
    home = tmp_path / ".claude"
    shutil.copytree(REAL, home / "projects")
    fmt = registry.get_format("claude-code")
    found = fmt.find_sessions(home)
    expect = sorted(p for p in (home / "projects").glob("*/*.jsonl"))
    assert sorted(found) == expect  # main transcripts only: no sub-agent file is listed
    row = fmt.summarize(home / "projects" / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl")
    assert row["id"] == "29ccd257-68b1-427f-ae5f-6524b7cb6f20" and row["subagents"] == 1 and row["steps"] == 1
    assert row["model"] == "claude-opus-4-5-20251101" and row["title"].startswith("Use the Explore task")
    assert row["tokens"] > 0
    assert row["cost"] is None or row["cost_estimated"] is True  # the record holds no cost: only the price table's estimate
    out = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--json", str(home)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert sorted(r["id"] for r in rows if r.get("format") == "claude-code") == sorted(p.stem for p in expect)


def test_ls_harness_lists_the_users_sessions_with_no_path(tmp_path):
    import os

    home = tmp_path / "cfg"
    shutil.copytree(REAL, home / "projects")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home)}
    out = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "claude-code", "--json"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    ids = sorted(r["id"] for r in json.loads(out.stdout))
    assert ids == sorted(p.stem for p in (home / "projects").glob("*/*.jsonl"))


def test_cli_steps_convert_verify_certify(tmp_path):
    run = REAL / "-src-experiments-claude_p" / "2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl"
    cli = [sys.executable, "-m", "trajkit"]
    out = subprocess.run(cli + ["steps", "--json", str(run)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["step_count"] == reference(run)[0]
    out = subprocess.run(cli + ["convert", str(run), "--to", "asf", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for f in tmp_path.glob("*.jsonl"):
        v = subprocess.run(cli + ["verify", str(f)], capture_output=True, text=True, timeout=120)
        assert v.returncode == 0, v.stdout + v.stderr
    c = subprocess.run(cli + ["certify", "--json", str(run)], capture_output=True, text=True, timeout=120)
    assert c.returncode in (0, 1), c.stderr
    assert json.loads(c.stdout)["run"]["format"] == "claude-code"


def test_detected_from_inside_a_session_folder_and_not_elsewhere(tmp_path):
    wf = LOG / "workflow_basic" / "11110000-0000-4000-8000-000000000001"
    for p in [wf / "workflows" / "scripts" / "demo-review-wf_demo01.js", wf / "subagents" / "workflows" / "wf_demo01" / "journal.jsonl",
              wf / "subagents" / "workflows" / "wf_demo01" / "agent-ag000001.meta.json", wf]:
        det = registry.detect(p)
        assert det.format.name == "claude-code" and det.match.root == wf.with_suffix(".jsonl"), p
    codex = CORPUS.parent / "codex"
    for p in sorted(codex.rglob("*.jsonl"))[:5]:
        det = registry.detect(p, only=["claude-code"])
        assert det.format is None, p


def test_the_docs_examples_run(tmp_path):
    """Every ``$ trajkit ...`` line of docs/claude-code.md runs (in order,
    from the repository root, with /tmp/ outputs moved under tmp_path)."""
    repo = Path(__file__).resolve().parents[1]
    doc = (repo / "docs" / "claude-code.md").read_text(encoding="utf-8")
    lines = [ln[2:] for ln in doc.splitlines() if ln.startswith("$ trajkit ")]
    assert len(lines) >= 8
    trajkit = f"{sys.executable} -m trajkit"
    for ln in lines:
        cmd = ln.replace("/tmp/", f"{tmp_path}/").replace("trajkit ", trajkit + " ", 1)
        p = subprocess.run(cmd, shell=True, cwd=repo, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, f"{ln}\n{p.stdout}\n{p.stderr}"
