"""What the model saw: rebuilt messages against the request bodies the SDK
sent, condensation semantics, branches, and the ACPAgent refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajkit.formats.openhands_sdk import read, rebuild_context
from trajkit.formats.openhands_sdk.context import ContextUnavailable
from trajkit.model import TrajkitError

FIX = Path(__file__).parent / "fixtures" / "sdk"
RUNS = {
    "requests_run1": "localconv_condensation/0123456789abcdef0123456789abcdef",
    "requests_run2": "localconv_subagent_confirm/fedcba9876543210fedcba9876543210",
    "requests_server": "agent_server/aaaaaaaabbbbccccddddeeeeeeeeeeee",
}


def _requests(corpus: Path):
    gen = corpus / "openhands_v1" / "generated"
    for log_dir, conv in RUNS.items():
        for f in sorted((gen / log_dir).glob("req-*.json")):
            yield log_dir, gen / conv, f


def test_every_logged_agent_request_is_rebuilt_exactly(corpus):
    checked = 0
    entries_by_conv: dict[Path, dict[str, dict]] = {}
    for log_dir, conv, f in _requests(corpus):
        body = json.loads(f.read_text())["body"]
        if "tools" not in body:  # the condenser's summary call, the server's title call
            continue
        if conv not in entries_by_conv:
            s = read(conv)
            entries_by_conv[conv] = {e["llm_response_id"]: e for ss in s.walk() for e in rebuild_context(ss)}
        rid = "chatcmpl-stub-%04d" % int(f.stem.split("-")[1])
        entry = entries_by_conv[conv].get(rid)
        assert entry is not None, f"{f}: no agent call {rid} rebuilt"
        want, got = body["messages"], entry["messages"]
        assert [m["role"] for m in got] == [m["role"] for m in want], f
        for g, w in zip(got, want):
            assert [p.get("text") for p in g.get("content") or []] == [p.get("text") for p in w.get("content") or []], f
            assert g.get("tool_calls") == w.get("tool_calls"), f
            assert g.get("tool_call_id") == w.get("tool_call_id"), f
        assert got == want, f  # and in fact the whole messages array is identical
        checked += 1
    assert checked == 16  # 18 logged requests, 2 of them not the agent LLM


def test_one_entry_per_agent_call_not_condenser_or_title(corpus):
    s = read(corpus / "openhands_v1/generated" / RUNS["requests_run1"])
    rids = [e["llm_response_id"] for e in rebuild_context(s)]
    assert rids == [f"chatcmpl-stub-000{n}" for n in (1, 2, 3, 4, 6, 7, 8)]
    assert rebuild_context(s.source_path) == rebuild_context(s)  # a path works as well as a session


def test_at_an_event(corpus):
    conv = corpus / "openhands_v1/generated" / RUNS["requests_run1"]
    s = read(conv)
    second_of_batch = s.events[5]
    (e,) = rebuild_context(s, at=second_of_batch.id)
    assert e["llm_response_id"] == "chatcmpl-stub-0002" and e["event_id"] == s.events[4].id
    last = s.events[-1]
    (nxt,) = rebuild_context(s, at=last.id)
    assert nxt["llm_response_id"] is None
    assert nxt["messages"][-1] == {"content": [{"type": "text", "text": "Created hello.txt."}], "role": "tool", "tool_call_id": "call_8_0", "name": "finish"}
    with pytest.raises(TrajkitError):
        rebuild_context(s, at="no-such-event")


def test_sequential_condensations_forget_earlier_summaries():
    s = read(FIX / "multi_summary/44444444444444444444444444444444")
    by = {e["llm_response_id"]: e["messages"] for e in rebuild_context(s)}
    texts = lambda m: [p["text"] for p in m.get("content", [])]  # noqa: E731
    assert texts(by["m3"][1]) == ["Long task.", "S1: step1 done."]
    assert texts(by["m4"][1]) == ["Long task.", "S2: steps 1-2 done."]
    assert [c["id"] for m in by["m5"] for c in m.get("tool_calls", [])] == ["d3", "d4"]
    # the pending action at the tail is not sent on a next call
    (nxt,) = rebuild_context(s, at=s.events[-1].id)
    assert [c["id"] for m in nxt["messages"] for c in m.get("tool_calls", [])] == ["d3", "d4"]


def test_calls_on_abandoned_branches_see_their_own_history():
    s = read(FIX / "branched/33333333333333333333333333333333")
    by = {e["llm_response_id"]: e["messages"] for e in rebuild_context(s)}
    assert [m["role"] for m in by["r1"]] == ["system", "user"]
    assert [m["role"] for m in by["r2"]] == ["system", "user"]
    (nxt,) = rebuild_context(s, at=s.events[6].id)
    assert [c["function"]["arguments"] for m in nxt["messages"] for c in m.get("tool_calls", [])] == ['{"command":"make"}']


def test_legacy_logs_keep_user_messages_apart():
    s = read(FIX / "legacy_execute_bash/11111111111111111111111111111111")
    (_, second) = rebuild_context(s)
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["content"][0]["text"] == "a.txt\nb.txt\n[The command completed with exit code 0.]\n[Current working directory: /ws]\n[Command finished with exit code 0]"


def test_acp_agent_context_cannot_be_rebuilt():
    with pytest.raises(ContextUnavailable, match="ACPAgent"):
        rebuild_context(FIX / "acp_agent/22222222222222222222222222222222")


def test_observation_formatters():
    from trajkit.formats.openhands_sdk.views import MAX_TERMINAL_OUTPUT, TRUNCATE_NOTICE, maybe_truncate, view

    long = "x" * 40_000
    out = maybe_truncate(long, MAX_TERMINAL_OUTPUT)
    assert len(out) == MAX_TERMINAL_OUTPUT and TRUNCATE_NOTICE in out
    assert maybe_truncate("short", MAX_TERMINAL_OUTPUT) == "short"
    obs = view(
        {
            "kind": "ObservationEvent",
            "id": "o",
            "tool_name": "terminal",
            "tool_call_id": "c",
            "observation": {"content": [{"type": "text", "text": "boom"}], "is_error": True, "metadata": {"exit_code": -1, "prefix": "", "suffix": ""}, "kind": "TerminalObservation"},
        }
    )
    assert [p["text"] for p in obs.llm_content()] == ["[An error occurred during execution.]\n", "boom"]
    generic = view({"kind": "ObservationEvent", "id": "o", "tool_name": "x", "tool_call_id": "c", "observation": {"content": "plain", "is_error": False, "kind": "MCPToolObservation"}})
    assert [p["text"] for p in generic.llm_content()] == ["plain"]


LOGGED = FIX / "logged_completions/aaaaaaaabbbbccccddddeeeeeeeeeeee"


def _disagreeing_log(tmp_path: Path) -> Path:
    """A copy of the logged fixture whose second logged request was altered."""
    import shutil

    import orjson

    dst = tmp_path / LOGGED.name
    shutil.copytree(LOGGED, dst)
    p = next((dst / "events").glob("event-00013-*.json"))
    ev = orjson.loads(p.read_bytes())
    log = json.loads(ev["log_data"])
    log["messages"][1]["content"][0]["text"] = "Say bye via terminal."
    log["messages"][2]["tool_calls"][0]["id"] = "call_X"
    ev["log_data"] = json.dumps(log)
    p.write_bytes(orjson.dumps(ev))
    return dst


def test_logged_requests_are_compared(tmp_path):
    entries = rebuild_context(LOGGED)
    assert [(e["llm_response_id"], e["logged"]["differences"]) for e in entries] == [("chatcmpl-stub-0001", []), ("chatcmpl-stub-0003", [])]
    # a log that disagrees is reported, message by message
    last = rebuild_context(_disagreeing_log(tmp_path))[-1]
    assert last["logged"]["differences"] == ["message 1 (user): text differs", "message 2 (assistant): tool calls differ"]


def test_context_check_fails_on_a_difference(cli, tmp_path):
    dst = _disagreeing_log(tmp_path)
    p = cli("context", dst, "--check")
    assert p.returncode == 1
    assert "chatcmpl-stub-0003: message 1 (user): text differs" in p.stderr
    assert "1 identical, 1 different" in p.stderr


def test_context_check_cli(cli, tmp_path):
    p = cli("context", LOGGED, "--check", "--json", check=True)
    assert "checked 2 logged request(s): 2 identical, 0 different" in p.stderr
    assert len(json.loads(p.stdout)) == 2
    p = cli("context", FIX / "multi_summary/44444444444444444444444444444444", "--check")
    assert p.returncode == 0 and "no logged requests" in p.stderr
