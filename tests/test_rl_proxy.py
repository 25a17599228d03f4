"""The capture proxy, end to end on 127.0.0.1: a vLLM-like stub upstream, the
real ``trajkit proxy`` subprocess, a scripted client, then ``trajkit turns``
on what was recorded. Also: 50 concurrent streams, a killed proxy, a client
that goes away, an unreachable upstream, and the SSE/stream helpers."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "rl"))
import rl_harness as h  # noqa: E402
import tiny_tokenizer  # noqa: E402

pytest.importorskip("aiohttp")

from trajkit.rl.proxy import EVENT, ProxyConfig, SSESplitter, StreamAssembler, _event_data, build_record, edit_request  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory) -> Path:
    return tiny_tokenizer.build(tmp_path_factory.mktemp("tok"))


def records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines() if x.strip()]


def emitted(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def turns_json(cli, out: Path, tokdir: Path, *extra) -> dict:
    r = cli("turns", out, "--tokenizer", tokdir, "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_end_to_end_turns_are_exact(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, emitted_path, _):
        with h.capture_proxy(up, out) as (base, _proc):
            status, models = h.get(base, "/v1/models")
            assert status == 200 and models["data"][0]["id"] == "tiny-model"
            sent = h.run_agent(base, [True, False, True, True])
            status, err = h.chat(base, {"model": "error-model", "messages": [{"role": "user", "content": "x"}]})
            assert status == 500 and err["error"]["message"] == "upstream exploded"
        em = emitted(emitted_path)
    recs = records(out)
    # one whole record per call, numbered on arrival
    assert [r["turn"] for r in recs] == [1, 2, 3, 4, 5, 6]
    assert [r["stream"] for r in recs] == [True, True, False, True, True, False]
    for r in recs:
        req = r["request"]
        assert req["logprobs"] is True and req["top_logprobs"] == 5
        assert req["return_tokens_as_token_ids"] is True
    assert recs[1]["request"]["stream_options"] == {"include_usage": True}
    assert recs[0]["request"]["stream_options"] == {"include_usage": True}  # added by the proxy
    # the forwarded conversation is the client's
    assert [r["request"]["messages"] for r in recs[:5]] == [b["messages"] for b in sent]
    # what was recorded is exactly what the upstream sent
    for r, e in zip(recs[:5], em):
        assert r["completion_token_ids"] == e["ids"]
        assert r["per_token_logps"] == e["logprobs"]
        assert r["completion_tokens"] == [f"token_id:{i}" for i in e["ids"]]
        assert r["response"]["usage"]["completion_tokens"] == len(e["ids"])
        assert len(r["logprobs"][0]["top_logprobs"]) == 3
    # streams were reassembled into one chat.completion
    msg = recs[1]["response"]["choices"][0]["message"]
    assert msg["content"] == "I will list the files first."
    assert msg["tool_calls"] == [{"id": "call_0_0", "type": "function",
                                  "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}}]
    assert recs[1]["finish_reason"] == "tool_calls"
    assert "content" not in recs[3]["response"]["choices"][0]["message"]  # empty content is omitted
    # the upstream error is recorded, not lost
    assert recs[5]["response"]["choices"] == [] and recs[5]["response"]["upstream_status"] == 500
    assert recs[5]["response"]["upstream_error"] == {"error": {"message": "upstream exploded", "type": "server_error"}}

    doc = turns_json(cli, out, tokdir, "--reward", "1.0", "--out", tmp_path / "turns.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "turns.jsonl").read_text().splitlines()]
    agent = [e for e in em if e["tools"]]
    assert len(rows) == 4
    assert [r["turn"] for r in rows] == [2, 3, 4, 5]
    assert [r["output_ids"] for r in rows] == [e["ids"] for e in agent]
    assert [r["per_token_logps"] for r in rows] == [e["logprobs"] for e in agent]
    assert [r["prompt_ids"] for r in rows] == [e["prompt_ids"] for e in agent]  # re-tokenized = what the server rendered
    assert [r["prompt_source"] for r in rows] == ["retokenized"] * 4
    assert [r["mask"] for r in rows] == [[0] * len(e["prompt_ids"]) + [1] * len(e["ids"]) for e in agent]
    assert [r["trained"] for r in rows] == [True, True, True, False]
    assert [[c["name"] for c in r["tool_calls"]] for r in rows] == [["bash"], ["read"], ["bash"], []]
    s = doc["summary"]
    assert (s["reward"], s["raw_turns"], s["kept_turns"], s["trained_turns"], s["dropped_turns"]) == (1.0, 6, 4, 3, 2)
    assert s["tool_calls_by_tool"] == {"bash": 2, "read": 1}
    assert s["drifted_turns"] == 0
    assert [(d["turn"], d["purpose"], d["reason"]) for d in doc["dropped"]] == [
        (1, "title", "title call (not the agent's system prompt and tools)"),
        (6, "other", "upstream error (status 500)"),
    ]
    warn = [d["code"] for d in doc["diagnostics"] if d["severity"] != "info"]
    assert warn == ["rollout.upstream-error"]
    # the same rollout reads as a session: steps and show work
    r = cli("steps", out, "--json")
    assert r.returncode == 0, r.stderr
    steps = json.loads(r.stdout)["steps"]
    assert [s["action"] for s in steps] == ["ls -la", 'read({"filePath": "hello.txt"})', "echo hello > hello.txt && cat hello.txt"]
    assert [s["observation"] for s in steps] == ["total 8\nhello.txt", "hello", "total 8\nhello.txt"]


def test_captured_token_ids(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub", "--token-ids") as (up, emitted_path, _):
        with h.capture_proxy(up, out) as (base, _proc):
            h.run_agent(base, [True, False, True])
        em = emitted(emitted_path)
    recs = records(out)
    assert recs[1]["request"]["return_token_ids"] is True
    assert [r["prompt_token_ids"] for r in recs] == [e["prompt_ids"] for e in em]
    assert [r["completion_token_ids"] for r in recs] == [e["ids"] for e in em]
    doc = turns_json(cli, out, tokdir)
    assert [t["prompt_source"] for t in doc["turns"]] == ["captured"] * 3
    assert [t["prompt_ids"] for t in doc["turns"]] == [e["prompt_ids"] for e in em[1:]]
    assert "turns.retokenize-mismatch" not in [d["code"] for d in doc["diagnostics"]]


def test_dropped_tool_call_tokens_are_caught(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub", "--drop-tool-markup") as (up, _e, _):
        with h.capture_proxy(up, out) as (base, _proc):
            h.run_agent(base, [True, False, True, True])
    doc = turns_json(cli, out, tokdir)
    by_code: dict[str, list] = {}
    for d in doc["diagnostics"]:
        by_code.setdefault(d["code"], []).append(d.get("event_id"))
    # streamed tool-call turns lost their markup tokens; the plain-JSON one did not
    assert by_code["turns.tool-call-tokens-missing"] == ["turn-2", "turn-4"]
    assert by_code["turns.usage-mismatch"] == ["turn-2", "turn-4"]
    r = cli("turns", out, "--tokenizer", tokdir, "--strict")
    assert r.returncode == 1


def test_fifty_concurrent_streams(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    n = 50
    with h.stub_upstream(tokdir, tmp_path / "stub", "--delay", "0.01") as (up, _e, _):
        with h.capture_proxy(up, out, "--quiet") as (base, _proc):
            barrier = threading.Barrier(n)

            def one(k):
                body = {"model": "tiny-model", "stream": True, "tools": h.TOOLS, "stream_options": {"include_usage": True},
                        "messages": [{"role": "system", "content": h.SYSTEM}, {"role": "user", "content": f"task {k}"}]}
                barrier.wait(30)
                return h.chat(base, body, timeout=120)

            with ThreadPoolExecutor(n) as pool:
                results = list(pool.map(one, range(n)))
    assert all(status == 200 for status, _ in results)
    assert all(resp["chunks"] > 20 for _, resp in results)
    raw = (out / "trace.jsonl").read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == n
    recs = records(out)
    assert sorted(r["turn"] for r in recs) == list(range(1, n + 1))
    assert sorted(r["request"]["messages"][1]["content"] for r in recs) == sorted(f"task {k}" for k in range(n))
    first = recs[0]["completion_token_ids"]
    for r in recs:
        assert r["finish_reason"] == "tool_calls"
        assert r["completion_token_ids"] == first and len(first) > 20
        assert len(r["per_token_logps"]) == r["response"]["usage"]["completion_tokens"] == len(first)
        assert r["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"command": "ls -la"}'
    doc = turns_json(cli, out, tokdir)
    assert doc["summary"]["kept_turns"] == n and doc["summary"]["trained_turns"] == n
    # 50 independent conversations: each prompt drifts from the last, but no token was lost
    lost = {"turns.usage-mismatch", "turns.missing-logprobs", "turns.tool-call-tokens-missing", "jsonl.truncated-line"}
    assert not [d for d in doc["diagnostics"] if d["code"] in lost]


def test_killed_proxy_leaves_a_readable_trace(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub", "--slow-delay", "0.3") as (up, _e, requests_log):
        with h.capture_proxy(up, out) as (base, proc):
            h.run_agent(base, [True, False])  # title + 2 agent turns, recorded
            assert len(records(out)) == 3

            def slow(k):
                body = {"model": "slow-model", "stream": True, "tools": h.TOOLS,
                        "messages": [{"role": "system", "content": h.SYSTEM}, {"role": "user", "content": f"slow {k}"}]}
                try:
                    return h.chat(base, body, timeout=30)
                except (OSError, http.client.HTTPException) as e:
                    return e

            with ThreadPoolExecutor(4) as pool:
                futs = [pool.submit(slow, k) for k in range(4)]
                h.wait_for(lambda: requests_log.read_text().count("slow-model") == 4, 30, "the slow calls to reach the upstream")
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
                outcomes = [f.result() for f in futs]
        assert all(not (isinstance(o, tuple) and o[0] == 200 and o[1].get("choices", [{}])[0].get("finish_reason")) for o in outcomes)
        # a kill never leaves half a record: the calls in flight are simply not there
        raw = (out / "trace.jsonl").read_bytes()
        assert raw.endswith(b"\n") and raw.count(b"\n") == 3
        r = cli("turns", out, "--tokenizer", tokdir, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["summary"]["kept_turns"] == 2
        assert not [d for d in doc["diagnostics"] if d["code"].startswith("jsonl.")]

        # a torn write (power loss mid-record) leaves a cut final line: reported, prefix read
        whole = (out / "trace.jsonl").read_bytes().splitlines(keepends=True)
        with open(out / "trace.jsonl", "ab") as f:
            f.write(whole[1][: len(whole[1]) // 2])
        doc = json.loads(cli("turns", out, "--tokenizer", tokdir, "--json").stdout)
        cut = [d for d in doc["diagnostics"] if d["code"] == "jsonl.truncated-line"]
        assert len(cut) == 1 and cut[0]["line"] == 4
        assert doc["summary"]["raw_turns"] == 3 and doc["summary"]["kept_turns"] == 2

        # a proxy restarted on the same directory keeps the cut line alone and numbers on
        with h.capture_proxy(up, out) as (base, _proc):
            status, _ = h.chat(base, {"model": "tiny-model", "messages": [{"role": "user", "content": "again"}]})
            assert status == 200
    lines = (out / "trace.jsonl").read_bytes().splitlines()
    assert len(lines) == 5 and json.loads(lines[4])["turn"] == 4
    doc = json.loads(cli("turns", out, "--tokenizer", tokdir, "--json").stdout)
    bad = [d for d in doc["diagnostics"] if d["code"].startswith("jsonl.")]
    assert [(d["code"], d["line"]) for d in bad] == [("jsonl.invalid-line", 4)]
    assert doc["summary"]["raw_turns"] == 4


def test_client_that_goes_away_still_gets_recorded(tokdir, tmp_path):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub", "--slow-delay", "0.05") as (up, emitted_path, _):
        with h.capture_proxy(up, out) as (base, _proc):
            port = int(base.rsplit(":", 1)[1].split("/")[0])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            body = {"model": "slow-model", "stream": True, "tools": h.TOOLS,
                    "messages": [{"role": "system", "content": h.SYSTEM}, {"role": "user", "content": "bye"}]}
            conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            resp.fp.readline()  # the first event, then hang up
            conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()
            h.wait_for(lambda: (out / "trace.jsonl").exists() and records(out), 60, "the record")
        em = emitted(emitted_path)
    rec = records(out)[0]
    assert rec["finish_reason"] == "tool_calls"
    assert rec["completion_token_ids"] == em[0]["ids"]


def test_upstream_stream_breaks_off(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, emitted_path, _):
        with h.capture_proxy(up, out) as (base, _proc):
            status, resp = h.chat(base, {"model": "break-model", "stream": True, "tools": h.TOOLS,
                                         "messages": [{"role": "system", "content": h.SYSTEM}, {"role": "user", "content": "x"}]})
            assert status == 200 and resp["choices"][0]["finish_reason"] is None
        em = emitted(emitted_path)
    rec = records(out)[0]
    assert rec["response"]["stream_incomplete"] is True
    half = len(em[0]["ids"]) // 2
    assert rec["completion_token_ids"] == em[0]["ids"][:half]  # what arrived is kept
    doc = turns_json(cli, out, tokdir)
    assert doc["dropped"] == [{"turn": 1, "event_id": "turn-1", "purpose": "agent", "reason": "the streamed answer broke off"}]
    assert "rollout.stream-incomplete" in [d["code"] for d in doc["diagnostics"]]


def test_unreachable_upstream_is_recorded(tmp_path, cli, tokdir):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    out = tmp_path / "rollout"
    with h.capture_proxy(f"http://127.0.0.1:{dead}/v1", out) as (base, _proc):
        status, err = h.chat(base, {"model": "m", "stream": True, "tools": h.TOOLS,
                                    "messages": [{"role": "system", "content": h.SYSTEM}, {"role": "user", "content": "x"}]})
        assert status == 502 and "upstream failed" in err["error"]["message"]
        status, _ = h.get(base, "/v1/models")
        assert status == 502
        bad = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1].split("/")[0]), timeout=10)
        bad.request("POST", "/v1/chat/completions", b"{not json", {"Content-Type": "application/json"})
        assert bad.getresponse().status == 400
    recs = records(out)
    assert len(recs) == 2
    assert recs[0]["response"]["choices"] == [] and recs[0]["response"]["upstream_status"] is None
    assert "ClientConnectorError" in recs[0]["response"]["upstream_error"] or "Connect" in recs[0]["response"]["upstream_error"]
    assert recs[1]["request"] == {"_unparsed_body": "{not json"}
    doc = turns_json(cli, out, tokdir)
    assert doc["summary"]["kept_turns"] == 0 and doc["summary"]["dropped_turns"] == 2


def test_proxy_cli_errors(cli, tmp_path):
    r = cli("proxy", "--upstream", "127.0.0.1:1", "--out", tmp_path / "x")
    assert r.returncode == 2 and "http(s) URL" in r.stderr
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        r = cli("proxy", "--upstream", "http://127.0.0.1:1", "--out", tmp_path / "y", "--port", str(s.getsockname()[1]))
        assert r.returncode == 2 and "cannot listen" in r.stderr
    finally:
        s.close()


def test_request_edits():
    cfg = ProxyConfig("http://h:1/v1", top_logprobs=3, max_tokens_cap=100, model_override="org/Model", disable_thinking=True)
    assert cfg.base() == "http://h:1/v1" and ProxyConfig("http://h:1").base() == "http://h:1/v1"
    body = {"model": "Model", "max_tokens": 32000, "stream": True, "messages": []}
    fwd = edit_request(body, cfg)
    assert body == {"model": "Model", "max_tokens": 32000, "stream": True, "messages": []}  # the client's body is not touched
    assert fwd == {"model": "org/Model", "max_tokens": 100, "stream": True, "messages": [], "logprobs": True,
                   "top_logprobs": 3, "return_tokens_as_token_ids": True, "return_token_ids": True,
                   "stream_options": {"include_usage": True}, "chat_template_kwargs": {"enable_thinking": False}}
    # what the client set stays
    fwd = edit_request({"logprobs": False, "top_logprobs": 1}, ProxyConfig("http://h", vllm=False))
    assert fwd == {"logprobs": False, "top_logprobs": 1}


def test_sse_splitting_and_reassembly():
    sp = SSESplitter()
    pieces = sp.feed(b'data: {"a":1}\n\ndata: {"b"\r\n\r\ndata: [DO')
    assert pieces == [(EVENT, b'data: {"a":1}\n\n'), (EVENT, b'data: {"b"\r\n\r\n')] and sp.rest() == b"data: [DO"
    assert _event_data(b"event: x\ndata: a\ndata: b\n\n") == "a\nb"
    assert _event_data(b": keep-alive\n\n") is None
    asm = StreamAssembler()
    for d in [
        '{"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
        '{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}',
        '{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"ba"}}]}}]}',
        '{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"sh","arguments":"{\\"a\\""}}]}}]}',
        '{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": 1}"}}]},'
        '"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5}]},"token_ids":[7]}]}',
        '{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
        "not json",
        '{"id":"c1","choices":[],"usage":{"completion_tokens":1}}',
        "[DONE]",
    ]:
        asm.feed_event(d)
    res = asm.result()
    assert res["choices"] == [{"index": 0, "finish_reason": "tool_calls",
                               "message": {"role": "assistant", "reasoning": "hmm", "tool_calls": [
                                   {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": '{"a": 1}'}}]},
                               "logprobs": {"content": [{"token": "token_id:7", "logprob": -0.5}]}, "token_ids": [7]}]
    assert res["usage"] == {"completion_tokens": 1} and res["stream_bad_events"] == 1 and "stream_incomplete" not in res
    rec = build_record(3, {"m": 1}, res, time.time(), True)
    assert rec["completion_token_ids"] == [7] and rec["per_token_logps"] == [-0.5] and rec["finish_reason"] == "tool_calls"
    # a stream that never finished says so
    asm = StreamAssembler()
    asm.feed_event('{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}')
    assert asm.result()["stream_incomplete"] is True
