"""The ``gemini-cli`` format: legacy whole-JSON sessions and the v0.39+ JSONL log.

Expected values come from the raw files by the rules of
``shared/formats/gemini-cli.md`` (§3 replay, §6 steps), implemented here in
plain json: the replay below is written from the note, not from the reader.
No real JSONL session exists, so the JSONL cases are synthetic (§9).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, run_cli
from trajkit import registry
from trajkit.export.convert import convert

FIX = REPO / "src" / "trajkit" / "formats" / "fixtures" / "gemini-cli"
MAIN = FIX / "tmp" / "demo-project" / "chats" / "session-2026-05-02T09-15-7c1d2e3f.jsonl"


def replay(path: Path) -> tuple[list[dict], list[dict]]:
    """(live messages, every message ever inserted and not live) by §3."""
    text = path.read_text()
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            return doc["messages"], []
    except ValueError:
        pass
    live: list[dict] = []
    gone: list[dict] = []
    for raw in text.split("\n"):
        try:
            v = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(v, dict):
            continue
        if isinstance(v.get("$rewindTo"), str):
            ids = [m["id"] for m in live]
            cut = ids.index(v["$rewindTo"]) if v["$rewindTo"] in ids else 0
            gone += live[cut:]
            del live[cut:]
        elif isinstance(v.get("id"), str):
            ids = [m["id"] for m in live]
            if v["id"] in ids:
                live[ids.index(v["id"])] = v
            else:
                live.append(v)
        elif isinstance(v.get("$set"), dict):
            if isinstance(v["$set"].get("messages"), list):
                keep = {m["id"] for m in v["$set"]["messages"]}
                gone += [m for m in live if m["id"] not in keep]
                live = list(v["$set"]["messages"])
        elif isinstance(v.get("sessionId"), str) and isinstance(v.get("projectHash"), str):
            for m in v.get("messages") or []:
                live.append(m)
    return live, gone


def _samples() -> list[Path]:
    files = [p for p in sorted((CORPUS / "gemini_cli").rglob("*.json")) if p.name != "expected.json"]
    files += [p for p in sorted(FIX.rglob("*.json*")) if p.name != "projects.json"]
    assert len(files) >= 11, files
    return files


@pytest.mark.parametrize("path", _samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_steps_and_usage_equal_the_raw_count(path):
    live, _gone = replay(path)
    gemini = [m for m in live if m.get("type") == "gemini"]
    calls = [c for m in gemini for c in m.get("toolCalls") or []]
    s = registry.read(path)
    assert s.format == "gemini-cli"
    assert len(s.steps) == len(calls)
    assert [st.extra["call_id"].split("__")[0] for st in s.steps] == [c.get("id") or st.extra["call_id"] for c, st in zip(calls, s.steps)]
    for c, st in zip(calls, s.steps):
        out = [p["functionResponse"]["response"] for p in c.get("result") or [] if "functionResponse" in p]
        want = "\n".join(r.get("output", r.get("error", "")) for r in out)
        assert st.observation == want
    live_gemini = [e for e in s.events if e.type == "gemini" and e.branch is None]
    assert len(live_gemini) == len(gemini)  # agent steps: one per live gemini message
    got = [(e.model_usage.input, e.model_usage.output) for e in live_gemini if e.model_usage is not None]
    want_usage = [(m["tokens"]["input"] + m["tokens"].get("tool", 0), m["tokens"]["output"]) for m in gemini if m.get("tokens")]
    assert got == want_usage
    # the record holds no cost: any cost is the price table's estimate, flagged as such
    assert all(e.model_usage.cost is None or e.model_usage.cost_estimated for e in s.events if e.model_usage is not None)


def test_the_notes_counts(corpus):
    """gemini-cli.md §6: agent steps / action steps for each corpus file."""
    g = corpus / "gemini_cli"
    av = g / "kenn-io+agentsview/internal/parser/testdata/gemini"
    want = {g / "Mai0313+VibeCodingTracker@b36a8d356/examples/test_conversation_gemini.json": (18, 0),
            av / "standard_session.json": (2, 0), av / "thinking_only.json": (1, 0), av / "tool_calls.json": (1, 1),
            av / "tool_calls_with_results.json": (1, 2), av / "system_messages.json": (0, 0),
            g / "letta-ai+trajectory/fixtures/gemini-cli/cleanup/input.json": (1, 1),
            g / "letta-ai+trajectory/fixtures/gemini-cli/tool-calls/input.json": (1, 1)}
    got = {}
    for p in want:
        s = registry.read(p)
        got[p] = (sum(1 for e in s.events if e.type == "gemini"), len(s.steps))
    assert got == want


def test_pending_call_and_error_result(corpus):
    s = registry.read(corpus / "gemini_cli/kenn-io+agentsview/internal/parser/testdata/gemini/tool_calls.json")
    assert s.steps[0].extra.get("unanswered") and s.steps[0].observation == ""
    assert s.steps[0].extra["call_id"].startswith("call_")  # no id in the record: synthesised
    s = registry.read(corpus / "gemini_cli/letta-ai+trajectory/fixtures/gemini-cli/cleanup/input.json")
    o = s.event_by_id(s.steps[0].observation_event_id)
    assert o.text == "file missing" and o.extra["error"] is True
    assert [(d.code, d.event_id) for d in s.diagnostics] == [("gemini.unknown-message-type", "gemini-unknown")]


def test_main_fixture_replay():
    """Upserts, a thoughts-split message, a cut line and an unknown object in
    the middle, a rewind, a tail; usage once per message."""
    s = registry.read(MAIN)
    live, gone = replay(MAIN)
    assert [e.id for e in s.events if e.type in ("user", "gemini") and e.branch is None] == [m["id"] for m in live if m["type"] in ("user", "gemini")]
    assert [e.id for e in s.events if e.branch == "abandoned" and e.type in ("user", "gemini")] == [m["id"] for m in gone] == ["u2", "g3"]
    g1 = s.event_by_id("g1")
    assert g1.extra["lines"] == [5, 6, 7, 8] and g1.model_usage.input == 2100  # one usage for four lines
    assert s.event_by_id("g2").model_usage.input == 2612  # input + tool
    assert s.metadata["replay"]["rewinds"] == 1 and s.metadata["replay"]["upserts"] == 3
    assert {(d.code, d.line) for d in s.diagnostics} == {("jsonl.invalid-line", 12), ("gemini.unknown-line", 13)}
    assert s.task == "Add a --verbose flag to cli.py."  # the injected <session_context> is not the prompt
    assert s.event_by_id("u0").extra["injected"]
    assert s.metadata["leaf_event_id"] == "g5"
    assert s.event_by_id("u3").parent_id == "i1"  # the new branch hangs off the message before u2
    assert s.run.workspace == "/home/agent/demo"  # from projects.json
    edits = [s.event_by_id(st.observation_event_id).edit for st in s.steps]
    assert edits[1].path == "/home/agent/demo/cli.py" and "--verbose" in edits[1].new and edits[1].whole is False
    assert [st.action for st in s.steps][2] == "pytest -q"


def test_subagent_linked_by_agent_id():
    s = registry.read(MAIN)
    assert [c.id for c in s.children] == ["rev01"]
    child = s.children[0]
    step = next(st for st in s.steps if st.tool_type == "codebase_investigator")
    assert step.children == [child] and child.spawned_by.method == "agent-id" and child.spawned_by.step_id == step.step_id
    assert len(child.steps) == 1


def _jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


META = {"sessionId": "s1", "projectHash": "ab" * 32, "startTime": "2026-05-01T00:00:00Z", "lastUpdated": "2026-05-01T00:00:09Z"}


def _m(i, t, content="", **kw):
    return {"id": i, "type": t, "timestamp": "2026-05-01T00:00:01Z", "content": content, **kw}


def test_rewind_to_unknown_id_empties_the_conversation(tmp_path):
    f = _jsonl(tmp_path / "session-a.jsonl", [META, _m("u1", "user", "a"), _m("g1", "gemini", "b"), {"$rewindTo": "nope"},
                                               _m("u2", "user", "c"), _m("g2", "gemini", "d")])
    s = registry.read(f)
    live, gone = replay(f)
    assert [m["id"] for m in live] == ["u2", "g2"] and [m["id"] for m in gone] == ["u1", "g1"]
    assert [e.id for e in s.events if e.branch == "abandoned"] == ["u1", "g1"]
    assert [(d.code, d.line) for d in s.diagnostics] == [("gemini.rewind-unknown-id", 4)]
    assert s.task == "c"


def test_checkpoint_replaces_history(tmp_path):
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "x"}}}]}
    f = _jsonl(tmp_path / "session-b.jsonl", [
        META, _m("u1", "user", "first"), _m("g1", "gemini", "", toolCalls=[call]), _m("g2", "gemini", "done"),
        {"$set": {"messages": [_m("u1", "user", "first"), _m("s1", "gemini", "summary of earlier work")]}},
        _m("u2", "user", "more"), _m("g3", "gemini", "ok"),
    ])
    s = registry.read(f)
    cond = [e for e in s.events if e.kind == "condensation"]
    assert len(cond) == 1 and cond[0].extra["dropped"] == ["g1", "g2"]
    assert len(s.steps) == 1  # the call before the checkpoint happened: still a step
    ctx = registry.get_format("gemini-cli").context(s)
    assert [m["content"] for m in ctx[-1]["messages"]] == ["summary of earlier work", "more"]
    assert s.metadata["replay"]["checkpoints"] == 1


def test_migrated_legacy_one_line_record_then_appends(tmp_path):
    f = _jsonl(tmp_path / "session-c.jsonl", [{**META, "messages": [_m("u1", "user", "hi"), _m("g1", "gemini", "hello")]},
                                               _m("u2", "user", "again"), _m("g2", "gemini", "sure"), ""])
    s = registry.read(f)
    assert s.view == "jsonl"
    assert [e.id for e in s.events] == ["u1", "g1", "u2", "g2"]


@pytest.mark.parametrize("data", [b"", b"{", b"{\n  \"sessionId\": \"x\",\n  \"messages\": [\n", b"\xff\xfe\x00", b"[]"])
def test_degenerate_files(tmp_path, data):
    f = tmp_path / "session-d.json"
    f.write_bytes(data)
    s = registry.read(f, format="gemini-cli")
    assert s.steps == [] and s.diagnostics


def test_drifted_message_shapes(tmp_path):
    """Content as one part, a message that is no object, a call without name
    or args, tokens null, a reused call id."""
    f = tmp_path / "session-e.json"
    f.write_text(json.dumps({**META, "messages": [
        _m("u1", "user", {"text": "one part"}), "not an object",
        _m("g1", "gemini", "", tokens=None, toolCalls=[{"id": "k", "status": "success"}, {"id": "k", "name": "glob", "args": {"pattern": "*"}}]),
    ]}, indent=2))
    s = registry.read(f)
    assert s.task == "one part"
    assert [st.extra["call_id"] for st in s.steps] == ["k", "k__2"]
    assert {d.code for d in s.diagnostics} == {"gemini.message-not-object", "gemini.duplicate-call-id"}


def test_outcomes(tmp_path):
    o = registry.read(MAIN).outcome
    assert (o.reached_end, o.claimed_success, o.status) == (True, True, "final-answer")
    f = _jsonl(tmp_path / "session-f.jsonl", [META, _m("u1", "user", "go"), _m("e1", "error", "Quota exceeded")])
    o = registry.read(f).outcome
    assert (o.reached_end, o.external_error) == (False, "Quota exceeded")
    f = _jsonl(tmp_path / "session-g.jsonl", [META, _m("u1", "user", "go"),
                                               _m("g1", "gemini", "", toolCalls=[{"id": "c", "name": "run_shell_command", "args": {"command": "rm -rf x"}, "status": "cancelled"}])])
    o = registry.read(f).outcome
    assert (o.reached_end, o.human_abort) == (False, True)


def test_context_keeps_rewound_messages_out():
    s = registry.read(MAIN)
    ctx = registry.get_format("gemini-cli").context(s)
    last = ctx[-1]["messages"]
    texts = [m["content"] for m in last]
    assert "Also add a test." not in texts and "Instead, run the existing tests, and ask the reviewer to check cli.py." in texts
    assert "system prompt" in ctx[0]["not_rebuilt"][0]
    g3 = next(c for c in ctx if c["event_id"] == "g3")  # the rewound call saw its own branch
    assert g3["messages"][-1]["content"] == "Also add a test."


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


def test_cli_ls_and_verbs(tmp_path):
    p = run_cli("ls", FIX / "tmp", "--format", "gemini-cli", "--json", check=True)
    rows = json.loads(p.stdout)
    assert [r["id"] for r in rows] == ["7c1d2e3f-0a1b-4c2d-8e3f-5a6b7c8d9e0f"]  # the sub-agent is counted, not listed
    r = rows[0]
    assert (r["title"], r["model"], r["steps"], r["subagents"]) == ("Add a --verbose flag to cli.py.", "gemini-2.5-pro", 4, 1)
    sub_live, _ = replay(next(MAIN.parent.glob("*/rev01.jsonl")))
    live, gone = replay(MAIN)
    assert r["tokens"] == sum(m["tokens"]["input"] + m["tokens"]["tool"] + m["tokens"]["output"]
                              for m in live + gone + sub_live if m.get("tokens"))
    run_cli("steps", MAIN, check=True)
    run_cli("show", MAIN, check=True)
    run_cli("convert", MAIN, "--to", "asf", "--out", tmp_path / "asf", check=True)
    run_cli("verify", *sorted((tmp_path / "asf").glob("*.jsonl")), check=True)
    assert json.loads(run_cli("certify", MAIN, "--json").stdout)["engine"]["reached_end"] is True


def test_docs_page_examples_run():
    import shutil

    from test_codex import run_console_examples

    shutil.rmtree("/tmp/trajkit-gemini-asf", ignore_errors=True)
    shutil.rmtree("/tmp/trajkit-gemini-atif", ignore_errors=True)
    assert run_console_examples(REPO / "docs" / "gemini-cli.md") >= 7


def test_ls_harness_lists_the_home_folder(tmp_path):
    """`trajkit ls --harness gemini-cli` with no path lists ~/.gemini/tmp."""
    import os
    import shutil
    import subprocess
    import sys

    home = tmp_path / "home"
    shutil.copytree(FIX / "tmp", home / ".gemini" / "tmp")
    shutil.copy(FIX / "projects.json", home / ".gemini" / "projects.json")
    legacy = home / ".gemini" / "tmp" / ("ab" * 32) / "chats"
    legacy.mkdir(parents=True)
    shutil.copy(CORPUS / "gemini_cli/Mai0313+VibeCodingTracker@b36a8d356/examples/test_conversation_gemini.json", legacy / "session-2025-10-05T10-00-eefc44a3.json")
    env = dict(os.environ, HOME=str(home))
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "gemini-cli", "--json"], capture_output=True, text=True, env=env, cwd=REPO)
    assert p.returncode == 0, p.stderr
    rows = {r["id"]: r for r in json.loads(p.stdout)}
    assert sorted(rows) == ["7c1d2e3f-0a1b-4c2d-8e3f-5a6b7c8d9e0f", "eefc44a3-0832-4bc0-ac33-fa668f038213"]
    real = rows["eefc44a3-0832-4bc0-ac33-fa668f038213"]
    msgs = json.loads((legacy / "session-2025-10-05T10-00-eefc44a3.json").read_text())["messages"]
    assert real["steps"] == 0 and real["model"] == next(m["model"] for m in msgs if m.get("model"))
    assert real["tokens"] == sum(m["tokens"]["input"] + m["tokens"].get("tool", 0) + m["tokens"]["output"] for m in msgs if m.get("tokens"))
    assert real["title"] == msgs[0]["content"].strip().splitlines()[0][:100]


def test_a_damaged_first_line_does_not_hide_the_log(tmp_path):
    f = _jsonl(tmp_path / "session-h.jsonl", ['{"sessionId": "s1", "projectHa', _m("u1", "user", "hello"), _m("g1", "gemini", "hi")])
    assert registry.detect(f).format.name == "gemini-cli"
    s = registry.read(f)
    assert [e.id for e in s.events] == ["u1", "g1"] and [d.line for d in s.diagnostics if d.code == "jsonl.invalid-line"] == [1]
