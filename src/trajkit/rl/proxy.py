"""The capture proxy: an OpenAI-compatible endpoint that forwards an agent's
model calls to an upstream server (vLLM) and records each one, with the exact
token ids and logprobs, as one line of a rollout trace.

It serves ``POST /v1/chat/completions`` (streaming and not) and passes
``GET /v1/models`` (and any other path) through untouched. On every chat call
it asks the upstream for logprobs (``logprobs``, ``top_logprobs``) and, for
vLLM, for token ids (``return_tokens_as_token_ids``, ``return_token_ids``); it
streams the answer back to the client as it arrives while reassembling it into
one ``chat.completion`` response, then appends a record in the OpenEnv
``TurnRecord`` shape (``shared/formats/opencode.md`` §2) to ``trace.jsonl``
with ``fsync``, before the client sees the end of the answer. Each record is
one ``write`` of one whole line, so a crash leaves a valid prefix. Upstream
errors are recorded with empty ``choices`` and ``upstream_status`` /
``upstream_error`` and passed back to the client.

Needs the ``proxy`` extra (``aiohttp``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import orjson

from .calls import parse_token_id

TRACE_NAME = "trace.jsonl"
#: Request headers forwarded upstream (the rest, hop-by-hop ones included, are not).
FORWARD_HEADERS = ("authorization", "openai-organization", "openai-project", "user-agent", "accept", "x-api-key")


@dataclass
class ProxyConfig:
    """How the proxy edits and forwards calls.

    ``upstream``: the server's base URL (with or without ``/v1``).
    ``top_logprobs``: alternatives per token to ask for. ``vllm``: also ask
    for token ids (vLLM's ``return_tokens_as_token_ids`` and
    ``return_token_ids``; turn off for servers that reject unknown fields).
    ``max_tokens_cap``: cap ``max_tokens`` / ``max_completion_tokens``.
    ``model_override``: replace ``model``. ``disable_thinking``: set
    ``chat_template_kwargs.enable_thinking = false``. ``timeout``: seconds
    allowed per upstream call.
    """

    upstream: str
    top_logprobs: int = 5
    vllm: bool = True
    max_tokens_cap: int | None = None
    model_override: str | None = None
    disable_thinking: bool = False
    timeout: float = 600.0

    def base(self) -> str:
        """The upstream URL the ``/chat/completions`` path is appended to."""
        u = self.upstream.rstrip("/")
        return u if u.endswith("/v1") else u + "/v1"


def edit_request(body: dict[str, Any], cfg: ProxyConfig) -> dict[str, Any]:
    """The body forwarded upstream: the client's, plus what the capture needs."""
    fwd = dict(body)
    fwd.setdefault("logprobs", True)
    if fwd.get("logprobs") and "top_logprobs" not in fwd and cfg.top_logprobs is not None:
        fwd["top_logprobs"] = cfg.top_logprobs
    if cfg.vllm:
        fwd.setdefault("return_tokens_as_token_ids", True)
        fwd.setdefault("return_token_ids", True)
    if fwd.get("stream"):
        so = dict(fwd.get("stream_options") or {})
        so.setdefault("include_usage", True)
        fwd["stream_options"] = so
    if cfg.max_tokens_cap is not None:
        for k in ("max_tokens", "max_completion_tokens"):
            v = fwd.get(k)
            if isinstance(v, int) and v > cfg.max_tokens_cap:
                fwd[k] = cfg.max_tokens_cap
        if "max_tokens" not in fwd and "max_completion_tokens" not in fwd:
            fwd["max_tokens"] = cfg.max_tokens_cap
    if cfg.model_override:
        fwd["model"] = cfg.model_override
    if cfg.disable_thinking:
        kw = dict(fwd.get("chat_template_kwargs") or {})
        kw["enable_thinking"] = False
        fwd["chat_template_kwargs"] = kw
    return fwd


class StreamAssembler:
    """Rebuilds one ``chat.completion`` response from the SSE chunks of a
    streamed one: content, reasoning and tool-call deltas concatenated,
    logprob entries and token ids appended, usage from the last chunk."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.prompt_token_ids: list[int] | None = None
        self.bad_events = 0
        self.error: Any = None
        self.done = False

    def feed_event(self, data: str) -> None:
        """Take the ``data`` of one SSE event."""
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.bad_events += 1
            return
        if not isinstance(obj, dict):
            self.bad_events += 1
            return
        if "error" in obj and not obj.get("choices"):
            self.error = obj["error"]
        for k in ("id", "model", "created", "system_fingerprint"):
            if k in obj and k not in self.head:
                self.head[k] = obj[k]
        if obj.get("usage") is not None:
            self.usage = obj["usage"]
        if isinstance(obj.get("prompt_token_ids"), list):
            self.prompt_token_ids = obj["prompt_token_ids"]
        for ch in obj.get("choices") or []:
            if not isinstance(ch, dict):
                continue
            i = ch.get("index", 0) if isinstance(ch.get("index", 0), int) else 0
            slot = self.choices.setdefault(
                i, {"role": None, "content": [], "reasoning": [], "tool_calls": {}, "finish_reason": None, "logprobs": None, "token_ids": None}
            )
            delta = ch.get("delta") if isinstance(ch.get("delta"), dict) else {}
            if isinstance(delta.get("role"), str):
                slot["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                slot["content"].append(delta["content"])
            for key in ("reasoning", "reasoning_content"):
                if isinstance(delta.get(key), str):
                    slot["reasoning"].append(delta[key])
            for tc in delta.get("tool_calls") or []:
                if not isinstance(tc, dict):
                    continue
                j = tc.get("index", len(slot["tool_calls"]))
                t = slot["tool_calls"].setdefault(j, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                if tc.get("id"):
                    t["id"] = tc["id"]
                if tc.get("type"):
                    t["type"] = tc["type"]
                fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                if isinstance(fn.get("name"), str):
                    t["function"]["name"] += fn["name"]
                if isinstance(fn.get("arguments"), str):
                    t["function"]["arguments"] += fn["arguments"]
            if ch.get("finish_reason") is not None:
                slot["finish_reason"] = ch["finish_reason"]
            lp = ch.get("logprobs")
            if isinstance(lp, dict) and isinstance(lp.get("content"), list):
                if slot["logprobs"] is None:
                    slot["logprobs"] = []
                slot["logprobs"].extend(lp["content"])
            if isinstance(ch.get("token_ids"), list):
                if slot["token_ids"] is None:
                    slot["token_ids"] = []
                slot["token_ids"].extend(ch["token_ids"])

    def result(self) -> dict[str, Any]:
        """The reassembled response."""
        out: dict[str, Any] = {"id": self.head.get("id"), "object": "chat.completion"}
        for k in ("created", "model", "system_fingerprint"):
            if k in self.head:
                out[k] = self.head[k]
        choices = []
        for i in sorted(self.choices):
            s = self.choices[i]
            msg: dict[str, Any] = {"role": s["role"] or "assistant"}
            content = "".join(s["content"])
            if content:
                msg["content"] = content
            if s["reasoning"]:
                msg["reasoning"] = "".join(s["reasoning"])
            if s["tool_calls"]:
                msg["tool_calls"] = [s["tool_calls"][j] for j in sorted(s["tool_calls"])]
            c: dict[str, Any] = {"index": i, "message": msg, "finish_reason": s["finish_reason"]}
            if s["logprobs"] is not None:
                c["logprobs"] = {"content": s["logprobs"]}
            if s["token_ids"] is not None:
                c["token_ids"] = s["token_ids"]
            choices.append(c)
        out["choices"] = choices
        out["usage"] = self.usage
        if self.prompt_token_ids is not None:
            out["prompt_token_ids"] = self.prompt_token_ids
        if self.error is not None:
            out["upstream_error"] = self.error
        if self.bad_events:
            out["stream_bad_events"] = self.bad_events
        if not self.done:
            out["stream_incomplete"] = True
        return out


def build_record(turn: int, request: dict[str, Any], response: dict[str, Any], t0: float, stream: bool) -> dict[str, Any]:
    """One trace record (OpenEnv ``TurnRecord`` fields, plus ``prompt_token_ids``
    when the server returned them and ``stream``)."""
    choices = response.get("choices") or []
    ch = choices[0] if choices and isinstance(choices[0], dict) else {}
    lp = ch.get("logprobs")
    entries = lp.get("content") if isinstance(lp, dict) and isinstance(lp.get("content"), list) else []
    tokens = [e.get("token") if isinstance(e, dict) else None for e in entries]
    ids: list[int] = []
    if isinstance(ch.get("token_ids"), list):
        ids = list(ch["token_ids"])
    else:
        parsed = [parse_token_id(t) for t in tokens]
        if parsed and all(p is not None for p in parsed):
            ids = parsed  # type: ignore[assignment]
    rec: dict[str, Any] = {
        "turn": turn,
        "request": request,
        "response": response,
        "logprobs": entries,
        "completion_tokens": tokens,
        "completion_token_ids": ids,
        "per_token_logps": [e["logprob"] for e in entries if isinstance(e, dict) and isinstance(e.get("logprob"), (int, float))],
        "finish_reason": ch.get("finish_reason"),
        "latency_s": round(time.time() - t0, 6),
        "timestamp": time.time(),
        "stream": stream,
    }
    if isinstance(response.get("prompt_token_ids"), list):
        rec["prompt_token_ids"] = response["prompt_token_ids"]
    return rec


class TraceWriter:
    """Appends records to a trace file, one ``write`` + ``fsync`` per record,
    safe from many threads. A file left with a cut final line (a crash) gets a
    newline first, so the cut line stays alone and later records stay whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.repaired = False
        self.last_turn = 0
        if path.exists() and path.stat().st_size:
            data = path.read_bytes()
            for line in data.splitlines():
                try:
                    t = orjson.loads(line).get("turn")
                except (orjson.JSONDecodeError, AttributeError):
                    continue
                if isinstance(t, int) and t > self.last_turn:
                    self.last_turn = t
            if not data.endswith(b"\n"):
                self.repaired = True
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.repaired:
            self._write(b"\n")
        self.count = 0

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def append(self, record: dict[str, Any]) -> None:
        try:
            line = orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS) + b"\n"
        except TypeError:
            import json

            line = json.dumps(record, ensure_ascii=False).encode() + b"\n"
        with self._lock:
            self._write(line)
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _split_events(buf: bytes) -> tuple[list[bytes], bytes]:
    """Complete SSE events (each with its blank-line terminator) and the rest."""
    events = []
    while True:
        i = buf.find(b"\n\n")
        j = buf.find(b"\r\n\r\n")
        if i < 0 and j < 0:
            return events, buf
        if j >= 0 and (i < 0 or j < i):
            end = j + 4
        else:
            end = i + 2
        events.append(buf[:end])
        buf = buf[end:]


def _event_data(event: bytes) -> str | None:
    lines = event.replace(b"\r\n", b"\n").split(b"\n")
    data = [ln[5:].lstrip(b" ") if ln.startswith(b"data:") else None for ln in lines]
    parts = [d for d in data if d is not None]
    if not parts:
        return None
    return b"\n".join(parts).decode("utf-8", errors="replace")


class CaptureProxy:
    """The proxy's aiohttp application, its upstream client and its trace."""

    def __init__(self, cfg: ProxyConfig, out_dir: Path, log: Callable[[str], None] | None = None) -> None:
        self.cfg = cfg
        self.out_dir = Path(out_dir)
        self.writer = TraceWriter(self.out_dir / TRACE_NAME)
        self.turn = self.writer.last_turn
        self.log = log or (lambda s: None)
        self.in_flight = 0
        self.write_errors = 0
        self._client = None
        if self.writer.repaired:
            self.log(f"note: {self.writer.path} ended in a cut line (an earlier crash); new records start on a new line")

    def app(self):
        from aiohttp import web

        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/chat/completions", self.chat)
        app.router.add_route("*", "/{tail:.*}", self.passthrough)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, app) -> None:
        import aiohttp

        self._client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=self.cfg.timeout, sock_connect=30),
            auto_decompress=True,
        )

    async def _close(self, app) -> None:
        if self._client is not None:
            await self._client.close()
        self.writer.close()

    def _headers(self, request) -> dict[str, str]:
        return {k: v for k, v in request.headers.items() if k.lower() in FORWARD_HEADERS}

    async def _record(self, rec: dict[str, Any]) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(None, self.writer.append, rec)
        except OSError as e:  # a full disk must not take the agent's call down with it
            self.write_errors += 1
            self.log(f"turn {rec.get('turn')}: CANNOT WRITE THE TRACE ({e.strerror or e}); this call is not recorded")

    async def passthrough(self, request):
        """Any other path (``/v1/models``, ...): forwarded as is, not recorded."""
        from aiohttp import ClientError, web

        path = request.match_info.get("tail", "")
        if path.startswith("v1/"):
            path = path[3:]
        url = self.cfg.base() + "/" + path
        body = await request.read()
        try:
            async with self._client.request(
                request.method, url, data=body or None, headers=self._headers(request), params=request.query
            ) as up:
                data = await up.read()
                return web.Response(
                    status=up.status, body=data, content_type=(up.content_type or "application/json")
                )
        except (ClientError, asyncio.TimeoutError, OSError) as e:
            return web.json_response({"error": {"message": f"upstream unreachable: {e}", "type": "proxy_error"}}, status=502)

    async def chat(self, request):
        """``POST /v1/chat/completions``: forward, stream back, record."""
        from aiohttp import ClientError, web

        t0 = time.time()
        self.turn += 1
        turn = self.turn
        self.in_flight += 1
        try:
            return await self._chat(request, turn, t0, web, ClientError)
        finally:
            self.in_flight -= 1

    async def _chat(self, request, turn, t0, web, ClientError):
        raw = await request.read()
        try:
            body = orjson.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except (orjson.JSONDecodeError, ValueError) as e:
            msg = f"invalid request body: {e}"
            await self._record(build_record(
                turn, {"_unparsed_body": raw.decode("utf-8", errors="replace")},
                {"choices": [], "usage": None, "upstream_status": None, "upstream_error": msg}, t0, False,
            ))
            self.log(f"turn {turn}: {msg}")
            return web.json_response({"error": {"message": msg, "type": "invalid_request_error"}}, status=400)
        fwd = edit_request(body, self.cfg)
        stream = bool(fwd.get("stream"))
        url = self.cfg.base() + "/chat/completions"
        headers = self._headers(request)
        headers["Content-Type"] = "application/json"
        resp = None
        asm: StreamAssembler | None = None
        recorded = False
        try:
            async with self._client.post(url, data=orjson.dumps(fwd), headers=headers) as up:
                if up.status >= 400:
                    data = await up.read()
                    try:
                        err: Any = orjson.loads(data)
                    except orjson.JSONDecodeError:
                        err = data.decode("utf-8", errors="replace")
                    await self._record(build_record(
                        turn, fwd, {"choices": [], "usage": None, "upstream_status": up.status, "upstream_error": err}, t0, stream
                    ))
                    self.log(f"turn {turn}: upstream error {up.status}")
                    return web.Response(status=up.status, body=data, content_type=up.content_type or "application/json")
                if stream and "event-stream" in (up.content_type or ""):
                    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
                    await resp.prepare(request)
                    asm = StreamAssembler()
                    buf = b""
                    held: list[bytes] = []
                    client_ok = True
                    async for chunk in up.content.iter_any():
                        events, buf = _split_events(buf + chunk)
                        for ev in events:
                            data = _event_data(ev)
                            if data is not None:
                                asm.feed_event(data)
                            if asm.done or held:
                                held.append(ev)  # [DONE] waits until the record is on disk
                            elif client_ok:
                                client_ok = await _send(resp, ev)
                    if buf.strip():
                        data = _event_data(buf)
                        if data is not None:
                            asm.feed_event(data)
                        held.append(buf)
                    response = asm.result()
                    await self._record(build_record(turn, fwd, response, t0, True))
                    recorded = True
                    for ev in held:
                        if client_ok:
                            client_ok = await _send(resp, ev)
                    if client_ok:
                        try:
                            await resp.write_eof()
                        except (ConnectionError, RuntimeError):
                            pass
                    self._log_call(turn, response, t0, stream=True, client_ok=client_ok)
                    return resp
                data = await up.read()
                try:
                    response = orjson.loads(data)
                    if not isinstance(response, dict):
                        raise ValueError
                except (orjson.JSONDecodeError, ValueError):
                    response = {"choices": [], "usage": None, "upstream_status": up.status,
                                "upstream_error": "the upstream answer is not a JSON object: " + data[:500].decode("utf-8", errors="replace")}
                await self._record(build_record(turn, fwd, response, t0, stream))
                self._log_call(turn, response, t0, stream=False, client_ok=True)
                return web.Response(status=up.status, body=data, content_type=up.content_type or "application/json")
        except (ClientError, asyncio.TimeoutError, OSError) as e:
            msg = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            if recorded:
                pass
            elif asm is not None:  # the stream broke: keep what arrived
                partial = asm.result()
                partial["upstream_error"] = msg
                partial["stream_incomplete"] = True
                await self._record(build_record(turn, fwd, partial, t0, True))
            else:
                await self._record(build_record(
                    turn, fwd, {"choices": [], "usage": None, "upstream_status": None, "upstream_error": msg}, t0, stream
                ))
            self.log(f"turn {turn}: upstream failed: {msg}")
            if resp is not None:  # the stream had started: end it
                try:
                    await resp.write_eof()
                except (ConnectionError, RuntimeError):
                    pass
                return resp
            return web.json_response({"error": {"message": f"upstream failed: {msg}", "type": "proxy_error"}}, status=502)

    def _log_call(self, turn: int, response: dict[str, Any], t0: float, stream: bool, client_ok: bool) -> None:
        ch = (response.get("choices") or [{}])[0]
        n = len(((ch.get("logprobs") or {}).get("content")) or [])
        calls = len((ch.get("message") or {}).get("tool_calls") or [])
        self.log(
            f"turn {turn}: {'stream' if stream else 'json'} {time.time() - t0:.2f}s {n} tokens "
            f"finish={ch.get('finish_reason')} tool_calls={calls}" + ("" if client_ok else " (client went away)")
        )


async def _send(resp, data: bytes) -> bool:
    try:
        await resp.write(data)
        return True
    except (ConnectionError, RuntimeError):
        return False


async def serve(
    cfg: ProxyConfig,
    out_dir: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    log: Callable[[str], None] | None = None,
    ready: Callable[[str, int], None] | None = None,
    stop: asyncio.Event | None = None,
    max_runtime: float | None = None,
) -> dict[str, int]:
    """Run the proxy until ``stop`` is set, SIGINT/SIGTERM, or ``max_runtime``
    seconds have passed; return how many calls were recorded and how many
    records could not be written."""
    from aiohttp import web

    proxy = CaptureProxy(cfg, out_dir, log)
    runner = web.AppRunner(proxy.app(), handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    addrs = [a for a in runner.addresses if isinstance(a, tuple)]
    actual = addrs[0][1] if addrs else port
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-main thread / Windows
            pass
    meta = {
        "pid": os.getpid(),
        "host": host,
        "port": actual,
        "url": f"http://{host}:{actual}/v1",
        "upstream": cfg.upstream,
        "trace": str(proxy.writer.path),
        "started": time.time(),
    }
    tmp = Path(out_dir) / "proxy.json.tmp"
    tmp.write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, Path(out_dir) / "proxy.json")
    if max_runtime:
        loop.call_later(max_runtime, stop.set)
    if ready:
        ready(host, actual)
    await stop.wait()
    # let calls in flight finish (bounded), then close
    deadline = time.time() + 30
    while proxy.in_flight and time.time() < deadline:
        await asyncio.sleep(0.05)
    await runner.cleanup()
    return {"recorded": proxy.writer.count, "write_errors": proxy.write_errors}
