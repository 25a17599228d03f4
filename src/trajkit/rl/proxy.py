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
one ``write`` of one whole line, so a crash leaves a valid prefix; a write that
fails half-way is truncated away, so later records stay whole. Upstream errors
are recorded with empty ``choices`` and ``upstream_status`` /
``upstream_error`` and passed back to the client.

Whatever the upstream sends, the client gets those bytes and the call is
recorded: answers the proxy cannot fully read (``choices`` that is not a list,
odd tool-call indexes, events over the size cap) are recorded with
``proxy_diagnostics``. Several rollouts can share one proxy: a client names its
rollout with a ``/r/<id>/v1`` base URL or the ``X-Trajkit-Rollout`` header, and
its calls go to ``OUT/rollouts/<id>/trace.jsonl``.

Needs the ``proxy`` extra (``aiohttp``).
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import signal
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlsplit, urlunsplit

import orjson

from ..model import TrajkitError
from .calls import parse_token_id

TRACE_NAME = "trace.jsonl"
#: Where the traces of named rollouts go: ``OUT/rollouts/<id>/trace.jsonl``.
ROLLOUTS_DIR = "rollouts"
#: The request header that names a rollout (the ``/r/<id>/v1`` path prefix does too).
ROLLOUT_HEADER = "X-Trajkit-Rollout"
#: What a rollout id may look like (it names a directory).
ROLLOUT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: The default cap on one SSE event (bytes); a bigger event is passed on, not parsed.
DEFAULT_MAX_EVENT_BYTES = 16 << 20
#: Rollout traces kept open at once (idle ones beyond this are closed).
MAX_OPEN_TRACES = 128
#: Request headers forwarded upstream (the rest, hop-by-hop ones included, are not).
FORWARD_HEADERS = ("authorization", "openai-organization", "openai-project", "user-agent", "accept", "x-api-key")
#: Malformed events whose data is kept in ``response.stream_bad_event_samples`` (each cut to SAMPLE_CHARS).
MAX_SAMPLES, SAMPLE_CHARS = 5, 2000


class ProxyError(TrajkitError):
    """The proxy cannot start: an unusable trace path or output directory."""


@dataclass
class ProxyConfig:
    """How the proxy edits and forwards calls.

    ``upstream``: the server's base URL (with or without ``/v1``); user info
    in it (``http://user:password@host``) is sent as HTTP basic auth, in
    place of the client's ``Authorization``, and is masked wherever the URL
    is shown. ``top_logprobs``: alternatives per token to ask for. ``vllm``:
    also ask for token ids (vLLM's ``return_tokens_as_token_ids`` and
    ``return_token_ids``; turn off for servers that reject unknown fields).
    ``max_tokens_cap``: cap ``max_tokens`` / ``max_completion_tokens``.
    ``model_override``: replace ``model``. ``disable_thinking``: set
    ``chat_template_kwargs.enable_thinking = false``. ``timeout``: seconds
    allowed per upstream call. ``max_event_bytes``: the largest SSE event
    parsed (0 or None: no cap); a bigger one is passed to the client as it
    arrives and the call is recorded as cut.
    """

    upstream: str
    top_logprobs: int = 5
    vllm: bool = True
    max_tokens_cap: int | None = None
    model_override: str | None = None
    disable_thinking: bool = False
    timeout: float = 600.0
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES

    def _parts(self) -> tuple[str, str | None, str | None]:
        """The URL without user info, and the user and password (decoded)."""
        try:
            p = urlsplit(self.upstream)
        except ValueError:
            return self.upstream, None, None
        userinfo, at, hostport = p.netloc.rpartition("@")
        if not at:
            return self.upstream, None, None
        user, colon, password = userinfo.partition(":")
        bare = urlunsplit((p.scheme, hostport, p.path, p.query, p.fragment))
        return bare, unquote(user), (unquote(password) if colon else None)

    def base(self) -> str:
        """The upstream URL the ``/chat/completions`` path is appended to
        (without user info)."""
        u = self._parts()[0].rstrip("/")
        return u if u.endswith("/v1") else u + "/v1"

    def authorization(self) -> str | None:
        """The ``Authorization`` header the URL's user info stands for."""
        _, user, password = self._parts()
        if user is None:
            return None
        return "Basic " + base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")

    def masked(self) -> str:
        """The upstream URL as it may be shown: the password (or a lone user
        name, often a token) replaced by ``***``."""
        bare, user, password = self._parts()
        if user is None:
            return self.upstream
        p = urlsplit(bare)
        who = f"{_quote_user(user)}:***" if password is not None else "***"
        return urlunsplit((p.scheme, f"{who}@{p.netloc}", p.path, p.query, p.fragment))


def _quote_user(user: str) -> str:
    from urllib.parse import quote

    return quote(user, safe="")


def _diag(code: str, message: str, severity: str = "warning", count: int = 1) -> dict[str, Any]:
    d: dict[str, Any] = {"code": code, "severity": severity, "message": message}
    if count > 1:
        d["count"] = count
    return d


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(v), f"a {type(v).__name__}")


def edit_request(body: dict[str, Any], cfg: ProxyConfig, problems: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The body forwarded upstream: the client's, plus what the capture needs.

    A member the proxy would edit but cannot (``stream_options`` or
    ``chat_template_kwargs`` that is not an object) is forwarded as sent, and
    a ``proxy.request-not-edited`` diagnostic is appended to ``problems``.
    """
    notes = problems if problems is not None else []
    fwd = dict(body)
    fwd.setdefault("logprobs", True)
    if fwd.get("logprobs") and "top_logprobs" not in fwd and cfg.top_logprobs is not None:
        fwd["top_logprobs"] = cfg.top_logprobs
    if cfg.vllm:
        fwd.setdefault("return_tokens_as_token_ids", True)
        fwd.setdefault("return_token_ids", True)
    if fwd.get("stream"):
        so = fwd.get("stream_options")
        if so is None or isinstance(so, dict):
            so = dict(so or {})
            so.setdefault("include_usage", True)
            fwd["stream_options"] = so
        else:
            notes.append(_diag(
                "proxy.request-not-edited",
                f"stream_options is {_kind(so)}, not an object: forwarded as sent, include_usage not added",
            ))
    if cfg.max_tokens_cap is not None:
        for k in ("max_tokens", "max_completion_tokens"):
            v = fwd.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v > cfg.max_tokens_cap:
                fwd[k] = cfg.max_tokens_cap
        if "max_tokens" not in fwd and "max_completion_tokens" not in fwd:
            fwd["max_tokens"] = cfg.max_tokens_cap
    if cfg.model_override:
        fwd["model"] = cfg.model_override
    if cfg.disable_thinking:
        kw = fwd.get("chat_template_kwargs")
        if kw is None or isinstance(kw, dict):
            kw = dict(kw or {})
            kw["enable_thinking"] = False
            fwd["chat_template_kwargs"] = kw
        else:
            notes.append(_diag(
                "proxy.request-not-edited",
                f"chat_template_kwargs is {_kind(kw)}, not an object: forwarded as sent, enable_thinking not set",
            ))
    return fwd


class StreamAssembler:
    """Rebuilds one ``chat.completion`` response from the SSE chunks of a
    streamed one: content, reasoning and tool-call deltas concatenated,
    logprob entries and token ids appended, usage from the last chunk.

    Never raises on what the upstream sends: events it cannot use are
    counted (``stream_bad_events``), the first few kept as samples, and
    :meth:`diagnostics` says what was odd."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.prompt_token_ids: list[int] | None = None
        self.bad_events = 0
        self.bad_samples: list[str] = []
        self.error: Any = None
        self.done = False
        #: Events over the size cap: ``{"bytes": n, "head": "..."}`` (filled by :class:`SSESplitter`).
        self.cut_events: list[dict[str, Any]] = []
        self._problems: dict[str, list[Any]] = {}

    def _problem(self, code: str, message: str) -> None:
        p = self._problems.get(code)
        if p is None:
            self._problems[code] = [1, message]
        else:
            p[0] += 1

    def _bad(self, data: str, why: str) -> None:
        self.bad_events += 1
        if len(self.bad_samples) < MAX_SAMPLES:
            self.bad_samples.append(data[:SAMPLE_CHARS])
        self._problem("proxy.upstream-malformed", f"a streamed event is not a usable chunk: {why}")

    def diagnostics(self) -> list[dict[str, Any]]:
        """What was odd in the stream, one entry per code (first message, count)."""
        out = [_diag(code, msg, count=n) for code, (n, msg) in self._problems.items()]
        if self.cut_events:
            sizes = ", ".join(str(c["bytes"]) for c in self.cut_events[:5])
            out.append(_diag(
                "proxy.event-too-large",
                f"{len(self.cut_events)} SSE event(s) over the size cap ({sizes} bytes) were passed to the client "
                "unparsed; the recorded answer lacks them",
            ))
        return out

    def feed_event(self, data: str) -> None:
        """Take the ``data`` of one SSE event."""
        if len(data) < 64 and data.strip() == "[DONE]":
            self.done = True
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            self._bad(data, "not JSON")
            return
        if not isinstance(obj, dict):
            self._bad(data, f"{_kind(obj)}, not an object")
            return
        choices = obj.get("choices")
        if "error" in obj and not choices:
            self.error = obj["error"]
        for k in ("id", "model", "created", "system_fingerprint"):
            if k in obj and k not in self.head:
                self.head[k] = obj[k]
        if obj.get("usage") is not None:
            self.usage = obj["usage"]
        if isinstance(obj.get("prompt_token_ids"), list):
            self.prompt_token_ids = obj["prompt_token_ids"]
        if choices is None:
            return
        if not isinstance(choices, list):
            self._bad(data, f"choices is {_kind(choices)}, not a list")
            return
        for ch in choices:
            if not isinstance(ch, dict):
                self._bad(data, f"a choice is {_kind(ch)}, not an object")
                continue
            i = ch.get("index", 0)
            if not isinstance(i, int) or isinstance(i, bool):
                self._problem("proxy.choice-index", f"a choice index is {_kind(i)}, not an integer; read as 0")
                i = 0
            slot = self.choices.setdefault(
                i, {"role": None, "content": [], "reasoning": [], "tool_calls": {}, "last_tool": None,
                    "finish_reason": None, "logprobs": None, "token_ids": None}
            )
            delta = ch.get("delta") if isinstance(ch.get("delta"), dict) else {}
            if isinstance(delta.get("role"), str):
                slot["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                slot["content"].append(delta["content"])
            for key in ("reasoning", "reasoning_content"):
                if isinstance(delta.get(key), str):
                    slot["reasoning"].append(delta[key])
            tcs = delta.get("tool_calls")
            if tcs is not None and not isinstance(tcs, list):
                self._bad(data, f"delta.tool_calls is {_kind(tcs)}, not a list")
                tcs = None
            for tc in tcs or []:
                if not isinstance(tc, dict):
                    self._bad(data, f"a tool-call delta is {_kind(tc)}, not an object")
                    continue
                j = self._tool_index(slot, tc)
                slot["last_tool"] = j
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

    def _tool_index(self, slot: dict[str, Any], tc: dict[str, Any]) -> int:
        """The tool call a delta belongs to. An integer ``index`` as sent; a
        missing one starts a new call (as before); a decimal string is read as
        its number; anything else (null, other text, a float) continues the
        last call, or starts a new one when the delta carries an ``id``."""
        calls = slot["tool_calls"]
        if "index" not in tc:
            return len(calls)
        raw = tc["index"]
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.isascii() and raw.strip().isdigit() and len(raw.strip()) <= 9:
            self._problem("proxy.tool-call-index", f"a tool-call index is a string ({raw[:20]!r}); read as its number")
            return int(raw.strip())
        if tc.get("id") or slot["last_tool"] is None:
            j = max(calls, default=-1) + 1
            what = "started a new tool call"
        else:
            j = slot["last_tool"]
            what = "continued the last tool call"
        self._problem("proxy.tool-call-index", f"a tool-call index is {_kind(raw)}, not an integer; the delta {what}")
        return j

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
            out["stream_bad_event_samples"] = list(self.bad_samples)
        if self.cut_events:
            out["stream_cut_events"] = list(self.cut_events)
        if not self.done or self.cut_events:
            out["stream_incomplete"] = True
        return out


def check_response(response: dict[str, Any]) -> list[dict[str, Any]]:
    """Diagnostics for a plain (non-streamed) answer whose shape the trace
    reader cannot use; the answer itself is recorded as sent."""
    out = []
    choices = response.get("choices")
    if "choices" in response and not isinstance(choices, list):
        out.append(_diag("proxy.upstream-malformed", f"choices is {_kind(choices)}, not a list"))
    elif isinstance(choices, list):
        odd = [c for c in choices if not isinstance(c, dict)]
        if odd:
            out.append(_diag("proxy.upstream-malformed", f"{len(odd)} choice(s) are not objects (first: {_kind(odd[0])})"))
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        msg = first.get("message")
        if first and not isinstance(msg, dict):
            out.append(_diag("proxy.upstream-malformed", f"choices[0].message is {_kind(msg)}, not an object"))
        elif isinstance(msg, dict) and msg.get("tool_calls") is not None and not isinstance(msg["tool_calls"], list):
            out.append(_diag("proxy.upstream-malformed", f"choices[0].message.tool_calls is {_kind(msg['tool_calls'])}, not a list"))
    return out


def build_record(
    turn: int,
    request: dict[str, Any],
    response: dict[str, Any],
    t0: float,
    stream: bool,
    diagnostics: list[dict[str, Any]] | None = None,
    rollout: str | None = None,
) -> dict[str, Any]:
    """One trace record (OpenEnv ``TurnRecord`` fields, plus ``prompt_token_ids``
    when the server returned them, ``stream``, and when there are any
    ``rollout`` and ``proxy_diagnostics``)."""
    choices = response.get("choices")
    ch = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
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
        "per_token_logps": [
            e["logprob"] for e in entries
            if isinstance(e, dict) and isinstance(e.get("logprob"), (int, float)) and not isinstance(e.get("logprob"), bool)
        ],
        "finish_reason": ch.get("finish_reason"),
        "latency_s": round(time.time() - t0, 6),
        "timestamp": time.time(),
        "stream": stream,
    }
    if isinstance(response.get("prompt_token_ids"), list):
        rec["prompt_token_ids"] = response["prompt_token_ids"]
    if rollout is not None:
        rec["rollout"] = rollout
    if diagnostics:
        rec["proxy_diagnostics"] = diagnostics
    return rec


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


class TraceWriter:
    """Appends records to a trace file, one ``write`` + ``fsync`` per record,
    safe from many threads.

    The trace must be a regular file (or not exist yet): a FIFO, a device or
    a directory there raises :class:`ProxyError` (opened non-blocking, so a
    FIFO never hangs). A file left with a cut final line (a crash) gets a
    newline before the next record, so the cut line stays alone. A write that
    fails part-way (a full disk) is truncated away; if even that fails, the
    next record starts on a new line. Either way every record written once
    the disk has room again is a whole line.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._turn_lock = threading.Lock()
        self.repaired = False
        self.last_turn = 0
        self.count = 0
        #: Calls in flight that will write here (the proxy closes only idle traces).
        self.users = 0
        self._fd = -1
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ProxyError(f"{self.path.parent}: cannot create the trace directory: {e.strerror or e}") from e
        data = self._existing()
        for line in data.splitlines():
            try:
                t = orjson.loads(line).get("turn")
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if isinstance(t, int) and not isinstance(t, bool) and t > self.last_turn:
                self.last_turn = t
        self.repaired = bool(data) and not data.endswith(b"\n")
        #: The file ends in a cut line: the next record starts with a newline.
        self._need_newline = self.repaired
        self._fd = self._open(os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def _open(self, flags: int) -> int:
        try:
            fd = os.open(self.path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as e:
            kind = ""
            try:
                kind = _file_kind(os.stat(self.path).st_mode)
            except OSError:
                pass
            if kind and kind != "not a regular file":
                raise ProxyError(f"{self.path}: the trace must be a regular file, not {kind}") from e
            raise ProxyError(f"{self.path}: cannot open the trace: {e.strerror or e}") from e
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise ProxyError(f"{self.path}: the trace must be a regular file, not {_file_kind(mode)}")
        return fd

    def _existing(self) -> bytes:
        """The bytes already in the trace (nothing when there is no file)."""
        if not os.path.lexists(self.path):
            return b""
        if not os.path.exists(self.path):  # a dangling symlink: created on open
            return b""
        fd = self._open(os.O_RDONLY)
        try:
            chunks = []
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def next_turn(self) -> int:
        """The number of the next call (numbered on arrival)."""
        with self._turn_lock:
            self.last_turn += 1
            return self.last_turn

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line. Raises ``OSError`` when it could not
        be written; the file is then left as it was (or, when the partial
        line cannot be removed, the next record starts on a new line)."""
        try:
            line = orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS) + b"\n"
        except TypeError:
            import json

            line = json.dumps(record).encode() + b"\n"
        with self._lock:
            if self._fd < 0:
                raise OSError(9, "the trace is closed")
            data = b"\n" + line if self._need_newline else line
            start = os.fstat(self._fd).st_size
            try:
                self._write(data)
            except OSError:
                try:
                    os.ftruncate(self._fd, start)  # take the partial line away
                except OSError:
                    self._need_newline = True  # it stays: the next record starts on a line of its own
                raise
            self._need_newline = False
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


#: What :meth:`SSESplitter.feed` yields: a whole event (to parse and pass on), or raw bytes (to pass on only).
EVENT, RAW = "event", "raw"


class SSESplitter:
    """Cuts an SSE byte stream into events, in linear time: each byte is
    scanned once (the search resumes where the last one stopped), and an
    event is ended by a blank line (``\\n\\n``, ``\\r\\n\\r\\n`` or a mix).

    An event that grows past ``max_event_bytes`` without ending is not
    buffered further: what arrived so far and everything up to its end are
    yielded as ``RAW`` pieces (to pass on as they come), and the event is
    noted in ``cut_events``. Memory stays bounded by the cap."""

    def __init__(self, max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.max = max_event_bytes or 0
        self.buf = bytearray()
        self._line = 0  # start of the current (unfinished) line in buf
        self.cut_events: list[dict[str, Any]] = []
        self._skipping = False
        self._skip_line = b""  # the start of the current line while skipping: b"", b"\r" or b"x" (not blank)

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        if self._skipping:
            end = self._skip(chunk)
            if end < 0:
                out.append((RAW, chunk))
                return out
            out.append((RAW, chunk[:end]))
            chunk = chunk[end:]
        buf = self.buf
        scan = len(buf)
        buf += chunk
        start = 0
        line = self._line
        while True:
            nl = buf.find(b"\n", scan)
            if nl < 0:
                break
            if nl == line or (nl == line + 1 and buf[line] == 13):  # a blank line ends the event
                out.append((EVENT, bytes(buf[start:nl + 1])))
                start = nl + 1
            line = scan = nl + 1
        if start:
            del buf[:start]
            line -= start
        self._line = line
        if self.max and len(buf) > self.max:
            rest = bytes(buf[line:])
            self.cut_events.append({"bytes": len(buf), "head": bytes(buf[:200]).decode("utf-8", errors="replace")})
            out.append((RAW, bytes(buf)))
            buf.clear()
            self._line = 0
            self._skipping = True
            self._skip_line = rest if rest in (b"", b"\r") else b"x"
        return out

    def _skip(self, chunk: bytes) -> int:
        """While passing an oversize event on: where in ``chunk`` it ends (-1: not yet)."""
        pos = 0
        while True:
            nl = chunk.find(b"\n", pos)
            seg = chunk[pos:] if nl < 0 else chunk[pos:nl]
            state = self._skip_line
            if seg:
                state = b"\r" if state == b"" and seg == b"\r" else b"x"
            if nl < 0:
                self._skip_line = state
                if self.cut_events:
                    self.cut_events[-1]["bytes"] += len(chunk)
                return -1
            if state in (b"", b"\r"):
                self._skipping = False
                self._skip_line = b""
                if self.cut_events:
                    self.cut_events[-1]["bytes"] += nl + 1
                return nl + 1
            self._skip_line = b""
            pos = nl + 1

    def rest(self) -> bytes:
        """What is left when the stream ends: an event without its blank line."""
        data = bytes(self.buf)
        self.buf.clear()
        self._line = 0
        return data


def _event_data(event: bytes) -> str | None:
    lines = event.replace(b"\r\n", b"\n").split(b"\n")
    data = [ln[5:].lstrip(b" ") if ln.startswith(b"data:") else None for ln in lines]
    parts = [d for d in data if d is not None]
    if not parts:
        return None
    return b"\n".join(parts).decode("utf-8", errors="replace")


@dataclass
class _Call:
    """One chat call in flight: its number, trace, rollout and what was odd."""

    turn: int
    t0: float
    writer: TraceWriter
    rollout: str | None
    problems: list[dict[str, Any]] = field(default_factory=list)
    recorded: bool = False


class CaptureProxy:
    """The proxy's aiohttp application, its upstream client and its traces."""

    def __init__(self, cfg: ProxyConfig, out_dir: Path, log: Callable[[str], None] | None = None) -> None:
        self.cfg = cfg
        self.out_dir = Path(out_dir)
        self.writer = TraceWriter(self.out_dir / TRACE_NAME)
        self.log = log or (lambda s: None)
        self.in_flight = 0
        self.write_errors = 0
        self.recorded = 0
        self._client = None
        self._writers: OrderedDict[str, TraceWriter] = OrderedDict()
        self._writers_lock = threading.Lock()
        if self.writer.repaired:
            self.log(f"note: {self.writer.path} ended in a cut line (an earlier crash); new records start on a new line")

    def app(self):
        from aiohttp import web

        app = web.Application(client_max_size=1 << 30)
        for prefix in ("", "/r/{rollout}"):
            app.router.add_post(prefix + "/v1/chat/completions", self.chat)
            app.router.add_post(prefix + "/chat/completions", self.chat)
        app.router.add_route("*", "/r/{rollout}/{tail:.*}", self.passthrough)
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
        with self._writers_lock:
            for w in self._writers.values():
                w.close()
            self._writers.clear()

    def _headers(self, request) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() in FORWARD_HEADERS}
        auth = self.cfg.authorization()
        if auth is not None:  # the upstream URL's credentials replace the client's
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["Authorization"] = auth
        return headers

    # ------------------------------------------------------------ rollouts

    @staticmethod
    def rollout_of(request) -> tuple[str | None, str | None]:
        """The rollout a request names (path prefix ``/r/<id>/`` or the
        ``X-Trajkit-Rollout`` header), and an error when the name is unusable."""
        from_path = request.match_info.get("rollout")
        from_header = request.headers.get(ROLLOUT_HEADER)
        if from_path is not None and from_header is not None and from_path != from_header:
            return None, f"the path names rollout {from_path[:80]!r} but {ROLLOUT_HEADER} names {from_header[:80]!r}"
        rid = from_path if from_path is not None else from_header
        if rid is None:
            return None, None
        if not ROLLOUT_ID_RE.fullmatch(rid):
            return None, (
                f"invalid rollout id {rid[:80]!r}: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return rid, None

    def _rollout_writer(self, rid: str) -> TraceWriter:
        """The open trace of a rollout (created on first use). Runs in a worker thread."""
        with self._writers_lock:
            w = self._writers.get(rid)
            if w is not None:
                self._writers.move_to_end(rid)
                w.users += 1
                return w
            w = TraceWriter(self.out_dir / ROLLOUTS_DIR / rid / TRACE_NAME)
            w.users += 1
            self._writers[rid] = w
            if len(self._writers) > MAX_OPEN_TRACES:
                for old in [k for k, v in self._writers.items() if v.users == 0][: len(self._writers) - MAX_OPEN_TRACES]:
                    self._writers.pop(old).close()
            if w.repaired:
                self.log(f"note: {w.path} ended in a cut line (an earlier crash); new records start on a new line")
            return w

    def _release(self, w: TraceWriter) -> None:
        with self._writers_lock:
            w.users -= 1

    async def _record(self, call: _Call, request_body: dict[str, Any], response: dict[str, Any], stream: bool) -> None:
        rec = build_record(call.turn, request_body, response, call.t0, stream, call.problems or None, call.rollout)
        try:
            await asyncio.get_running_loop().run_in_executor(None, call.writer.append, rec)
            self.recorded += 1
        except OSError as e:  # a full disk must not take the agent's call down with it
            self.write_errors += 1
            self.log(f"turn {call.turn}: CANNOT WRITE THE TRACE ({e.strerror or e}); this call is not recorded")
        call.recorded = True

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
        except (ClientError, asyncio.TimeoutError, OSError, ValueError) as e:
            return web.json_response({"error": {"message": f"upstream unreachable: {e}", "type": "proxy_error"}}, status=502)

    async def chat(self, request):
        """``POST /v1/chat/completions``: forward, stream back, record."""
        from aiohttp import web

        t0 = time.time()
        self.in_flight += 1
        writer = None
        try:
            rid, bad_rollout = self.rollout_of(request)
            problems: list[dict[str, Any]] = []
            writer = self.writer
            if rid is not None:
                try:
                    writer = await asyncio.get_running_loop().run_in_executor(None, self._rollout_writer, rid)
                except (ProxyError, OSError) as e:
                    writer = None
                    problems.append(_diag("proxy.rollout-unwritable", f"the trace of rollout {rid!r} cannot be written "
                                          f"({e}); the call is recorded in the main trace", "error"))
                    self.log(f"rollout {rid}: {e}; recording in {self.writer.path}")
            call = _Call((writer or self.writer).next_turn(), t0, writer or self.writer, rid, problems)
            if bad_rollout is not None:
                return await self._refuse(request, call, bad_rollout, web)
            try:
                return await self._chat(request, call, web)
            except Exception as e:  # a proxy bug must not lose the call or answer 500
                msg = f"{type(e).__name__}: {e}"
                self.log(f"turn {call.turn}: PROXY ERROR {msg}")
                if not call.recorded:
                    call.problems.append(_diag("proxy.internal-error", f"the proxy failed on this call: {msg}", "error"))
                    await self._record(call, {}, {"choices": [], "usage": None, "upstream_status": None,
                                                  "upstream_error": f"proxy error: {msg}"}, False)
                return web.json_response({"error": {"message": f"proxy error: {msg}", "type": "proxy_error"}}, status=502)
        finally:
            if writer is not None and writer is not self.writer:
                self._release(writer)
            self.in_flight -= 1

    async def _refuse(self, request, call: _Call, why: str, web):
        """A call whose rollout id is unusable: recorded in the main trace, answered 400."""
        raw = await request.read()
        call.problems.append(_diag("proxy.bad-rollout", why, "error"))
        await self._record(call, {"_unparsed_body": raw.decode("utf-8", errors="replace")},
                           {"choices": [], "usage": None, "upstream_status": None, "upstream_error": why}, False)
        self.log(f"turn {call.turn}: {why}")
        return web.json_response({"error": {"message": why, "type": "invalid_request_error"}}, status=400)

    async def _chat(self, request, call: _Call, web):
        from aiohttp import ClientError

        raw = await request.read()
        try:
            body = orjson.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except (orjson.JSONDecodeError, ValueError) as e:
            msg = f"invalid request body: {e}"
            await self._record(call, {"_unparsed_body": raw.decode("utf-8", errors="replace")},
                               {"choices": [], "usage": None, "upstream_status": None, "upstream_error": msg}, False)
            self.log(f"turn {call.turn}: {msg}")
            return web.json_response({"error": {"message": msg, "type": "invalid_request_error"}}, status=400)
        fwd = edit_request(body, self.cfg, call.problems)
        stream = bool(fwd.get("stream"))
        url = self.cfg.base() + "/chat/completions"
        headers = self._headers(request)
        headers["Content-Type"] = "application/json"
        resp = None
        asm: StreamAssembler | None = None
        try:
            async with self._client.post(url, data=orjson.dumps(fwd), headers=headers) as up:
                if up.status >= 400:
                    data = await up.read()
                    try:
                        err: Any = orjson.loads(data)
                    except orjson.JSONDecodeError:
                        err = data.decode("utf-8", errors="replace")
                    await self._record(call, fwd, {"choices": [], "usage": None, "upstream_status": up.status,
                                                   "upstream_error": err}, stream)
                    self.log(f"turn {call.turn}: upstream error {up.status}")
                    return web.Response(status=up.status, body=data, content_type=up.content_type or "application/json")
                if "event-stream" in (up.content_type or ""):
                    resp = web.StreamResponse(status=up.status, headers={"Content-Type": up.headers.get("Content-Type", "text/event-stream"),
                                                                         "Cache-Control": "no-cache"})
                    await resp.prepare(request)
                    asm = StreamAssembler()
                    return await self._relay_stream(up, resp, asm, call, fwd)
                data = await up.read()
                try:
                    response = orjson.loads(data)
                    if not isinstance(response, dict):
                        raise ValueError
                    call.problems.extend(check_response(response))
                except (orjson.JSONDecodeError, ValueError):
                    response = {"choices": [], "usage": None, "upstream_status": up.status,
                                "upstream_error": "the upstream answer is not a JSON object: " + data[:500].decode("utf-8", errors="replace")}
                await self._record(call, fwd, response, stream)
                self._log_call(call.turn, response, call.t0, stream=False, client_ok=True)
                return web.Response(status=up.status, body=data, content_type=up.content_type or "application/json")
        except (ClientError, asyncio.TimeoutError, OSError) as e:
            msg = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            if call.recorded:
                pass
            elif asm is not None:  # the stream broke: keep what arrived
                partial = asm.result()
                partial["upstream_error"] = msg
                partial["stream_incomplete"] = True
                call.problems.extend(asm.diagnostics())
                await self._record(call, fwd, partial, True)
            else:
                await self._record(call, fwd, {"choices": [], "usage": None, "upstream_status": None, "upstream_error": msg}, stream)
            self.log(f"turn {call.turn}: upstream failed: {msg}")
            if resp is not None:  # the stream had started: end it
                try:
                    await resp.write_eof()
                except (ConnectionError, RuntimeError):
                    pass
                return resp
            return web.json_response({"error": {"message": f"upstream failed: {msg}", "type": "proxy_error"}}, status=502)

    async def _relay_stream(self, up, resp, asm: StreamAssembler, call: _Call, fwd: dict[str, Any]):
        """Pass the upstream's SSE bytes to the client as they arrive, exactly
        as sent, while reassembling the answer; write the record before the
        client gets ``[DONE]`` (or, when more than the event cap follows
        ``[DONE]``, as soon as that much is held)."""
        from aiohttp import ClientError

        splitter = SSESplitter(self.cfg.max_event_bytes)
        asm.cut_events = splitter.cut_events
        held: list[bytes] = []
        held_bytes = 0
        client_ok = True
        cap = self.cfg.max_event_bytes or 0

        async def record_now(error: str | None = None) -> None:
            nonlocal client_ok, held, held_bytes
            response = asm.result()
            if error is not None:  # the stream broke: keep what arrived
                response["upstream_error"] = error
                response["stream_incomplete"] = True
            call.problems.extend(asm.diagnostics())
            await self._record(call, fwd, response, True)
            for piece in held:
                if client_ok:
                    client_ok = await _send(resp, piece)
            held, held_bytes = [], 0
            if error is None:
                self._log_call(call.turn, response, call.t0, stream=True, client_ok=client_ok)

        error = None
        try:
            async for chunk in up.content.iter_any():
                for kind, piece in splitter.feed(chunk):
                    if kind == EVENT and not call.recorded:
                        data = _event_data(piece)
                        if data is not None:
                            asm.feed_event(data)
                    if (asm.done or held) and not call.recorded:
                        held.append(piece)  # [DONE] waits until the record is on disk
                        held_bytes += len(piece)
                    elif client_ok:
                        client_ok = await _send(resp, piece)
                if cap and held_bytes > cap and not call.recorded:
                    await record_now()  # more than the cap after [DONE]: record now, pass the rest on
        except (ClientError, asyncio.TimeoutError, OSError) as e:
            error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            self.log(f"turn {call.turn}: upstream failed: {error}")
        if not call.recorded:
            rest = splitter.rest()
            if rest.strip():
                data = _event_data(rest)
                if data is not None:
                    asm.feed_event(data)
                held.append(rest)
            await record_now(error)
        if client_ok:
            try:
                await resp.write_eof()
            except (ConnectionError, RuntimeError):
                pass
        return resp

    def _log_call(self, turn: int, response: dict[str, Any], t0: float, stream: bool, client_ok: bool) -> None:
        choices = response.get("choices")
        ch = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        lp = ch.get("logprobs")
        n = len(lp["content"]) if isinstance(lp, dict) and isinstance(lp.get("content"), list) else 0
        msg = ch.get("message") if isinstance(ch.get("message"), dict) else {}
        calls = len(msg["tool_calls"]) if isinstance(msg.get("tool_calls"), list) else 0
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


def _write_meta(out_dir: Path, meta: dict[str, Any]) -> None:
    """``OUT/proxy.json``, replaced atomically (:mod:`trajkit.atomic`)."""
    from ..atomic import write_atomic

    try:
        write_atomic(out_dir / "proxy.json", orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n", make_parents=False)
    except OSError as e:
        raise ProxyError(f"{out_dir / 'proxy.json'}: cannot write: {e.strerror or e}") from e


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
    records could not be written. Raises :class:`ProxyError` before listening
    when the trace or ``proxy.json`` cannot be written, ``OSError`` when it
    cannot listen."""
    from aiohttp import web

    proxy = CaptureProxy(cfg, out_dir, log)
    runner = web.AppRunner(proxy.app(), handle_signals=False, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        addrs = [a for a in runner.addresses if isinstance(a, tuple)]
        actual = addrs[0][1] if addrs else port
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - non-main thread / Windows
                pass
        meta = {
            "pid": os.getpid(),
            "host": host,
            "port": actual,
            "url": f"http://{host}:{actual}/v1",
            "upstream": cfg.masked(),
            "trace": str(proxy.writer.path),
            "rollouts": str(Path(out_dir) / ROLLOUTS_DIR),
            "rollout_url": f"http://{host}:{actual}/r/<rollout-id>/v1",
            "rollout_header": ROLLOUT_HEADER,
            "started": time.time(),
        }
        _write_meta(Path(out_dir), meta)
    except BaseException:
        await runner.cleanup()
        raise
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
    return {"recorded": proxy.recorded, "write_errors": proxy.write_errors}
