"""The rollout-trace reader: the corpus proxy trace, rollout directories with
sidecars, and every bad-input case (cut line, bad line, non-object record,
text tokens, upstream errors, missing response, empty file)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trajkit.formats import rollout_trace as rt
from trajkit.model import ACTION, ERROR_EVENT, MESSAGE, OBSERVATION, OTHER, SYSTEM, ReadOptions
from trajkit.rl import calls
from trajkit.registry import detect, read

FIX = Path(__file__).parent / "fixtures" / "rl"


@pytest.fixture(scope="module")
def synthetic(corpus) -> Path:
    return corpus / "opencode" / "proxy_trace_synthetic.jsonl"


def codes(session):
    return [d.code for d in session.diagnostics]


def test_corpus_trace_detected_as_rollout_trace(synthetic):
    det = detect(synthetic)
    assert det.format is not None and det.format.name == "rollout-trace"
    assert det.match.root == synthetic
    assert det.match.strength == "strong"


def test_corpus_trace_events_and_steps(synthetic):
    s = read(synthetic)
    assert s.format == "rollout-trace"
    kinds = [(e.id, e.kind, e.type) for e in s.events]
    assert kinds == [
        ("turn-1", OTHER, "model_call.title"),
        ("turn-2/msg-0", SYSTEM, "system"),
        ("turn-2/msg-1", MESSAGE, "user"),
        ("turn-2", ACTION, "model_call"),
        ("turn-3/msg-3", OBSERVATION, "tool"),
        ("turn-3", MESSAGE, "model_call"),
    ]
    lines = Path(synthetic).read_text().splitlines()
    by_id = {e.id: e for e in s.events}
    # raw is the record, untouched
    for k, eid in enumerate(["turn-1", "turn-2", "turn-3"]):
        assert by_id[eid].raw == json.loads(lines[k])
        assert by_id[eid].ref.line_start == k + 1
    act = by_id["turn-2"]
    assert act.tool_calls[0].name == "bash"
    assert act.tool_calls[0].call_id == "call_aba72de6"
    assert act.tool_calls[0].arguments == {
        "command": "echo hello-from-stub > hello.txt && cat hello.txt",
        "description": "Write hello.txt",
    }
    assert act.response_id == "chatcmpl-71034d8923c4"
    assert act.usage == {"prompt_tokens": 100, "completion_tokens": 31, "total_tokens": 131}
    assert act.extra["token_ids_source"] == "completion_tokens"
    assert act.extra["output_tokens"] == 31
    assert act.timestamp.startswith("2026-") and act.timestamp.endswith("Z")
    obs = by_id["turn-3/msg-3"]
    assert obs.call_id == "call_aba72de6" and obs.cause == "turn-2"
    assert obs.raw == json.loads(lines[2])["request"]["messages"][3]
    assert by_id["turn-1"].text == "Stub session title"
    assert by_id["turn-1"].extra["purpose"] == "title"

    assert len(s.steps) == 1
    st = s.steps[0]
    assert st.step_id == 1
    assert st.action == "echo hello-from-stub > hello.txt && cat hello.txt"
    assert st.tool_type == "bash"
    assert st.observation == obs.text
    assert st.thinking == "I will create the file."
    assert st.action_event_id == "turn-2" and st.observation_event_id == "turn-3/msg-3"
    assert s.task == '"Create hello.txt containing hello-from-stub using bash."'
    assert s.task_source == "first user message"
    assert s.metadata["calls"] == {"total": 3, "title": 1, "agent": 2}
    assert s.metadata["model"] == "stub-model"
    assert s.diagnostics == []


def test_parse_call_token_ids_never_from_text(synthetic):
    recs = [json.loads(x) for x in Path(synthetic).read_text().splitlines()]
    c = calls.parse_call(recs[1])
    assert c.output_ids == [calls.parse_token_id(t) for t in recs[1]["completion_tokens"]]
    assert c.ids_source == "completion_tokens"
    assert c.logps == [-0.1] * 31
    # a fork appending data after the number still parses; junk does not
    assert calls.parse_token_id("token_id:151657|v3") == 151657
    assert calls.parse_token_id("tok_id:1") is None and calls.parse_token_id(" token_id:1") is None
    # ids only in the logprob entries
    r = dict(recs[1], completion_tokens=[], completion_token_ids=[])
    c = calls.parse_call(r)
    assert c.ids_source == "logprobs" and len(c.output_ids) == 31
    # completion_token_ids wins when present
    r = dict(recs[1], completion_token_ids=list(range(31)))
    assert calls.parse_call(r).output_ids == list(range(31))
    # ids only in response.choices[0].token_ids (return_token_ids)
    r = json.loads(json.dumps(recs[1]))
    r.update(completion_tokens=[], completion_token_ids=[], logprobs=[])
    r["response"]["choices"][0].pop("logprobs")
    r["response"]["choices"][0]["token_ids"] = [5, 6, 7]
    r["response"]["prompt_token_ids"] = [1, 2]
    c = calls.parse_call(r)
    assert (c.output_ids, c.ids_source, c.prompt_ids) == ([5, 6, 7], "response.token_ids", [1, 2])


def test_rollout_directory_with_sidecars():
    s = read(FIX / "rollout_dir")
    assert s.format == "rollout-trace"
    assert s.task == "Create hello.txt containing hello." and s.task_source == "task.json"
    assert s.id == "task-0001"
    assert s.metadata["summary"]["reward"] == 1.0
    assert s.metadata["visible_tests"] == "input: 1\noutput: 1\n"
    assert len(s.metadata["held_out_tests"]) == 3
    roles = {Path(f.path).name: (f.role, f.status) for f in s.files}
    assert roles["trace.json"] == ("events", "read")
    assert roles["task.json"] == ("task", "read")
    assert roles["summary.json"] == ("summary", "read")
    assert roles["held_out_tests.json"] == ("held_out_tests", "read")
    assert [e.id for e in s.events if e.type.startswith("model_call")] == ["turn-1", "turn-2", "turn-3"]
    assert len(s.steps) == 1 and s.steps[0].action == "echo hello > hello.txt"
    # a JSON array: no line numbers, events still named
    assert s.events[0].ref.line_start is None
    det = detect(FIX / "rollout_dir" / "task.json")
    assert det.format.name == "rollout-trace" and det.match.root == FIX / "rollout_dir"


def test_dict_wrapped_trace(tmp_path):
    recs = json.loads((FIX / "rollout_dir" / "trace.json").read_text())
    (tmp_path / "trace.json").write_text(json.dumps({"version": 1, "records": recs}))
    s = read(tmp_path)
    assert len([e for e in s.events if e.type.startswith("model_call")]) == 3
    assert s.metadata["trace_wrapper"] == {"version": 1}


def test_cut_final_line_reported_prefix_read():
    s = read(FIX / "edge" / "cut")
    assert [e.id for e in s.events if e.type.startswith("model_call")] == ["turn-1", "turn-2"]
    d = [d for d in s.diagnostics if d.code == "jsonl.truncated-line"]
    assert len(d) == 1 and d[0].line == 3
    # turn-2's tool call is never answered: no step, and it is listed
    assert s.steps == [] and s.metadata["actions_without_observation"] == ["call_a"]


def test_odd_records_become_diagnostics_not_crashes():
    s = read(FIX / "edge" / "odd")
    c = codes(s)
    assert "jsonl.invalid-line" in c
    assert "rollout.record-not-object" in c
    assert "rollout.token-ids-unparsed" in c
    assert "rollout.upstream-error" in c
    assert "rollout.no-response" in c
    kinds = {e.id: (e.kind, e.type) for e in s.events}
    assert kinds["turn-4"] == (ERROR_EVENT, "model_call.error")
    assert kinds["turn-5"] == (ERROR_EVENT, "model_call.error")
    assert any(e.kind == OTHER and e.type == "record" and e.raw == [1, 2] for e in s.events)
    bad = next(d for d in s.diagnostics if d.code == "rollout.token-ids-unparsed")
    assert bad.event_id == "turn-2" and bad.line == 4
    err = next(d for d in s.diagnostics if d.code == "rollout.upstream-error")
    assert err.event_id == "turn-4" and "503" in err.message


def test_empty_and_missing_trace(tmp_path):
    (tmp_path / "trace.jsonl").write_bytes(b"")
    s = rt.read(tmp_path, ReadOptions())
    assert codes(s) == ["file.empty"] and s.events == []
    empty = tmp_path / "nothing"
    empty.mkdir()
    s = rt.read(empty, ReadOptions())
    assert codes(s) == ["rollout.no-trace"]


def test_too_large_trace_is_reported(tmp_path):
    shutil.copy(FIX / "rollout_dir" / "trace.json", tmp_path / "trace.json")
    s = rt.read(tmp_path, ReadOptions(max_file_bytes=100))
    assert "file.too-large" in codes(s) and s.events == []


def test_repeated_turn_numbers_and_overlap(tmp_path):
    recs = json.loads((FIX / "rollout_dir" / "trace.json").read_text())
    recs[2]["turn"] = 2
    (tmp_path / "trace.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    s = read(tmp_path)
    assert "rollout.turn-numbers" in codes(s)
    assert [e.id for e in s.events if e.type.startswith("model_call")] == ["call-0", "call-1", "call-2"]
    recs = json.loads((FIX / "rollout_dir" / "trace.json").read_text())
    recs[0]["turn"], recs[1]["turn"] = 2, 1  # the title finished after the first agent call
    (tmp_path / "trace.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    s = read(tmp_path)
    assert "rollout.turn-order" in codes(s)


def test_steps_cli_on_corpus_trace(cli, synthetic):
    r = cli("steps", synthetic, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "rollout-trace" and doc["step_count"] == 1
    assert doc["steps"][0]["action"] == "echo hello-from-stub > hello.txt && cat hello.txt"
    r = cli("detect", FIX / "rollout_dir" / "trace.json")
    assert r.returncode == 0 and r.stdout.startswith("rollout-trace")


def test_exports_carry_token_ids(cli, tmp_path):
    """A rollout exports like any session; the captured ids and logprobs ride along."""
    r = cli("convert", FIX / "rollout_dir", "--to", "atif", "--out", tmp_path / "atif", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] is True
    doc = json.loads(next((tmp_path / "atif").glob("*.json")).read_text())
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [s["metrics"]["completion_token_ids"] for s in agent] == [[21, 22, 23, 24, 25], [31, 32]]
    assert agent[0]["metrics"]["logprobs"] == [-0.1, -0.2, -0.3, -0.4, -0.5]
    assert agent[0]["tool_calls"][0]["function_name"] == "bash"
    r = cli("convert", FIX / "rollout_dir", "--to", "asf", "--out", tmp_path / "asf", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["events_dropped"] == 0
    r = cli("show", FIX / "rollout_dir")
    assert r.returncode == 0 and "echo hello > hello.txt" in r.stdout


def _agent_record(turn, messages, content, tool_calls, ids):
    ents = [{"token": f"token_id:{i}", "logprob": -0.5} for i in ids]
    msg = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return {"turn": turn, "request": {"model": "m", "messages": messages, "tools": [{"type": "function", "function": {"name": "bash"}}]},
            "response": {"id": f"r{turn}", "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if tool_calls else "stop"}],
                         "usage": {"completion_tokens": len(ids)}},
            "logprobs": ents, "completion_tokens": [e["token"] for e in ents], "completion_token_ids": [],
            "per_token_logps": [-0.5] * len(ids), "finish_reason": "tool_calls" if tool_calls else "stop"}


def test_parallel_tool_calls_become_grouped_steps(tmp_path):
    base = [{"role": "system", "content": "S"}, {"role": "user", "content": "go"}]
    tcs = [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
           {"id": "c2", "type": "function", "function": {"name": "read", "arguments": '{"filePath": "a"}'}}]
    msgs2 = base + [{"role": "assistant", "content": "", "tool_calls": tcs},
                    {"role": "tool", "tool_call_id": "c2", "content": "A"},
                    {"role": "tool", "tool_call_id": "c1", "content": "a\nb"}]
    recs = [_agent_record(1, base, "", tcs, [1, 2, 3]), _agent_record(2, msgs2, "done", [], [4])]
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    s = read(tmp_path)
    assert [(st.action, st.observation, st.parallel_group) for st in s.steps] == [
        ("ls", "a\nb", "r1"),
        ('read({"filePath": "a"})', "A", "r1"),
    ]
    assert [e.cause for e in s.events if e.kind == OBSERVATION] == ["turn-1", "turn-1"]
    # the history message that repeats the captured reply is not a second event
    assert [e.id for e in s.events if e.role == "assistant"] == ["turn-1", "turn-2"]


def test_json_file_holding_jsonl_and_other_traces(tmp_path):
    recs = json.loads((FIX / "rollout_dir" / "trace.json").read_text())
    (tmp_path / "trace.json").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "proxy_trace.jsonl").write_text("")
    s = read(tmp_path)
    assert "rollout.jsonl-in-json" in codes(s) and "rollout.other-traces" in codes(s)
    assert len([e for e in s.events if e.type.startswith("model_call")]) == 3
    assert {Path(f.path).name: f.status for f in s.files}["proxy_trace.jsonl"] == "unused"
    (tmp_path / "trace.json").write_text('"just a string"')
    s = rt.read(tmp_path / "trace.json", ReadOptions())
    assert "rollout.not-a-trace" in codes(s) and s.events == []


def test_trace_without_tool_calls_has_no_agent_turns(tmp_path):
    rec = _agent_record(1, [{"role": "user", "content": "hi"}], "hello", [], [1])
    del rec["request"]["tools"]
    (tmp_path / "trace.jsonl").write_text(json.dumps(rec) + "\n")
    s = read(tmp_path)
    assert "rollout.no-agent-call" in codes(s)
    assert s.events[0].extra["purpose"] == "other"


def test_logprob_entries_aligned_to_ids_by_token_id():
    """ids from token_ids, entries with gaps (a dropped chunk): logprobs land on their own tokens."""
    rec = _agent_record(1, [{"role": "user", "content": "x"}], "", [], [7, 8, 9, 10])
    rec["completion_token_ids"] = [7, 8, 9, 10]
    rec["logprobs"] = [{"token": "token_id:7", "logprob": -1.0}, {"token": "token_id:10", "logprob": -4.0}]
    c = calls.parse_call(rec)
    assert c.output_ids == [7, 8, 9, 10]
    assert c.logps == [-1.0, None, None, -4.0]
    assert c.logps_source == "logprobs (aligned by token id)"
    rec["logprobs"] = [{"token": "token_id:10"}, {"token": "token_id:7"}]  # out of order: not alignable
    c = calls.parse_call(rec)
    assert c.logps_source == "per_token_logps"


def test_sessions_pickle():
    import pickle

    s = read(FIX / "rollout_dir")
    assert pickle.loads(pickle.dumps(s)).to_dict(events=True, raw=True) == s.to_dict(events=True, raw=True)


def test_damaged_trace_in_a_rollout_dir_is_still_read_with_diagnostics(tmp_path):
    import shutil

    import trajkit
    from conftest import REPO, run_cli

    for damage in (b"", b"\xff\xfe garbage", b'[{"turn": 0, "requ'):
        d = tmp_path / f"r{len(damage)}"
        shutil.copytree(REPO / "examples" / "rollout", d)
        (d / "trace.json").write_bytes(damage)
        s = trajkit.read(d)
        assert s.format == "rollout-trace" and s.steps == []
        assert any(x.severity == "error" for x in s.diagnostics), [str(x) for x in s.diagnostics]
        p = run_cli("steps", d, "--json")
        assert p.returncode == 0 and "Traceback" not in p.stderr
