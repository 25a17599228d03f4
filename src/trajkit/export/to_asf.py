"""A normalized :class:`~trajkit.model.Session` as ASF 0.11 sessions.

Every reader reaches ASF (and, through it, ATIF) by this one path: only the
normalized :class:`~trajkit.model.Event` fields are read (kind, role, text,
tool_calls, call_id, cause, response_id, reasoning, usage, extra), plus the
steps' per-call usage. The native event rides along untouched in the
``trajkit:native`` member of the first entry it produced (unless passthrough
is off), so nothing a format does not declare is lost.

Mapping, per normalized kind:

- ``system``: the root ``config`` (model, instructions, tools); a later
  system event is a ``config`` delta;
- ``message``: an ``item`` holding an Open Responses ``message``
  (``input_text`` for user/system, ``output_text`` for assistant);
- ``action``: ``reasoning`` / assistant ``message`` / one ``function_call``
  per tool call, all naming the model call's ``response``;
- ``observation``: a ``function_call_output`` for the call it answers;
- ``reasoning``: a ``reasoning`` item;
- ``condensation``: a ``compaction`` (``first_kept`` after the forgotten
  window, the kept events before it ``pinned``, a full settings checkpoint);
- anything else (state, errors, unknown kinds): a ``trajkit:event`` extension
  entry, which is preserved and never enters context.

One ``response`` entry closes each model call (model, usage, response id,
and ``request_hash`` when the reader says its requests can be rebuilt from
the path). Sub-agent sessions become their own ASF sessions, ids derived as
the RFC recommends (UUIDv5 under the nil namespace over
``<parent session id>/<call_id>``), linked by ``link rel=subsession``.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..model import (
    ACTION,
    CONDENSATION,
    MESSAGE,
    OBSERVATION,
    REASONING,
    SYSTEM,
    Event,
    Session,
    ToolCall,
    Usage,
)
from ..model import native_record
from ..spec import asf
from ..spec.asf.codec import _classify
from . import secrets as secret_patterns
from .media import spill as spill_media

NS = "trajkit"
NATIVE = "trajkit:native"
_CALL_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")
NIL = uuid.UUID(int=0)
_CONTEXT_KINDS = frozenset({MESSAGE, ACTION, OBSERVATION, REASONING, CONDENSATION})
_NEW_ROOT = object()


@dataclass
class Redactor:
    """Rewrites secrets and home directories inside every string written:
    the values given (``secrets``), home directories (``home``) and, with
    ``patterns``, every credential :mod:`trajkit.export.secrets` finds."""

    secrets: list[str] = field(default_factory=list)
    home: bool = False
    patterns: bool = False
    count: int = 0

    _HOME = re.compile(r"(/home/[^/\s\"']+|/Users/[^/\s\"']+|/root)(?=[/\s\"']|$)")

    @property
    def active(self) -> bool:
        return bool(self.secrets) or self.home or self.patterns

    def text(self, s: str, auth_value: bool = False) -> str:
        for sec in self.secrets:
            if sec and sec in s:
                self.count += s.count(sec)
                s = s.replace(sec, "[REDACTED]")
        if self.patterns:
            s, n = secret_patterns.redact(s, auth_value=auth_value)
            self.count += n
        if self.home:
            s, n = self._HOME.subn("~", s)
            self.count += n
        return s

    def value(self, v: Any, auth_value: bool = False) -> Any:
        if isinstance(v, str):
            return self.text(v, auth_value)
        if isinstance(v, dict):
            return {(self.text(k) if isinstance(k, str) else k): self.value(x, self.patterns and secret_patterns.is_auth_key(k))
                    for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        return v


@dataclass
class Placement:
    """Where one native event went: the ASF entries it produced, or why none."""

    session: str
    event_id: Any
    entries: list[str] = field(default_factory=list)
    code: str = "export.entry"
    note: str | None = None


@dataclass
class AsfExport:
    """The ASF sessions built from one normalized session tree."""

    files: list[asf.AsfFile] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)
    sessions: dict[int, str] = field(default_factory=dict)  # id(Session) -> asf session id
    redactions: int = 0
    linked: list[Session] = field(default_factory=list)
    #: binary attachments taken out of the entries (:mod:`.media`): path under the output folder -> bytes
    media: dict[str, bytes] = field(default_factory=dict)

    @property
    def root(self) -> asf.AsfFile:
        return self.files[0]


def session_uuid(session: Session) -> str:
    """A stable UUIDv5 (nil namespace) for a root session's ASF id."""
    key = f"trajkit/{session.format}/{session.id or session.source_path}"
    return str(uuid.uuid5(NIL, key))


def subsession_uuid(parent_id: str, call_id: str, n: int = 0) -> str:
    """The RFC's recommended subsession id: UUIDv5(nil, ``<parent>/<call_id>``)."""
    return str(uuid.uuid5(NIL, f"{parent_id}/{call_id}" + (f"/{n}" if n else "")))


def _rebuildable(session: Session) -> bool:
    """Whether the format can rebuild each request from the path (it declares
    the ``context`` capability), so ``request_hash`` is a checkable claim. A
    reader that says otherwise for this run (``metadata["context_rebuildable"]``,
    e.g. an SDK ACPAgent whose model ran elsewhere) wins."""
    flag = session.metadata.get("context_rebuildable")
    if isinstance(flag, bool):
        return flag
    from ..model import DetectionError
    from ..registry import get_format

    try:
        return get_format(session.format).can("context")
    except DetectionError:  # a session of a format no longer registered
        return False


def _usage_to_openresponses(u: Usage | None) -> dict[str, Any] | None:
    if u is None or (u.input is None and u.output is None):
        return None
    res: dict[str, Any] = {"input_tokens": u.input or 0}
    res["input_tokens_details"] = {"cached_tokens": u.cache_read or 0}
    res["output_tokens"] = u.output or 0
    res["output_tokens_details"] = {"reasoning_tokens": u.reasoning or 0}
    res["total_tokens"] = u.total if u.total is not None else res["input_tokens"] + res["output_tokens"]
    return res


def _tool_shape(t: Any) -> Any:
    """An Open Responses function tool from the chat-completions or Responses shape."""
    if not isinstance(t, dict):
        return t
    if t.get("type") == "function" and isinstance(t.get("function"), dict):
        f = t["function"]
        out = {"type": "function", "name": f.get("name")}
        for k in ("description", "parameters", "strict"):
            if k in f:
                out[k] = f[k]
        return out
    return t


def _tools_of(e: Event) -> list[Any] | None:
    tools = e.tools
    if isinstance(tools, list):
        return [_tool_shape(t) for t in tools]
    return None


def _args_text(args: Any) -> str:
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args if args is not None else {}, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(str(args), ensure_ascii=False)


def _ts_of(e: Event) -> str | None:
    return asf.normalize_ts(e.timestamp) if e.timestamp is not None else None


class _Builder:
    """Appends entries to one ASF session, tracking the leaf."""

    def __init__(self, header: dict[str, Any], redactor: Redactor, passthrough: bool, media: dict[str, bytes] | None = None):
        self.media = media if media is not None else {}
        self.file = asf.AsfFile(header=header, version=(0, asf.FORMAT_MINOR))
        self.leaf: str | None = None
        self.ts = header.get("created_at")
        self.redactor = redactor
        self.passthrough = passthrough
        self.normalised = 0
        self.walker = asf.RequestWalker()

    def add(self, type_: str, body: dict[str, Any], ts: str | None = None, native: Any = None, event: Event | None = None) -> str:
        if ts:
            self.ts = ts
        body = dict(body)
        if event is not None:
            ref: dict[str, Any] = {"event_id": event.id, "kind": event.kind, "type": event.type}
            if self.passthrough and native is not None:
                ref["raw"] = native
            body[NATIVE] = ref
        body = spill_media(body, self.media)  # images go to the side folder, never inline
        if self.redactor.active:
            body = self.redactor.value(body)
            item = body.get("item")
            if isinstance(item, dict):
                # A redacted call id or tool name must still match Open Responses' pattern.
                for k in ("call_id", "name"):
                    if isinstance(item.get(k), str) and not _CALL_ID_RE.match(item[k]):
                        item[k] = _NAME_RE.sub("_", item[k])[:64] or "redacted"
        body, rec, safe = asf.prepare(body)
        if rec:
            self.normalised += len(rec)
            body["normalised"] = rec
            safe = _classify(body) == 0
        entry = asf.make_entry(type_, self.leaf, self.ts, body, safe=safe)
        line = asf.canonical(entry, safe)
        self.walker.feed(self.file.append(entry, text=line, safe=safe))
        self.leaf = entry["id"]
        return entry["id"]

    def jump(self, leaf: str | None) -> None:
        """Continue from ``leaf`` (None: start a new root): a branch."""
        self.leaf = leaf
        self.walker = asf.RequestWalker()
        if leaf is not None:
            for e in self.file.path_to(leaf):
                self.walker.feed(e)

    def request_hash(self, response_id: str, before: str) -> str:
        """The hash of the request a response appended now was sent."""
        got = self.walker.hash_for(response_id)
        if got is None:
            got = asf.request_hash(asf.build_context(self.file, before).request())
        return got


def session_to_asf(
    session: Session,
    passthrough: bool = True,
    redactor: Redactor | None = None,
    request_hashes: bool | None = None,
) -> AsfExport:
    """Convert ``session`` and its sub-agent sessions to ASF sessions.

    A session read from an ASF file (``Session.asf``) is passed through as
    read, entry ids and bytes unchanged (``asf.md`` §13.5), unless secrets
    or homes are to be redacted or passthrough is off: rewriting content
    re-hashes, so those go the normal way."""
    redactor = redactor or Redactor()
    out = AsfExport()
    if session.asf is not None and passthrough and not redactor.active and _passes_through(session):
        _pass_through(session, out, None)
        return out
    if request_hashes is None:
        request_hashes = _rebuildable(session)
    _convert(session, session_uuid(session), None, None, out, passthrough, redactor, request_hashes)
    out.redactions = redactor.count
    return out


def _passes_through(session: Session) -> bool:
    """Every session of the tree was read from an ASF file with a header."""
    return all(s.asf is not None and s.asf.header for s in session.walk())


def _pass_through(session: Session, out: AsfExport, parent: Session | None) -> None:
    f = session.asf
    sid = str(f.header.get("id"))
    out.sessions[id(session)] = sid
    out.files.append(f)
    by_event = {}
    for n, e in enumerate(f.entries):
        by_event[e.id if isinstance(e.id, str) else f"line-{e.line}"] = e
    for ev in session.events:
        p = Placement(session=sid, event_id=ev.id)
        entry = by_event.get(ev.id)
        if entry is not None and isinstance(entry.id, str):
            p.entries.append(entry.id)
        else:
            p.code = "export.no-entry"
            p.note = "a line that does not parse as an entry, kept as written"
        out.placements.append(p)
    if parent is not None:
        out.linked.append(session)
    for child in session.children:
        _pass_through(child, out, session)


def _harness(session: Session) -> dict[str, Any]:
    run = session.run
    return {"name": str(run.harness or session.format), "version": str(run.harness_version or "unknown")}


def _convert(
    session: Session,
    sid: str,
    parent_sid: str | None,
    spawned_by: str | None,
    out: AsfExport,
    passthrough: bool,
    redactor: Redactor,
    request_hashes: bool,
) -> None:
    out.sessions[id(session)] = sid
    first_ts = next((t for t in (_ts_of(e) for e in session.events) if t), None)
    header: dict[str, Any] = {
        "type": "session",
        "format": asf.FORMAT,
        "id": sid,
        "created_at": first_ts or "1970-01-01T00:00:00Z",
        "payload": asf.PAYLOAD,
        "harness": _harness(session),
        "records": [],
    }
    cwd = session.run.workspace
    if isinstance(cwd, str):
        header["cwd"] = cwd
    if parent_sid:
        header["parent_session"] = parent_sid
    if spawned_by:
        header["spawned_by"] = spawned_by
    header["trajkit:source"] = {"format": session.format, "id": session.id, "view": session.view, "path": session.source_path}
    if session.task is not None:
        header["trajkit:source"]["task_source"] = session.task_source
    if session.metadata:
        # What the reader took from state/metadata/results files rides in the header.
        header["trajkit:metadata"] = session.metadata
    if redactor.active:
        header = redactor.value(header)
        header["redacted"] = True
    header, rec = asf.normalise_ijson(header)
    if rec:
        header["normalised"] = rec
    b = _Builder(header, redactor, passthrough, out.media)
    out.files.append(b.file)
    place: dict[Any, Placement] = {}

    def placed(e: Event) -> Placement:
        key = id(e)
        if key not in place:
            p = Placement(session=sid, event_id=e.id)
            place[key] = p
            out.placements.append(p)
        return place[key]

    # Per-call usage: the steps' per-call values (readers turn cumulative
    # counters into per-call ones there), else the event's own usage.
    # (typed usage, cost, the native figures the entry keeps as trajkit:usage)
    step_usage: dict[Any, tuple[Usage | None, float | None, dict | None]] = {}
    for st in session.steps:
        if st.action_event_id is not None and (st.usage is not None or st.cost is not None):
            step_usage[st.action_event_id] = (st.model_usage, st.cost, st.usage)
    # The sub-sessions each action spawned, with the native id of the call
    # whose step holds them (a step of one call among several knows it).
    child_for_event: dict[Any, list[tuple[Session, Any]]] = {}
    for st in session.steps:
        for c in st.children:
            child_for_event.setdefault(st.action_event_id, []).append((c, st.extra.get("call_id")))

    events = session.events
    system = next((e for e in events if e.kind == SYSTEM), None)
    model = session.run.models[0] if session.run.models else None
    # Settings as written so far (the compaction checkpoint repeats them).
    settings: dict[str, Any] = {}

    effort = session.run.reasoning_effort

    def config_body(e: Event | None) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if model:
            body["model"] = model
        if isinstance(effort, str) and effort and effort.lower() != "none":
            body["reasoning"] = {"effort": effort}
        if e is not None and e.text is not None:
            body["instructions"] = e.text
        tools = _tools_of(e) if e is not None else None
        if tools:
            body["tools_added"] = tools
        return body

    first = config_body(system)
    settings.update({k: v for k, v in first.items() if k not in ("tools_added", "reasoning")})
    if "reasoning" in first:
        settings["reasoning"] = first["reasoning"]
    if first.get("tools_added"):
        settings["tools"] = first["tools_added"]
    cfg_ts = (_ts_of(system) if system is not None else None) or header["created_at"]
    cid = b.add("config", first, cfg_ts, native=native_record(system) if system is not None else None, event=system)
    if system is not None:
        placed(system).entries.append(cid)

    leaf_after: dict[Any, str | None] = {}  # native event id -> the entry its successors hang off
    if system is not None and system.id is not None:
        leaf_after[system.id] = b.leaf
    call_map: dict[str, str] = {}  # native call id -> written call id
    calls_of_event: dict[Any, list[str]] = {}  # native action event id -> written call ids
    native_calls_of_event: dict[Any, list[tuple[Any, str]]] = {}
    used_calls: set[str] = set()
    entry_of_event: dict[Any, list[str]] = {}
    links_pending: dict[str, list[Session]] = {}  # written call id -> child sessions
    minted = 0

    def mint(native: Any) -> str:
        nonlocal minted
        if isinstance(native, str) and _CALL_ID_RE.match(native) and native not in used_calls:
            used_calls.add(native)
            return native
        while True:
            minted += 1
            c = f"call_trajkit_{minted}"
            if c not in used_calls:
                used_calls.add(c)
                return c

    # Response grouping: consecutive model-output events sharing a response id.
    open_resp: dict[str, Any] | None = None

    def close_response() -> None:
        nonlocal open_resp
        if open_resp is None:
            return
        r = open_resp
        open_resp = None
        body: dict[str, Any] = {}
        if r["response_id"]:
            body["response_id"] = r["response_id"]
        if r["model"]:
            body["model"] = r["model"]
        body["status"] = "completed"
        if r["usage"] is not None:
            body["usage"] = r["usage"]
        if r["native_usage"] is not None:
            body["trajkit:usage"] = r["native_usage"]
            lat = r["native_usage"].get("latency") if isinstance(r["native_usage"], dict) else None
            if isinstance(lat, (int, float)) and not isinstance(lat, bool) and lat >= 0:
                body["latency_ms"] = int(round(lat * 1000))
        if r["cost"] is not None:
            body["trajkit:cost_usd"] = r["cost"]
            if r.get("cost_estimated"):
                body["trajkit:cost_estimated"] = True
        for k in ("prompt_token_ids", "completion_token_ids", "logprobs"):
            if r.get(k) is not None:
                body["trajkit:" + k] = r[k]
        if request_hashes and r["response_id"] and r["before"]:
            # The request context ends just before this call's first output item.
            body["request_hash"] = b.request_hash(r["response_id"], r["before"])
        rid = b.add("response", body, r["ts"])
        for ev in r["events"]:
            placed(ev).entries.append(rid)
            leaf_after[ev.id] = rid

    def open_response(e: Event) -> None:
        nonlocal open_resp
        rid = e.response_id
        if open_resp is not None and (rid is None or rid != open_resp["response_id"]):
            close_response()
        if open_resp is None:
            open_resp = {
                "response_id": rid,
                "model": e.extra.get("model") or (e.model_usage.model if e.model_usage is not None else None) or model,
                "usage": None,
                "native_usage": None,
                "cost": None,
                "ts": _ts_of(e),
                "events": [],
                "before": b.leaf,
            }
        open_resp["events"].append(e)
        open_resp["ts"] = _ts_of(e) or open_resp["ts"]
        su = step_usage.get(e.id)
        u, cost, native = su if su else (e.model_usage, None, e.usage)
        if open_resp["usage"] is None and native is not None:
            open_resp["usage"] = _usage_to_openresponses(u)
            open_resp["native_usage"] = native
        if cost is None and u is not None and u.cost is not None:
            # the call's own cost when the step carries none; an estimate from
            # the price table (trajkit.pricing) is said to be one
            cost = u.cost
            if u.cost_estimated and open_resp["cost"] is None:
                open_resp["cost_estimated"] = True
        if open_resp["cost"] is None and isinstance(cost, (int, float)) and not isinstance(cost, bool):
            open_resp["cost"] = float(cost)
        for k in ("prompt_token_ids", "completion_token_ids", "logprobs"):
            if e.extra.get(k) is not None and open_resp.get(k) is None:
                open_resp[k] = e.extra[k]

    known_ids = {e.id for e in events if e.id is not None}
    for e in events:
        ts = _ts_of(e)
        p = placed(e)
        native = native_record(e)
        if e is system:
            if e.id is not None:
                leaf_after[e.id] = b.leaf
            continue
        k = e.kind
        is_output = (k in (ACTION, REASONING) and e.source != "user") or (k == MESSAGE and e.role == "assistant")
        if not is_output:
            close_response()
        if e.parent_id is not None and k in _CONTEXT_KINDS:
            # A tree of events (the SDK's): an event hangs off its parent's
            # entries, so abandoned branches stay out of the live context.
            if e.parent_id in leaf_after:
                target = leaf_after[e.parent_id]
            elif e.parent_id not in known_ids and isinstance(e.parent_id, str) and b.leaf is not None:
                target = _NEW_ROOT
            else:
                target = b.leaf
            if target != b.leaf and not _records_between(b.file, target, b.leaf):
                close_response()
                if target is _NEW_ROOT:
                    b.jump(None)
                    root_cfg = config_body(system)
                    cid2 = b.add("config", root_cfg, ts)
                    p.entries.append(cid2)
                else:
                    b.jump(target)
        first_entry = True

        def add(type_: str, body: dict[str, Any]) -> str:
            nonlocal first_entry
            eid = b.add(type_, body, ts, native=native if first_entry else None, event=e)
            first_entry = False
            p.entries.append(eid)
            entry_of_event.setdefault(e.id, []).append(eid)
            if e.id is not None:
                leaf_after[e.id] = eid
            return eid

        resp = {"response": e.response_id} if e.response_id else {}
        if k == SYSTEM:
            body = config_body(e)
            body.pop("model", None)
            body.pop("reasoning", None)
            if body.get("tools_added") and settings.get("tools"):
                # A new system prompt declares the whole tool list: drop the old one first.
                new_names = {t.get("name") for t in body["tools_added"] if isinstance(t, dict)}
                gone = [t.get("name") for t in settings["tools"] if isinstance(t, dict) and t.get("name") and t.get("name") not in new_names]
                if gone:
                    body["tools_removed"] = gone
            add("config", body)
            if "instructions" in body:
                settings["instructions"] = body["instructions"]
            if body.get("tools_added"):
                settings["tools"] = body["tools_added"]
        elif k == MESSAGE:
            role = e.role if e.role in ("user", "assistant", "system", "developer") else "user"
            text = e.text if e.text is not None else ""
            if role == "assistant":
                open_response(e)
                if e.reasoning:
                    add("item", {"item": {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": e.reasoning}]}, **resp})
                add("item", {"item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}, **resp})
            else:
                add("item", {"item": {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}})
        elif k == ACTION:
            if e.source == "user" and not e.tool_calls:
                # An action a person ran: no model produced it, so it is no function_call.
                add(f"{NS}:event", {"kind": e.kind, "native_type": e.type, "source": e.source, "text": e.text})
                continue
            open_response(e)
            if e.reasoning:
                add("item", {"item": {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": e.reasoning}]}, **resp})
            if e.text:
                add("item", {"item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": e.text, "annotations": []}]}, **resp})
            calls = e.tool_calls or [ToolCall(name=e.type, arguments={}, call_id=None)]
            written: list[str] = []
            for c in calls:
                wid = mint(c.call_id)
                if c.call_id is not None:
                    call_map[c.call_id] = wid
                name = c.name if isinstance(c.name, str) and c.name else e.type
                item = {"type": "function_call", "call_id": wid, "name": _NAME_RE.sub("_", name)[:64] or "tool", "arguments": _args_text(c.arguments), "status": "completed"}
                body: dict[str, Any] = {"item": item, **resp}
                if c.call_id != wid:
                    body["trajkit:native_call_id"] = c.call_id
                if item["name"] != name:
                    body["trajkit:native_name"] = name
                add("item", body)
                written.append(wid)
            calls_of_event[e.id] = written
            native_calls_of_event[e.id] = [(c.call_id, w) for c, w in zip(calls, written)]
            for child, native_cid in child_for_event.get(e.id, []):
                w = next((w for c, w in zip(calls, written) if native_cid is not None and c.call_id == native_cid), written[0])
                links_pending.setdefault(w, []).append(child)
        elif k == OBSERVATION:
            wid = None
            if e.cause is not None and calls_of_event.get(e.cause):
                # The action it answers decides, so re-used native call ids stay apart.
                pairs = native_calls_of_event.get(e.cause, [])
                wid = next((w for n, w in pairs if n is not None and n == e.call_id), calls_of_event[e.cause][0])
            elif e.call_id is not None and e.call_id in call_map:
                wid = call_map[e.call_id]
            if wid is None and e.call_id is None and e.cause is not None and e.cause in entry_of_event and not calls_of_event.get(e.cause):
                # The answer to an event that is no function_call (a state change,
                # a person's own command): kept beside it, out of context.
                body = {"kind": e.kind, "native_type": e.type, "cause": entry_of_event[e.cause][-1]}
                if e.source is not None:
                    body["source"] = e.source
                if e.text is not None:
                    body["text"] = e.text
                add(f"{NS}:event", body)
                continue
            body = {"item": {"type": "function_call_output", "call_id": wid or mint(e.call_id), "output": e.text if e.text is not None else ""}}
            if wid is None:
                body["trajkit:orphan"] = True
                if e.call_id is not None:
                    body["trajkit:native_call_id"] = e.call_id
            add("item", body)
            if wid is not None and wid in links_pending:
                # several sub-agents of one call (a workflow's agents) get distinct ids
                for n, child in enumerate(links_pending.pop(wid)):
                    _link_child(session, child, sid, wid, b, out, passthrough, redactor, request_hashes, p, n=n)
                leaf_after[e.id] = b.leaf  # what follows the answer hangs off its links
        elif k == REASONING:
            open_response(e)
            add("item", {"item": {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": e.reasoning or e.text or ""}]}, **resp})
        elif k == CONDENSATION:
            body = _compaction(e, b, entry_of_event, events, settings)
            add("compaction", body)
        else:
            body = {"kind": e.kind, "native_type": e.type}
            if e.source is not None:
                body["source"] = e.source
            if e.text is not None:
                body["text"] = e.text
            if e.call_id is not None:
                body["call_id"] = call_map.get(e.call_id, e.call_id)
            add(f"{NS}:event", body)
    close_response()
    # Several leaves: mark the live one (the reader's leaf event) with a label.
    live_event = session.metadata.get("leaf_event_id")
    if live_event is None and isinstance(session.metadata.get("active_branch"), list) and session.metadata["active_branch"]:
        live_event = session.metadata["active_branch"][-1]
    if len(b.file.leaves()) > 1 and live_event in leaf_after and leaf_after[live_event] is not None:
        live = leaf_after[live_event]
        if live != b.file.entries[-1].id:
            b.jump(live)
            b.add("label", {"target": live, "label": "leaf", "synthetic": True})
    for wid, children in links_pending.items():
        for n, child in enumerate(children):
            _link_child(session, child, sid, wid, b, out, passthrough, redactor, request_hashes, None, n=n)
    linked = {id(c) for c in out.linked}
    for n, child in enumerate(session.children):
        if id(child) in linked:
            continue
        # no reader records which call spawned a child it found on disk: the link names none
        _link_child(session, child, sid, None, b, out, passthrough, redactor, request_hashes, None, n=n)
    for e in events:
        if not place.get(id(e)) or not place[id(e)].entries:
            pl = placed(e)
            pl.code = "export.no-entry"
            pl.note = "the event produced no entry"


def _records_between(f: asf.AsfFile, ancestor: Any, leaf: str | None) -> bool:
    """Whether ``leaf`` descends from ``ancestor`` through record entries only
    (records are appended at the leaf and do not start a branch)."""
    cur = leaf
    while cur is not None and cur != ancestor:
        e = f.by_id.get(cur)
        if e is None or e.type in asf.CONTEXT_TYPES:
            return False
        cur = e.parent
    return cur == ancestor and ancestor is not None


def _link_child(parent: Session, child: Session, parent_sid: str, call_id: str | None, b: _Builder, out: AsfExport,
                passthrough: bool, redactor: Redactor, request_hashes: bool, p: Placement | None, n: int = 0) -> None:
    out.linked.append(child)
    child_sid = subsession_uuid(parent_sid, call_id, n) if call_id else subsession_uuid(parent_sid, f"child-{n}")
    body: dict[str, Any] = {"rel": "subsession", "session": child_sid}
    if call_id:
        body["call_id"] = call_id
    eid = b.add("link", body)
    if p is not None:
        p.entries.append(eid)
    _convert(child, child_sid, parent_sid, call_id, out, passthrough, redactor, request_hashes)


def _compaction(e: Event, b: _Builder, entry_of_event: dict[Any, list[str]], events: list[Event], settings: dict[str, Any]) -> dict[str, Any]:
    forgotten = e.extra.get("forgotten_event_ids")
    forgotten_set = set(forgotten) if isinstance(forgotten, list) else set()
    path_ids = [x.id for x in b.file.path_to(b.leaf)] if b.leaf else []
    # The entries of forgotten events, and the last of them on the path.
    forgotten_entries = {eid for ev_id in forgotten_set for eid in entry_of_event.get(ev_id, [])}
    last_forgotten = max((path_ids.index(x) for x in forgotten_entries if x in path_ids), default=None)
    if last_forgotten is None or last_forgotten + 1 >= len(path_ids):
        first_kept = path_ids[0] if path_ids else None
        pinned: list[Any] = []
    else:
        first_kept = path_ids[last_forgotten + 1]
        pinned = []
        for x in path_ids[: last_forgotten + 1]:
            ent = b.file.by_id[x]
            if x not in forgotten_entries and ent.type == "item":
                pinned.append(ent.obj["item"])
    body: dict[str, Any] = {
        "first_kept": first_kept,
        "summary": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": e.text or ""}]},
    }
    if pinned:
        body["pinned"] = pinned
    cfg = {k: v for k, v in settings.items() if v is not None}
    body["config"] = cfg
    if forgotten_set:
        body["trajkit:forgotten_event_ids"] = sorted(forgotten_set, key=str)
    # The summary was itself a model call (a condenser's request).
    usage = _usage_to_openresponses(e.model_usage)
    if usage is not None:
        body["usage"] = usage
    if e.response_id:
        body["trajkit:response_id"] = e.response_id
    return body
