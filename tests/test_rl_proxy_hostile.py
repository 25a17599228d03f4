"""The capture proxy against hostile upstreams, clients and disks (issue 16,
items 12-16) and several rollouts through one proxy (issue 14, items 14-15).

Every test runs the real ``trajkit proxy`` (a subprocess, or ``serve`` in a
thread where a fault must be injected) between a real client and a real
upstream on 127.0.0.1. What the client got and what the proxy recorded are
compared with what the upstream logged it sent, parsed here independently.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import random
import re
import subprocess
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

from trajkit.rl.calls import PROXY_CODES  # noqa: E402
from trajkit.rl import proxy as proxy_mod  # noqa: E402
from trajkit.rl.proxy import EVENT, RAW, ProxyConfig, SSESplitter  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory) -> Path:
    return tiny_tokenizer.build(tmp_path_factory.mktemp("tok"))


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in lines_of(path) if x.strip()]


def upstream_log(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def sent_bytes(entry: dict) -> bytes:
    return base64.b64decode(entry["sent_b64"])


def sse_data(raw: bytes) -> list[str]:
    """The data of each SSE event, split here with a regex (not the proxy's splitter)."""
    out = []
    for ev in re.split(rb"\r?\n\r?\n", raw):
        data = [ln[5:].lstrip(b" ") for ln in ev.splitlines() if ln.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data).decode())
    return out


def codes(rec: dict) -> list[str]:
    return [d["code"] for d in rec.get("proxy_diagnostics", [])]


def stop_and_stderr(proc: subprocess.Popen) -> tuple[int, str]:
    proc.terminate()
    rc = proc.wait(30)
    return rc, proc.stderr.read().decode(errors="replace")


# ---------------------------------------------------------------- item 12: malformed upstream answers


MALFORMED = ["choices-int", "choices-object", "index-string", "index-null", "index-int"]


def test_malformed_upstream_answers_reach_the_client_and_are_recorded(tmp_path, cli):
    out = tmp_path / "rollout"
    calls = [(m, s) for m in MALFORMED for s in (True, False)]
    got = []
    with h.hostile_upstream(tmp_path / "up") as (up, log):
        with h.capture_proxy(up, out) as (base, proc):
            for model, stream in calls:
                body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": f"{model} {stream}"}]}
                got.append(h.raw_post(base, "/v1/chat/completions", json.dumps(body).encode()))
            rc, err = stop_and_stderr(proc)
    assert rc == 0, err
    sent = [e for e in upstream_log(log) if e["method"] == "POST"]
    assert len(sent) == len(calls)
    # the client got exactly what the upstream sent, never a 500
    for (status, ctype, data), e in zip(got, sent):
        assert status == 200 and ctype.startswith(e["content_type"])
        assert data == sent_bytes(e)
    # every call is recorded, in order
    recs = records(out / "trace.jsonl")
    assert [r["turn"] for r in recs] == list(range(1, len(calls) + 1))
    by = {(r["request"]["model"], r["stream"]): r for r in recs}
    ev = {(e["body"]["model"], e["body"]["stream"]): e for e in sent}

    # plain answers are recorded as sent, with a diagnostic when the shape is unusable
    for model in MALFORMED:
        r, e = by[(model, False)], ev[(model, False)]
        assert r["response"] == json.loads(sent_bytes(e))
    assert codes(by[("choices-int", False)]) == ["proxy.upstream-malformed"]
    assert codes(by[("choices-object", False)]) == ["proxy.upstream-malformed"]
    assert by[("choices-int", False)]["proxy_diagnostics"][0]["message"] == "choices is an integer, not a list"
    assert codes(by[("index-int", False)]) == []

    # streamed: unusable events are counted and kept as samples
    for model in ("choices-int", "choices-object"):
        r, e = by[(model, True)], ev[(model, True)]
        datas = [d for d in sse_data(sent_bytes(e)) if d != "[DONE]"]
        assert r["response"]["choices"] == []
        assert r["response"]["stream_bad_events"] == len(datas)
        assert r["response"]["stream_bad_event_samples"] == datas
        assert codes(r) == ["proxy.upstream-malformed"]
        assert "stream_incomplete" not in r["response"]  # [DONE] came

    # a string or null tool-call index still gives the one tool call that was streamed
    expect_call = None
    for model in ("index-int", "index-string", "index-null"):
        r, e = by[(model, True)], ev[(model, True)]
        chunks = [json.loads(d) for d in sse_data(sent_bytes(e)) if d != "[DONE]"]
        ids = [int(c["choices"][0]["logprobs"]["content"][0]["token"].split(":")[1])
               for c in chunks if c["choices"] and c["choices"][0].get("logprobs")]
        args = "".join(tc["function"].get("arguments", "") for c in chunks if c["choices"]
                       for tc in c["choices"][0]["delta"].get("tool_calls", []))
        msg = r["response"]["choices"][0]["message"]
        assert r["completion_token_ids"] == ids and r["finish_reason"] == "tool_calls"
        assert msg["content"] == "Listing."
        assert msg["tool_calls"] == [{"id": "call_h1", "type": "function", "function": {"name": "bash", "arguments": args}}]
        expect_call = expect_call or msg["tool_calls"]
        assert msg["tool_calls"] == expect_call
        if model == "index-int":
            assert codes(r) == []
        else:  # each of the three deltas was odd
            assert codes(r) == ["proxy.tool-call-index"] and r["proxy_diagnostics"][0]["count"] == 3

    # the trace reads: the proxy's notes are diagnostics, nothing crashes
    r = cli("steps", out, "--json")
    assert r.returncode == 0, r.stderr
    diag_codes = [d["code"] for d in json.loads(r.stdout)["diagnostics"]]
    assert diag_codes.count("proxy.upstream-malformed") == 4 and diag_codes.count("proxy.tool-call-index") == 2
    r = cli("turns", out, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["raw_turns"] == len(calls)


def test_proxy_codes_are_documented():
    text = (DOCS / "rl.md").read_text()
    src = (Path(proxy_mod.__file__)).read_text()
    used = set(re.findall(r'"(proxy\.[a-z]+-[a-z-]+)"', src))
    assert used and used <= PROXY_CODES
    for code in PROXY_CODES | {"rollout.proxy-note"}:
        assert f"`{code}`" in text, code


# ---------------------------------------------------------------- item 13: credentials in the upstream URL


def test_credentials_in_the_upstream_url_are_masked_and_used(tokdir, tmp_path):
    out = tmp_path / "rollout"
    secret = "S3cr@t/pw"
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, _e, requests_log):
        port = up.rsplit(":", 1)[1].split("/")[0]
        authed = f"http://agent:S3cr%40t%2Fpw@127.0.0.1:{port}/v1"
        with h.capture_proxy(authed, out) as (base, proc):
            meta = (out / "proxy.json").read_text()
            for stream in (True, False):
                status, resp = h.chat(base, {"model": "tiny-model", "stream": stream,
                                             "messages": [{"role": "user", "content": "x"}]})
                assert status == 200 and resp["choices"][0]["message"]["content"] == "Hello file task"
            status, models = h.get(base, "/v1/models")
            assert status == 200 and models["data"][0]["id"] == "tiny-model"
            rc, err = stop_and_stderr(proc)
    assert rc == 0, err
    assert json.loads(meta)["upstream"] == f"http://agent:***@127.0.0.1:{port}/v1"
    expect = "Basic " + base64.b64encode(f"agent:{secret}".encode()).decode()
    seen = [json.loads(x) for x in requests_log.read_text().splitlines()]
    assert [s["authorization"] for s in seen] == [expect, expect]  # the URL's credentials replace the client's
    assert [s["path"] for s in seen] == ["/v1/chat/completions"] * 2
    for text in (meta, err, (out / "trace.jsonl").read_text()):
        assert "S3cr" not in text and "%40t" not in text
    assert f"-> http://agent:***@127.0.0.1:{port}/v1" in err
    assert len(records(out / "trace.jsonl")) == 2


def test_upstream_url_masking():
    cfg = ProxyConfig("https://u%20x:p%3Aw@host:8443/base")
    assert cfg.base() == "https://host:8443/base/v1"
    assert cfg.authorization() == "Basic " + base64.b64encode(b"u x:p:w").decode()
    assert cfg.masked() == "https://u%20x:***@host:8443/base"
    token = ProxyConfig("http://tok123@h/v1")
    assert token.masked() == "http://***@h/v1" and token.base() == "http://h/v1"
    assert token.authorization() == "Basic " + base64.b64encode(b"tok123:").decode()
    plain = ProxyConfig("http://h:1")
    assert plain.masked() == "http://h:1" and plain.authorization() is None


# ---------------------------------------------------------------- item 14: disk full mid-record


@pytest.mark.skipif(not hasattr(__import__("resource"), "prlimit"), reason="needs prlimit (Linux)")
def test_disk_full_mid_record_leaves_later_records_whole(tokdir, tmp_path, cli):
    """A real write failure part-way through a record: the proxy's file-size
    limit is lowered so the kernel writes part of a record and then refuses
    (EFBIG, as ENOSPC would), then raised again ("space returns")."""
    import resource

    out = tmp_path / "rollout"
    trace = out / "trace.jsonl"
    body = {"model": "tiny-model", "messages": [{"role": "user", "content": "x"}]}
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, _e, _r):
        with h.capture_proxy(up, out) as (base, proc):
            assert h.chat(base, body)[0] == 200
            before = trace.read_bytes()
            soft, hard = resource.prlimit(proc.pid, resource.RLIMIT_FSIZE)
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (len(before) + 100, hard))
            status, resp = h.chat(base, body)  # its record is cut at 100 bytes by the kernel
            assert status == 200 and resp["choices"][0]["message"]["content"] == "Hello file task"  # the call went through
            assert trace.read_bytes() == before  # the partial line was taken away
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (soft, hard))  # space returns
            for _ in range(2):
                assert h.chat(base, dict(body, stream=True))[0] == 200
            rc, err = stop_and_stderr(proc)
    assert rc == 1 and "CANNOT WRITE THE TRACE" in err and "1 calls could not be written" in err
    raw = trace.read_bytes()
    assert raw.endswith(b"\n")
    recs = [json.loads(x) for x in raw.splitlines()]  # every line is a whole record
    assert [r["turn"] for r in recs] == [1, 3, 4]
    r = cli("turns", out, "--json")
    assert r.returncode == 0 and not [d for d in json.loads(r.stdout)["diagnostics"] if d["code"].startswith("jsonl.")]


class _FaultyOS:
    """``os`` for the proxy module, with a write to the trace that fails
    part-way (half written, then ENOSPC) and, when asked, an ``ftruncate``
    that fails too (EIO), once each time it is armed."""

    def __init__(self, trace: Path):
        self._real = os
        self.trace = str(trace.resolve())
        self.writes = 0  # failing writes still to make: 2 = write half, then raise
        self.truncates = 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _is_trace(self, fd) -> bool:
        try:
            return os.readlink(f"/proc/self/fd/{fd}") == self.trace
        except OSError:
            return False

    def write(self, fd, data):
        if self.writes and self._is_trace(fd):
            self.writes -= 1
            if self.writes == 1:
                return os.write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(fd, data)

    def ftruncate(self, fd, length):
        if self.truncates and self._is_trace(fd):
            self.truncates -= 1
            raise OSError(errno.EIO, "Input/output error")
        return os.ftruncate(fd, length)


class _InProcessProxy:
    """``serve`` running in a thread (so a fault can be injected into its module)."""

    def __init__(self, cfg: ProxyConfig, out: Path):
        import asyncio

        self.ready = threading.Event()
        self.result = None

        async def main():
            self.loop = asyncio.get_running_loop()
            self.stop = asyncio.Event()
            self.result = await proxy_mod.serve(cfg, out, stop=self.stop, ready=lambda host, port: self._ready(port))

        self.thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(60), "the in-process proxy did not start"

    def _ready(self, port):
        self.base = f"http://127.0.0.1:{port}/v1"
        self.ready.set()

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(60)
        return self.result


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_partial_record_that_cannot_be_removed_is_left_on_its_own_line(tokdir, tmp_path, monkeypatch, cli):
    out = tmp_path / "rollout"
    trace = out / "trace.jsonl"
    out.mkdir()
    trace.touch()
    faulty = _FaultyOS(trace)
    monkeypatch.setattr(proxy_mod, "os", faulty)
    body = {"model": "tiny-model", "messages": [{"role": "user", "content": "x"}]}
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, _e, _r):
        p = _InProcessProxy(ProxyConfig(up), out)
        try:
            assert h.chat(p.base, body)[0] == 200                     # turn 1: whole
            faulty.writes, faulty.truncates = 2, 1
            assert h.chat(p.base, body)[0] == 200                     # turn 2: half written, cannot be removed
            assert h.chat(p.base, dict(body, stream=True))[0] == 200  # turn 3: starts on a fresh line
            faulty.writes = 2
            assert h.chat(p.base, body)[0] == 200                     # turn 4: half written, removed
            assert h.chat(p.base, body)[0] == 200                     # turn 5: whole
        finally:
            result = p.close()
    assert result == {"recorded": 3, "write_errors": 2}
    lines = lines_of(trace)
    assert len(lines) == 4
    whole = [json.loads(lines[i]) for i in (0, 2, 3)]
    assert [r["turn"] for r in whole] == [1, 3, 5]
    with pytest.raises(ValueError):
        json.loads(lines[1])  # the half of turn 2, alone on its line
    assert lines[1] and b'"turn":2' in lines[1]
    r = cli("turns", out, "--json")
    doc = json.loads(r.stdout)
    assert [(d["code"], d["line"]) for d in doc["diagnostics"] if d["code"].startswith("jsonl.")] == [("jsonl.invalid-line", 2)]
    assert doc["summary"]["raw_turns"] == 3


# ---------------------------------------------------------------- item 15: huge SSE events


def test_a_huge_event_is_passed_on_and_recorded_as_cut(tmp_path, cli):
    out = tmp_path / "rollout"
    cap = 1_000_000
    with h.hostile_upstream(tmp_path / "up") as (up, log):
        with h.capture_proxy(up, out, "--max-event-bytes", str(cap)) as (base, proc):
            got = []
            for model, size in (("huge-then-answer", 3_000_000), ("huge-unterminated", 2_500_000), ("huge-unterminated", 200_000)):
                body = {"model": model, "stream": True, "x_size": size, "messages": [{"role": "user", "content": model}]}
                got.append(h.raw_post(base, "/v1/chat/completions", json.dumps(body).encode()))
            rc, err = stop_and_stderr(proc)
    assert rc == 0, err
    sent = [e for e in upstream_log(log) if e["method"] == "POST"]
    for (status, _ct, data), e in zip(got, sent):  # the client got every byte the upstream sent
        assert status == 200 and len(data) == e["len"] and hashlib.sha256(data).hexdigest() == e["sha256"]
    first, second, small = records(out / "trace.jsonl")
    # an oversize event that ends: cut, and the answer after it still assembled
    head = got[0][2]
    big = head.index(b"\n\n") + 2
    assert first["response"]["stream_cut_events"] == [{"bytes": big, "head": head[:200].decode()}]
    assert first["response"]["choices"][0]["message"]["content"] == "after" and first["completion_token_ids"] == [9]
    assert first["response"]["stream_incomplete"] is True and codes(first) == ["proxy.event-too-large"]
    # an oversize event that never ends: cut, recorded when the upstream closes
    assert second["response"]["stream_cut_events"] == [{"bytes": len(got[1][2]), "head": got[1][2][:200].decode()}]
    assert second["response"]["choices"] == [] and codes(second) == ["proxy.event-too-large"]
    # under the cap, an unterminated event is parsed at the end (not JSON here)
    assert "stream_cut_events" not in small["response"] and small["response"]["stream_bad_events"] == 1
    assert small["response"]["stream_bad_event_samples"] == [got[2][2][6:6 + 2000].decode()]
    r = cli("steps", out, "--json")
    assert r.returncode == 0
    assert [d["code"] for d in json.loads(r.stdout)["diagnostics"]].count("proxy.event-too-large") == 2


def _reference_events(stream: bytes) -> tuple[list[bytes], bytes]:
    """Events ended by a blank line (LF or CRLF line ends), over the whole stream line by line."""
    events, start = [], 0
    for m in re.finditer(rb"[^\n]*\n", stream):
        if m.group() in (b"\n", b"\r\n"):
            events.append(stream[start:m.end()])
            start = m.end()
    return events, stream[start:]


def test_sse_splitter_matches_a_reference_split_in_any_chunking():
    rnd = random.Random(7)
    parts = []
    for k in range(300):
        nl = rnd.choice([b"\n", b"\r\n"])
        body = b"data: " + (b"%d " % k) * rnd.randint(0, 40)
        parts.append(body + nl + (b": comment" + nl if k % 7 == 0 else b"") + nl)
    stream = b"".join(parts) + b"data: tail without end"
    ref_events, ref_rest = _reference_events(stream)
    for trial in range(20):
        sp = SSESplitter(None)
        got, pos = [], 0
        while pos < len(stream):
            n = rnd.randint(1, 300)
            got += sp.feed(stream[pos:pos + n])
            pos += n
        assert [k for k, _ in got] == [EVENT] * len(ref_events)
        assert [p for _, p in got] == ref_events and sp.rest() == ref_rest


def test_sse_splitter_caps_memory_and_resumes_after_the_oversize_event():
    sp = SSESplitter(1000)
    stream = b"data: a\n\n" + b"data: " + b"y" * 5000 + b"\r\n\r\n" + b"data: b\n\n"
    got = []
    for i in range(0, len(stream), 97):
        got += sp.feed(stream[i:i + 97])
        assert len(sp.buf) <= 1000 + 97
    assert b"".join(p for _, p in got) == stream  # every byte passed on, in order
    events = [p for k, p in got if k == EVENT]
    assert events == [b"data: a\n\n", b"data: b\n\n"]
    assert {k for k, _ in got} == {EVENT, RAW}
    assert sp.cut_events == [{"bytes": 5010, "head": (b"data: " + b"y" * 194).decode()}]


# ---------------------------------------------------------------- item 16: odd client bodies, unusable trace paths


def test_odd_client_bodies_are_forwarded_and_recorded(tmp_path):
    out = tmp_path / "rollout"
    bodies = [
        {"model": "ok", "stream": True, "stream_options": "yes", "messages": [{"role": "user", "content": "a"}]},
        {"model": "ok", "chat_template_kwargs": 5, "messages": [{"role": "user", "content": "b"}]},
        {"model": "ok", "stream": True, "stream_options": [1], "chat_template_kwargs": "x", "messages": []},
    ]
    with h.hostile_upstream(tmp_path / "up") as (up, log):
        with h.capture_proxy(up, out, "--disable-thinking") as (base, proc):
            got = [h.raw_post(base, "/v1/chat/completions", json.dumps(b).encode()) for b in bodies]
            rc, err = stop_and_stderr(proc)
    assert rc == 0, err
    sent = upstream_log(log)
    assert [g[0] for g in got] == [200, 200, 200]
    assert [g[2] for g in got] == [sent_bytes(e) for e in sent]
    for b, e in zip(bodies, sent):  # the odd members went upstream as the client sent them
        for k in ("stream_options", "chat_template_kwargs"):
            if k in b:
                assert e["body"][k] == b[k]
    assert sent[0]["body"]["chat_template_kwargs"] == {"enable_thinking": False}  # edits that apply still happen
    recs = records(out / "trace.jsonl")
    assert [r["request"] for r in recs] == [e["body"] for e in sent]
    assert [codes(r) for r in recs] == [["proxy.request-not-edited"], ["proxy.request-not-edited"], ["proxy.request-not-edited"] * 2]
    assert "stream_options is a string" in recs[0]["proxy_diagnostics"][0]["message"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_an_unusable_trace_path_stops_the_proxy_at_start_up(tmp_path, kind):
    out = tmp_path / "rollout"
    out.mkdir()
    trace = out / "trace.jsonl"
    if kind == "fifo":
        os.mkfifo(trace)
    elif kind == "dev-zero":
        trace.symlink_to("/dev/zero")
    else:
        trace.mkdir()
    r = subprocess.run([sys.executable, "-m", "trajkit", "proxy", "--upstream", "http://127.0.0.1:9/v1", "--out", str(out),
                        "--max-runtime", "20"], capture_output=True, text=True, timeout=60, cwd=h.REPO)
    want = {"fifo": "not a FIFO", "dev-zero": "not a character device", "directory": "not a directory"}[kind]
    assert r.returncode == 2 and "the trace must be a regular file" in r.stderr and want in r.stderr, r.stderr
    assert not (out / "proxy.json").exists()


# ---------------------------------------------------------------- issue 14 item 14: the bookkeeping anchor


def test_a_second_system_message_that_changes_per_call_drops_no_agent_turn(tokdir, tmp_path, cli):
    out = tmp_path / "rollout"
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, emitted_path, _):
        with h.capture_proxy(up, out) as (base, _proc):
            sent = h.run_agent(base, [True, False, True, True], extra_system=lambda k: f"Plugin context, call {k}")
    em = [json.loads(x) for x in emitted_path.read_text().splitlines()]
    agent = [e for e in em if e["tools"]]
    assert len(agent) == 4 and len({json.dumps(e["messages"][1]) for e in agent}) == 4  # the second system message changed every call
    assert [b["messages"] for b in sent[1:]] == [e["messages"] for e in agent]
    r = cli("turns", out, "--tokenizer", tokdir, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["kept_turns"] == 4 and doc["summary"]["trained_turns"] == 3
    assert [(d["turn"], d["purpose"]) for d in doc["dropped"]] == [(1, "title")]
    assert [t["output_ids"] for t in doc["turns"]] == [e["ids"] for e in agent]
    assert [t["prompt_ids"] for t in doc["turns"]] == [e["prompt_ids"] for e in agent]


# ---------------------------------------------------------------- issue 14 item 15: several rollouts through one proxy


def test_twenty_concurrent_rollouts_through_one_proxy_give_twenty_exact_turn_sets(tokdir, tmp_path, cli):
    out = tmp_path / "proxy-out"
    n = 20
    ids = [f"grpo-s3.p{k}" for k in range(n)]
    tasks = {rid: f"Rollout {k}: create hello.txt containing hello." for k, rid in enumerate(ids)}
    with h.stub_upstream(tokdir, tmp_path / "stub", "--delay", "0.001") as (up, emitted_path, _):
        with h.capture_proxy(up, out, "--quiet") as (base, proc):
            root = base[: -len("/v1")]
            barrier = threading.Barrier(n)

            def one(k):
                rid = ids[k]
                barrier.wait(30)
                if k % 2:  # half name their rollout by the path, half by the header
                    return h.run_agent(f"{root}/r/{rid}/v1", [True, False, True, True], task=tasks[rid])
                return h.run_agent(base, [True, False, True, True], task=tasks[rid], headers={"X-Trajkit-Rollout": rid})

            with ThreadPoolExecutor(n) as pool:
                sent = dict(zip(ids, pool.map(one, range(n))))
            # unusable names are refused (400) and recorded in the main trace
            bad = h.raw_post(base, "/v1/chat/completions", b'{"model": "tiny-model", "messages": []}', {"X-Trajkit-Rollout": "../../etc"})
            clash = h.raw_post(base, f"/r/{ids[0]}/v1/chat/completions", b"{}", {"X-Trajkit-Rollout": ids[1]})
            assert bad[0] == 400 and clash[0] == 400 and b"invalid rollout id" in bad[2]
            rc, err = stop_and_stderr(proc)
    assert rc == 0, err
    em = [json.loads(x) for x in emitted_path.read_text().splitlines()]
    main = records(out / "trace.jsonl")
    assert [codes(r) for r in main] == [["proxy.bad-rollout"], ["proxy.bad-rollout"]]
    for rid in ids:
        recs = records(out / "rollouts" / rid / "trace.jsonl")
        assert [r["turn"] for r in recs] == [1, 2, 3, 4, 5] and {r["rollout"] for r in recs} == {rid}
        assert [r["request"]["messages"] for r in recs] == [b["messages"] for b in sent[rid]]

    r = cli("turns", out, "--tokenizer", tokdir, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    docs = {d["summary"]["rollout"]: d for d in doc["rollouts"]}
    # the main trace (the two refused calls) first, then each rollout, by id
    assert list(docs) == [str(out)] + [str(out / "rollouts" / rid) for rid in sorted(ids)] and doc["skipped"] == []
    assert docs[str(out)]["summary"]["kept_turns"] == 0 and docs[str(out)]["summary"]["dropped_turns"] == 2
    docs = {Path(k).name: v for k, v in docs.items()}
    for rid in ids:
        mine = sorted((e for e in em if e["tools"] and e["messages"][1]["content"] == tasks[rid]), key=lambda e: len(e["messages"]))
        d = docs[rid]
        assert d["summary"]["kept_turns"] == 4 and d["summary"]["drifted_turns"] == 0
        assert [(x["turn"], x["purpose"]) for x in d["dropped"]] == [(1, "title")]
        assert [t["output_ids"] for t in d["turns"]] == [e["ids"] for e in mine]
        assert [t["prompt_ids"] for t in d["turns"]] == [e["prompt_ids"] for e in mine]
        assert [t["per_token_logps"] for t in d["turns"]] == [e["logprobs"] for e in mine]


def test_a_rollout_trace_that_cannot_be_written_goes_to_the_main_trace(tokdir, tmp_path):
    out = tmp_path / "proxy-out"
    (out / "rollouts" / "r1").mkdir(parents=True)
    os.mkfifo(out / "rollouts" / "r1" / "trace.jsonl")
    with h.stub_upstream(tokdir, tmp_path / "stub") as (up, _e, _r):
        with h.capture_proxy(up, out) as (base, proc):
            t0 = time.time()
            status, _ = h.chat(base, {"model": "tiny-model", "messages": [{"role": "user", "content": "x"}]},
                               headers={"X-Trajkit-Rollout": "r1"}, timeout=30)
            assert status == 200 and time.time() - t0 < 20
            rc, err = stop_and_stderr(proc)
    assert rc == 0, err
    (rec,) = records(out / "trace.jsonl")
    assert rec["rollout"] == "r1" and codes(rec) == ["proxy.rollout-unwritable"]
    assert "not a FIFO" in rec["proxy_diagnostics"][0]["message"]
