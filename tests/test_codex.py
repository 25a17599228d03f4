"""The ``codex`` format: rollouts and ``codex exec --json`` streams.

Expected values come from the raw lines by the rules of
``shared/formats/codex.md`` §5, implemented here in plain json (never from
the reader): one step per tool call, outputs paired with the oldest
unanswered call of their ``call_id``, one usage per effective
``token_count`` (``last_token_usage``, else the difference of totals; a
repeated total is no call), one usage per exec ``turn.completed``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, run_cli
from trajkit import registry
from trajkit.export.convert import convert
from trajkit.model import ReadOptions

FIX = REPO / "src" / "trajkit" / "formats" / "fixtures" / "codex"
PARENT = FIX / "sessions" / "2026" / "04" / "01" / "rollout-2026-04-01T08-00-00-5f0c2a4e-1b7d-4c1e-9a53-0d2f3b6c7a10.jsonl"
CHILD = FIX / "sessions" / "2026" / "04" / "01" / "rollout-2026-04-01T08-01-30-8a3e61d2-44b0-4f7e-b2c5-9e1d7f0a3b22.jsonl"

CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"}
OUTPUTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}
EXEC_ACTIONS = {"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}
KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _samples() -> list[Path]:
    files = sorted((CORPUS / "codex").rglob("*.jsonl")) + sorted(FIX.rglob("*.jsonl"))
    assert len(files) >= 13, files
    return files


def _lines(path: Path) -> list:
    out = []
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            out.append(json.loads(raw))
        except ValueError:
            out.append(None)
    return out


def _reference(path: Path) -> dict:
    """Steps, per-call usage and observations by the note's rule, from the raw lines."""
    lines = _lines(path)
    exec_stream = any(isinstance(v, dict) and str(v.get("type", "")).startswith(("thread.", "turn.", "item.")) for v in lines)
    calls, usages, pending = [], [], {}
    if exec_stream:
        done = {v["item"]["id"] for v in lines if isinstance(v, dict) and v.get("type") == "item.completed"}
        for v in lines:
            if not isinstance(v, dict):
                continue
            if v.get("type") == "item.completed" and v["item"].get("type") in EXEC_ACTIONS:
                calls.append({"observation": v["item"].get("aggregated_output")})
            elif v.get("type") == "item.started" and v["item"].get("type") in EXEC_ACTIONS and v["item"]["id"] not in done:
                calls.append({"observation": ""})
            elif v.get("type") == "turn.completed" and isinstance(v.get("usage"), dict):
                usages.append((v["usage"].get("input_tokens"), v["usage"].get("output_tokens")))
        return {"steps": len(calls), "usages": usages, "observations": [c["observation"] for c in calls]}
    prev_total = None
    for v in lines:
        if not isinstance(v, dict) or not isinstance(v.get("payload"), dict):
            continue
        p = v["payload"]
        if v.get("type") == "response_item" and p.get("type") in CALLS:
            c = {"id": p.get("call_id"), "observation": ""}
            calls.append(c)
            if c["id"] is not None:
                pending.setdefault(c["id"], []).append(c)
        elif v.get("type") == "response_item" and p.get("type") in OUTPUTS:
            for c in pending.get(p.get("call_id"), []):
                if "answered" not in c:
                    c["answered"] = True
                    out = p.get("output")
                    c["observation"] = out if isinstance(out, str) else None  # lists/objects: not compared
                    break
        elif v.get("type") == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            total, last = p["info"].get("total_token_usage"), p["info"].get("last_token_usage")
            if total is not None and prev_total is not None and all(total.get(k) == prev_total.get(k) for k in KEYS):
                continue
            if last is not None:
                usages.append((last.get("input_tokens"), last.get("output_tokens")))
            else:
                usages.append((total["input_tokens"] - (prev_total or {}).get("input_tokens", 0),
                               total["output_tokens"] - (prev_total or {}).get("output_tokens", 0)))
            prev_total = total if total is not None else prev_total
    return {"steps": len(calls), "usages": usages, "observations": [c["observation"] for c in calls]}


@pytest.mark.parametrize("path", _samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_steps_and_usage_equal_the_raw_count(path):
    ref = _reference(path)
    s = registry.read(path)
    assert s.format == "codex"
    assert len(s.steps) == ref["steps"]
    got = [(e.model_usage.input, e.model_usage.output) for e in s.events if e.model_usage is not None]
    assert got == ref["usages"]
    for st, want in zip(s.steps, ref["observations"]):
        if isinstance(want, str) and not want.startswith("{"):
            assert st.observation == want
    for u in (e.model_usage for e in s.events if e.model_usage is not None):
        assert u.cost is None  # no cost in the record: the central price table estimates it, not the reader


def test_the_notes_counts():
    """codex.md §5: the counts the format note states for the corpus."""
    c = CORPUS / "codex"
    av = c / "kenn-io+agentsview/internal/parser/testdata/codex"
    want = {av / "fc_args_1.jsonl": 1, av / "fc_args_2.jsonl": 1, av / "fc_stdin.jsonl": 1, av / "function_calls.jsonl": 2,
            av / "standard_session.jsonl": 0, av / "blockquotes_session.jsonl": 0,
            c / "letta-ai+trajectory/fixtures/codex/cleanup/input.jsonl": 2,
            c / "letta-ai+trajectory/fixtures/codex/tool-calls/input.jsonl": 3,
            c / "pypi+atif-make-0.10.0/tests/fixtures/codex-rollout.jsonl": 1,
            c / "pypi+atif-make-0.10.0/tests/fixtures/codex-exec.jsonl": 1}
    assert {p: len(registry.read(p).steps) for p in want} == want
    s = registry.read(c / "pypi+atif-make-0.10.0/tests/fixtures/codex-rollout.jsonl")
    assert s.metadata["responses"] == 2  # reasoning + call, then the final message


def test_reused_call_id_and_orphan_output(corpus):
    """Letta's cleanup fixture: the second call_DUP is re-minted, the third
    output is a duplicate, the output for 'missing' an orphan; both kept."""
    s = registry.read(corpus / "codex/letta-ai+trajectory/fixtures/codex/cleanup/input.jsonl")
    assert [st.extra["call_id"] for st in s.steps] == ["call_DUP", "call_DUP__2"]
    assert [st.observation for st in s.steps] == ["alpha", "beta"]
    codes = {d.code: d for d in s.diagnostics}
    assert codes["jsonl.invalid-line"].line == 1
    assert codes["codex.duplicate-call-id"].line == 4
    assert codes["codex.arguments-not-json"].line == 4
    assert codes["codex.duplicate-output"].line == 7
    assert codes["codex.orphan-output"].line == 8
    kept = {e.id: e.kind for e in s.events}
    assert kept["L7"] == "other" and kept["L8"] == "other"
    assert s.steps[1].action == 'exec_command({"_raw": "not-json"})'


def test_parent_fixture_usage_figures():
    """Repeat dropped, info null ignored, total-only line differenced."""
    s = registry.read(PARENT)
    us = [(e.id, e.model_usage.input, e.model_usage.cache_read, e.model_usage.output, e.model_usage.source)
          for e in s.events if e.model_usage is not None]
    assert us[0] == ("L8", 1200, 0, 60, "token_count.last_token_usage")  # on the response's first event: the reasoning
    assert us[2][1:] == (1500, 1376, 40, "token_count total_token_usage difference")
    assert len(us) == 5
    assert all(e.model_usage.model == "gpt-5-codex" for e in s.events if e.model_usage is not None)
    assert [d.line for d in s.diagnostics if d.code == "codex.token-count-repeat"] == [11]
    assert s.steps[0].model_usage.input == 1200 and s.steps[0].thinking.startswith("**Reading the file**")


def test_apply_patch_is_a_patch_with_its_file_edit():
    s = registry.read(PARENT)
    st = s.steps[1]
    e = s.event_by_id(st.action_event_id)
    tc = e.tool_calls[0]
    assert (tc.op, tc.content.startswith("*** Begin Patch")) == ("patch", True)
    edit = s.event_by_id(st.observation_event_id).edit
    assert edit.path == "count.py" and edit.existed is True and "+    return len(xs)" in edit.patch
    assert [c.op for c in (s.event_by_id(x.action_event_id).tool_calls[0] for x in s.steps)] == ["shell", "patch", "shell", "spawn", "other"]  # a web search names a query, no URL


def test_subagent_thread_linked_to_its_spawn_call():
    s = registry.read(PARENT)
    assert [c.id for c in s.children] == ["8a3e61d2-44b0-4f7e-b2c5-9e1d7f0a3b22"]
    child = s.children[0]
    spawn = next(st for st in s.steps if st.tool_type == "spawn_agent")
    assert spawn.children == [child]
    assert (child.spawned_by.step_id, child.spawned_by.action_event_id, child.spawned_by.method) == (spawn.step_id, "L22", "output-names-thread")
    assert len(child.steps) == 1 and child.metadata["parent_thread_id"] == s.id
    # the child read alone is not a parent of anything
    alone = registry.read(CHILD)
    assert alone.children == [] and alone.spawned_by is None


def _write(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _meta(i, **kw):
    return {"timestamp": "2026-04-01T08:00:00Z", "type": "session_meta", "payload": {"id": i, "cwd": "/w", **kw}}


def _item(p):
    return {"timestamp": "2026-04-01T08:00:01Z", "type": "response_item", "payload": p}


def test_subagent_in_next_day_folder_by_spawn_order(tmp_path):
    """A child started after midnight sits in the next day's folder; without
    an output naming it, the n-th spawn_agent call is its spawning call."""
    sessions = tmp_path / ".codex" / "sessions"
    parent = _write(sessions / "2026/04/01/rollout-2026-04-01T23-59-00-p1.jsonl", [
        _meta("p1"), _item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        _item({"type": "function_call", "name": "spawn_agent", "arguments": "{}", "call_id": "c1"}),
        _item({"type": "function_call_output", "call_id": "c1", "output": "started"}),
    ])
    _write(sessions / "2026/04/02/rollout-2026-04-02T00-00-10-k1.jsonl", [
        _meta("k1", parent_thread_id="p1", thread_source="subagent"),
        _item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "sub"}]}),
    ])
    _write(sessions / "2026/04/02/rollout-2026-04-02T00-00-20-k2.jsonl", [
        _meta("k2", source={"subagent": {"thread_spawn": {"parent_thread_id": "p1", "depth": 1}}}),
    ])
    s = registry.read(parent)
    assert sorted(c.id for c in s.children) == ["k1", "k2"]
    linked = [c for c in s.children if c.spawned_by is not None]
    assert [(c.id, c.spawned_by.method, c.spawned_by.step_id) for c in linked] == [("k1", "spawn-order", 1)]
    assert [d.code for d in s.diagnostics if d.code == "codex.subagent-unlinked"] == ["codex.subagent-unlinked"]
    # ls lists the parent, not its children
    p = run_cli("ls", sessions, "--format", "codex", "--json", check=True)
    rows = json.loads(p.stdout)
    assert [r["id"] for r in rows] == ["p1"]
    assert rows[0]["subagents"] == 2 and rows[0]["steps"] == 1 and rows[0]["title"] == "go"


def test_bad_input_is_located_and_never_raises(tmp_path):
    f = _write(tmp_path / "rollout-bad.jsonl", [
        "{this is not json",
        _meta("b1"),
        "[1, 2]",
        {"timestamp": "x", "type": "response_item"},
        {"timestamp": "x", "type": "brand_new_line_type", "payload": {}},
        _item({"type": "mystery_item"}),
        _item({"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{\"command\": [\"ls\"]}"}),
        _item({"role": "assistant", "content": [{"type": "output_text", "text": "typeless message"}]}),
    ])
    with f.open("ab") as fh:
        fh.write(b'{"timestamp": "x", "type": "response_item", "payload": {"type": "function_call_out')
    assert registry.detect(f).format.name == "codex"  # a bad first line does not hide the session
    s = registry.read(f)
    where = {(d.code, d.line) for d in s.diagnostics}
    assert {("jsonl.invalid-line", 1), ("codex.line-not-object", 3), ("codex.payload-missing", 4),
            ("codex.unknown-line-type", 5), ("codex.unknown-line-type", 6), ("jsonl.truncated-line", 9)} <= where
    assert len(s.steps) == 1 and s.steps[0].action == "ls" and s.steps[0].extra.get("unanswered")
    assert s.event_by_id("L8").role == "assistant"
    assert {e.id for e in s.events} >= {"L2", "L3", "L4", "L5", "L6", "L7", "L8"}


@pytest.mark.parametrize("data", [b"", b"\x00\xff\xfe garbage", b"\n\n", b'{"type": "session_meta"}\n'])
def test_degenerate_files(tmp_path, data):
    f = tmp_path / "rollout-x.jsonl"
    f.write_bytes(data)
    s = registry.read(f, format="codex")
    assert s.steps == [] and s.diagnostics


def test_outcomes(tmp_path):
    user = _item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it"}]})
    aborted = _write(tmp_path / "a.jsonl", [_meta("a"), user, {"timestamp": "x", "type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}}])
    o = registry.read(aborted, format="codex").outcome
    assert (o.reached_end, o.human_abort, o.status) == (False, True, "turn_aborted:interrupted")
    err = _write(tmp_path / "e.jsonl", [_meta("e"), user, {"timestamp": "x", "type": "event_msg", "payload": {"type": "error", "message": "quota exceeded"}}])
    o = registry.read(err, format="codex").outcome
    assert (o.reached_end, o.external_error) == (False, "quota exceeded")
    done = registry.read(PARENT).outcome
    assert (done.reached_end, done.claimed_success, done.status) == (True, True, "task_complete")
    failed = _write(tmp_path / "f.jsonl", [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                                          {"type": "turn.failed", "error": {"message": "stream disconnected"}}])
    o = registry.read(failed, format="codex").outcome
    assert (o.reached_end, o.external_error) == (False, "stream disconnected")
    p = run_cli("certify", PARENT, "--json")
    assert json.loads(p.stdout)["engine"]["reached_end"] is True


def test_exec_stream_forms(tmp_path):
    """Current items, the first ``item_type`` builds, an item started and never
    completed, and the pre-2025-09-30 ``{id, msg}`` form."""
    cur = _write(tmp_path / "exec.jsonl", [
        {"type": "thread.started", "thread_id": "t1"}, {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "item_type": "assistant_message", "text": "hi"}},
        {"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "make", "status": "in_progress"}},
        {"type": "item.completed", "item": {"id": "i1", "type": "command_execution", "command": "make", "aggregated_output": "ok", "exit_code": 0}},
        {"type": "item.completed", "item": {"id": "i2", "type": "file_change", "changes": [{"path": "a.py", "kind": "add"}], "status": "completed"}},
        {"type": "item.started", "item": {"id": "i3", "type": "command_execution", "command": "sleep 99"}},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2}},
    ])
    s = registry.read(cur)
    assert [st.action for st in s.steps] == ["make", 'file_change({"changes": [{"path": "a.py", "kind": "add"}]})', "sleep 99"]
    assert [st.observation for st in s.steps] == ["ok", "completed", ""]
    edit = s.event_by_id(s.steps[1].observation_event_id).edit
    assert (edit.path, edit.existed) == ("a.py", False)
    legacy = _write(tmp_path / "legacy.jsonl", [
        {"id": "0", "msg": {"type": "task_started"}},
        {"id": "1", "msg": {"type": "exec_command_begin", "call_id": "x", "command": ["ls"], "cwd": "/w"}},
        {"id": "1", "msg": {"type": "exec_command_end", "call_id": "x", "stdout": "f", "exit_code": 0}},
        {"id": "2", "msg": {"type": "agent_message", "message": "done"}},
        {"id": "3", "msg": {"type": "task_complete"}},
    ])
    s = registry.read(legacy)
    assert s.format == "codex" and [(st.action, st.observation) for st in s.steps] == [("ls", "f")]
    assert s.outcome.reached_end


def test_compressed_rollout_without_zstandard(tmp_path):
    """Without the optional zstandard package (its import blocked in a fresh
    interpreter), a .jsonl.zst rollout is one located diagnostic with the install hint."""
    import subprocess
    import sys

    f = tmp_path / "rollout-2026-01-01T00-00-00-z.jsonl.zst"
    f.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 16)
    code = ("import sys, json; sys.modules['zstandard'] = None\n"
            "from trajkit import registry\n"
            f"s = registry.read({str(f)!r})\n"
            "print(json.dumps([s.format, [d.code for d in s.diagnostics], [d.message for d in s.diagnostics]]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    fmt, codes, messages = json.loads(p.stdout)
    assert fmt == "codex" and codes == ["codex.compressed"] and "pip install zstandard" in messages[0]


def test_compressed_rollout_reads_like_the_plain_one(tmp_path):
    """With zstandard (the `archives` extra), a compressed copy of a rollout gives the same steps."""
    zstandard = pytest.importorskip("zstandard")
    plain = PARENT
    f = tmp_path / (plain.name + ".zst")
    f.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    a, b = registry.read(plain), registry.read(f)
    assert b.format == "codex" and len(a.steps) == len(b.steps) > 0
    assert [s.action for s in a.steps] == [s.action for s in b.steps]


def test_context_replays_history_and_compaction():
    s = registry.read(PARENT)
    fmt = registry.get_format("codex")
    ctx = fmt.context(s)
    assert len(ctx) == s.metadata["responses"] == 5
    first = ctx[0]["messages"]
    assert first[0] == {"role": "system", "content": "Follow the repository's AGENTS.md."}
    assert first[-1] == {"role": "user", "content": "Fix the off-by-one in count.py and run the tests."}
    third = ctx[2]["messages"]
    assert [m["role"] for m in third[-4:]] == ["assistant", "tool", "assistant", "tool"]
    after = ctx[3]["messages"]  # the compaction replaced the history with its replacement_history
    assert [m["role"] for m in after] == ["system", "developer", "user", "assistant"]
    assert "system prompt" in ctx[0]["not_rebuilt"][0]
    assert fmt.context(s, at="L22")[0]["event_id"] == "L22"
    p = run_cli("context", PARENT, "--json", check=True)
    assert len(json.loads(p.stdout)) == 5


@pytest.mark.parametrize("path", _samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_exports_validate_and_verify(path, tmp_path):
    atif = pytest.importorskip("atif")
    s = registry.read(path)
    res = convert(s, "asf", tmp_path / "asf")
    assert res.problems == [] and res.report["unaccounted"] == []
    res = convert(s, "atif", tmp_path / "atif")
    assert res.problems == []
    for p in res.outputs:
        atif.Trajectory.model_validate(json.loads(p.read_text()))


def test_cli_verbs(tmp_path):
    p = run_cli("detect", PARENT, "--why", check=True)
    assert p.stdout.startswith("codex")
    p = run_cli("steps", PARENT, "--json", check=True)
    assert len(json.loads(p.stdout)["steps"]) == 5
    run_cli("show", PARENT, check=True)
    run_cli("convert", PARENT, "--to", "asf", "--out", tmp_path / "asf", check=True)
    out = sorted((tmp_path / "asf").glob("*.jsonl"))
    assert len(out) == 2  # the thread and its sub-agent
    run_cli("verify", *out, check=True)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(CHILD, copy)
    assert len(registry.read(copy, options=ReadOptions()).steps) == 1


def console_examples(doc: Path) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every `$ ` line of a page's ```console blocks."""
    import re

    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", doc.read_text(), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif line.strip() and out:
                out[-1][1].append(line.rstrip())
    return out


def run_console_examples(doc: Path) -> int:
    """Run a docs page's console examples in order from the repository root;
    each must exit 0 and print the lines shown under it."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""), COLUMNS="200")
    examples = console_examples(doc)
    for command, expected in examples:
        p = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, f"{command!r} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
        for line in expected:
            assert line.strip() in p.stdout + p.stderr, f"{command!r}: expected {line!r} in:\n{p.stdout}{p.stderr}"
    return len(examples)


def test_docs_page_examples_run():
    shutil.rmtree("/tmp/trajkit-codex-asf", ignore_errors=True)
    shutil.rmtree("/tmp/trajkit-codex-atif", ignore_errors=True)
    assert run_console_examples(REPO / "docs" / "codex.md") >= 7


def test_paginated_history_messages(tmp_path):
    """0.154's paginated mode writes messages as ``item_completed`` events:
    they are the messages when no response item repeats them."""
    f = _write(tmp_path / "rollout-p.jsonl", [
        _meta("pg"),
        {"timestamp": "x", "type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "UserMessage", "content": [{"type": "text", "text": "list files"}]}}},
        {"timestamp": "x", "type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "AgentMessage", "content": [{"type": "text", "text": "done"}]}}},
    ])
    s = registry.read(f)
    assert s.task == "list files"
    assert [(e.kind, e.role, e.text) for e in s.events[1:]] == [("message", "user", "list files"), ("message", "assistant", "done")]


def test_asf_claims_no_request_hash(tmp_path):
    """The base prompt and tool declarations are not recorded, so the ASF
    export claims no request hash it could not back."""
    res = convert(registry.read(PARENT), "asf", tmp_path)
    entries = [json.loads(x) for p in res.outputs for x in p.read_text().splitlines() if x.strip()]
    responses = [e for e in entries if e.get("type") == "response"]
    assert responses and not any("request_hash" in json.dumps(e) for e in responses)


def test_ls_harness_lists_the_home_folder(tmp_path):
    """`trajkit ls --harness codex` with no path: $CODEX_HOME (else ~/.codex)
    sessions/ and archived_sessions/, laid out as Codex lays them."""
    import os

    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2026" / "04" / "01"
    day.mkdir(parents=True)
    shutil.copy(PARENT, day / PARENT.name)
    shutil.copy(CHILD, day / CHILD.name)
    archived = home / ".codex" / "archived_sessions"
    archived.mkdir()
    shutil.copy(CORPUS / "codex/pypi+atif-make-0.10.0/tests/fixtures/codex-rollout.jsonl",
                archived / "rollout-2026-04-01T08-00-00-cx-1.jsonl")
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    env["HOME"] = str(home)
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "codex", "--json"], capture_output=True, text=True, env=env, cwd=REPO)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert sorted(r["id"] for r in rows) == ["5f0c2a4e-1b7d-4c1e-9a53-0d2f3b6c7a10", "cx-1"]
    parent = next(r for r in rows if r["id"].startswith("5f0c"))
    assert (parent["model"], parent["steps"], parent["subagents"], parent["updated"]) == ("gpt-5-codex", 5, 1, "2026-04-01T08:00:32.200Z")
    raw = _reference(PARENT)["usages"] + _reference(CHILD)["usages"]
    assert parent["tokens"] == sum(i + o for i, o in raw)
    env["CODEX_HOME"] = str(home / ".codex")
    env["HOME"] = str(tmp_path / "elsewhere")
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "codex", "--json"], capture_output=True, text=True, env=env, cwd=REPO)
    assert p.returncode == 0 and len(json.loads(p.stdout)) == 2, p.stderr


def test_subagent_depth_is_capped_and_a_record_gap(tmp_path):
    day = tmp_path / "sessions" / "2026" / "04" / "01"
    for i in range(7):
        extra = {"parent_thread_id": f"t{i - 1}"} if i else {}
        _write(day / f"rollout-2026-04-01T08-00-0{i}-t{i}.jsonl", [_meta(f"t{i}", **extra)])
    s = registry.read(day / "rollout-2026-04-01T08-00-00-t0.jsonl")
    depth, cur = 0, s
    while cur.children:
        cur, depth = cur.children[0], depth + 1
    assert depth == 4
    assert [d.code for d in cur.diagnostics] == ["codex.subagent-depth"]
    from trajkit.certify.pipeline import certify

    cert = certify(day / "rollout-2026-04-01T08-00-00-t0.jsonl")
    assert any(d["code"] == "certify.record-incomplete" and "codex.subagent-depth" in d["message"] for d in cert.diagnostics)


def test_legacy_rollout_shapes(tmp_path):
    """The TypeScript-era ``{session, items}`` document and the early Rust
    rollout (a bare meta line, raw items, ``record_type: state`` lines)."""
    ts = tmp_path / "rollout-2025-05-01-abc.json"
    ts.write_text(json.dumps({"session": {"id": "ts-1", "timestamp": "2025-05-01T00:00:00Z"}, "items": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{\"command\": [\"ls\", \"-a\"]}"},
        {"type": "function_call_output", "call_id": "c1", "output": "{\"output\": \"a\\nb\", \"metadata\": {\"exit_code\": 0}}"},
    ]}, indent=2))
    assert registry.detect(ts).format.name == "codex"
    s = registry.read(ts)
    assert (s.id, s.view, s.task) == ("ts-1", "ts-session", "hello")
    assert [(st.action, st.observation) for st in s.steps] == [("ls -a", "a\nb")]
    assert s.event_by_id(s.steps[0].observation_event_id).extra["exit_code"] == 0
    rust = _write(tmp_path / "rollout-2025-07-01T00-00-00-r1.jsonl", [
        {"id": "r1", "timestamp": "2025-07-01T00:00:00Z", "instructions": "be brief"},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{\"command\": [\"pwd\"]}"},
        {"type": "function_call_output", "call_id": "c1", "output": "/w"},
    ])
    s = registry.read(rust, format="codex")
    assert s.id == "r1" and s.task == "go" and [(st.action, st.observation) for st in s.steps] == [("pwd", "/w")]
    assert s.event_by_id("L1").kind == "system" and s.event_by_id("L2").kind == "state"
