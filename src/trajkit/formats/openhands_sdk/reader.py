"""Read one OpenHands SDK (V1) conversation directory into a Session.

Events are read as the SDK reads them (index order from 0 to the first
missing index); every file of the directory is accounted for in
``Session.files``; the event tree gives the active branch; usage is joined
to events by ``llm_response_id``; sub-agent conversations under
``subagents/`` become child sessions, matched to the action that spawned
them where that can be told.
"""

from __future__ import annotations

import gc
import os
from collections import Counter
from datetime import datetime
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import orjson

from ... import jsonio
from ...diagnostics import ERROR, INFO, WARNING, Diagnostic
from ...reading import fs
from ...reading import tree as read_tree
from ...reading import io as read_io
from ...reading.probe import Probe
from ...model import (
    ACTION,
    CONDENSATION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    OTHER,
    STATE,
    SYSTEM,
    Event,
    ReadOptions,
    Ref,
    Session,
    FileEdit,
    SourceFile,
    ToolCall,
    Usage,
)
from ...vocab.openhands import SDK_TOOLS
from . import layout, tree
from .fields import (
    RESPONSE_KINDS,
    action_call,
    action_kind,
    action_reasoning,
    observation_text,
    reasoning,
    texts,
)
from .outcome import outcome, run_facts
from .stepping import STEP_USAGE_SOURCE, Pairing, build_steps
from .layout import EVENT, MALFORMED
from .views import (
    ACPToolCallView,
    AgentErrorView,
    CondensationView,
    ConversationErrorView,
    EventView,
    SecurityAnalysisView,
    StateView,
    SystemPromptView,
    UserRejectView,
    KNOWN_KINDS,
    LEGACY_KIND_ALIASES as _ALIASES,
    _VIEW_BY_KIND,
    content_text,
)

FORMAT_NAME = "openhands-sdk"
#: How deep sub-agent directories nest before the reader stops descending.
MAX_CHILD_DEPTH = 16

_KIND_MAP = {
    "SystemPromptEvent": SYSTEM,
    "MessageEvent": MESSAGE,
    "ActionEvent": ACTION,
    "ObservationEvent": OBSERVATION,
    "UserRejectObservation": OBSERVATION,
    "AgentErrorEvent": OBSERVATION,
    "Condensation": CONDENSATION,
    "CondensationSummaryEvent": CONDENSATION,
    "CondensationRequest": STATE,
    "PauseEvent": STATE,
    "InterruptEvent": STATE,
    "ConversationStateUpdateEvent": STATE,
    "SecurityAnalysisEvent": STATE,
    "ConversationErrorEvent": ERROR_EVENT,
    "ServerErrorEvent": ERROR_EVENT,
    "ACPToolCallEvent": ACTION,
}
_ROLE_OF_SOURCE = {"user": "user", "agent": "assistant"}


def _localize(ts: str | None, tz: Any) -> str | None:
    if ts is None or tz is None:
        return ts
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return dt.isoformat()


def _zone(name: str | None, session: Session) -> Any:
    if not name:
        return None
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception as e:  # unknown zone, no tzdata
        session.diag("sdk.bad-timezone", f"cannot use time zone {name!r} ({e}); timestamps left naive", WARNING)
        return None


def normalize_event(v: EventView, path: str, tz: Any = None) -> Event:
    """The normalized :class:`Event` for one typed view (answer links are
    filled later, when the whole log is known)."""
    return normalize_raw(v.raw, path, tz)


#: Members each known kind must have, and their JSON type (views.REQUIRED, flattened).
_REQUIRED: dict[str, tuple[tuple[str, type], ...]] = {
    k: tuple((name, typ) for name, typ in cls.REQUIRED.items())  # type: ignore[misc]
    for k, cls in _VIEW_BY_KIND.items()
    if cls.REQUIRED
}


def misfit_members(raw: dict, kind: Any) -> list[str]:
    """Members the kind requires that are missing or of the wrong JSON type."""
    req = _REQUIRED.get(kind)
    if not req:
        return []
    return [name for name, typ in req if type(raw.get(name)) is not typ]


def _described_call(raw: dict, kind: str, name: str, args: Any, call_id: str | None) -> ToolCall:
    """An ActionEvent's call, described by the SDK tool table as the SDK ran
    it: the parsed ``action`` (named by its kind) when the event holds one,
    else the tool call's own name and arguments."""
    g = raw.get
    act = g("action")
    if type(act) is dict and act:
        return SDK_TOOLS.call(name, args, call_id, action=str(act.get("kind") or g("tool_name") or kind), input=act)
    tc = g("tool_call")
    tc = tc if type(tc) is dict else {}
    a = tc.get("arguments")
    if type(a) is str:
        try:
            a = orjson.loads(a)
        except orjson.JSONDecodeError:
            a = {"_raw": a}
    return SDK_TOOLS.call(name, args, call_id, action=str(g("tool_name") or tc.get("name") or kind),
                          input=a if type(a) is dict else {})


def _file_edit(obs: dict) -> FileEdit | None:
    """The file change a file-editor observation records (none for ``view`` or an error)."""
    cmd = obs.get("command")
    if cmd is None or cmd == "view" or obs.get("is_error"):
        return None
    path, old, new, prev = obs.get("path"), obs.get("old_content"), obs.get("new_content"), obs.get("prev_exist")
    if type(path) is not str:
        return None
    return FileEdit(path, old if type(old) is str else None, new if type(new) is str else None, prev if type(prev) is bool else None)


def normalize_raw(raw: dict, path: str, tz: Any = None) -> Event:
    """The normalized :class:`Event` for one decoded event object.

    Reads the members straight from the dict (the typed views in
    :mod:`.views` give the same facts one member at a time); never writes
    into ``raw``.
    """
    g = raw.get
    kind = g("kind")
    if type(kind) is not str:
        kind = None
    eid = g("id")
    if type(eid) is not str:
        eid = str(eid) if type(eid) is int else None
    ts = g("timestamp")
    if type(ts) is not str:
        ts = None
    elif tz is not None:
        ts = _localize(ts, tz)
    src = g("source")
    pid = g("parent_id")
    extra: dict[str, Any] = {}
    ev = Event(
        eid,
        _KIND_MAP.get(kind, OTHER),  # type: ignore[arg-type]
        kind or "?",
        raw,
        src if type(src) is str else None,
        None,
        ts,
        None,
        [],
        None,
        None,
        None,
        None,
        None,
        pid if type(pid) is str else None,
        Ref(path, eid),
        extra,
    )
    if kind == "ActionEvent":
        ev.role = "assistant"
        ev.text = texts(g("thought"), "\n")
        tool_name = g("tool_name")
        call_id = g("tool_call_id")
        if type(call_id) is not str:
            call_id = None
            extra["misfit_members"] = ["tool_name", "tool_call_id"] if type(tool_name) is not str else ["tool_call_id"]
        elif type(tool_name) is not str:
            extra["misfit_members"] = ["tool_name"]
        name, args, decoded = action_call(raw)
        act = g("action")
        if type(act) is dict:
            extra["tool_name"] = tool_name
            extra["action_kind"] = action_kind(raw)
            extra["executable"] = True
        else:
            extra["tool_name"] = tool_name
            extra["action_kind"] = None
            extra["executable"] = False
        ev.tool_calls.append(_described_call(raw, kind, name, args, call_id))
        ev.call_id = call_id
        rid = g("llm_response_id")
        ev.response_id = rid if type(rid) is str else None
        ev.reasoning = action_reasoning(raw)
        if not decoded:
            extra["arguments_not_json"] = True
        risk = g("security_risk")
        if type(risk) is str:
            extra["security_risk"] = risk
        summ = g("summary")
        if type(summ) is str:
            extra["summary"] = summ
    elif kind == "ObservationEvent":
        obs = g("observation")
        cid = g("tool_call_id")
        if type(obs) is not dict or type(cid) is not str or type(g("tool_name")) is not str:
            extra["misfit_members"] = misfit_members(raw, kind)
            if type(obs) is not dict:
                obs = {}
        ev.role = "tool"
        ev.text = observation_text(obs)
        ev.call_id = cid if type(cid) is str else None
        aid = g("action_id")
        ev.cause = aid if type(aid) is str else None
        ok = obs.get("kind")
        md = obs.get("metadata")
        wd = md.get("working_dir") if type(md) is dict else None
        if type(wd) is str and wd.startswith("/"):
            ev.cwd = wd
        if ok == "FileEditorObservation" or ok == "PlanningFileEditorObservation":
            ev.edit = _file_edit(obs)
        extra["tool_name"] = g("tool_name")
        extra["observation_kind"] = _ALIASES.get(ok, ok) if type(ok) is str else None
        if obs.get("is_error") is True:
            extra["is_error"] = True
    elif kind == "MessageEvent":
        lm = g("llm_message")
        if type(lm) is not dict:
            lm = {}
        role = lm.get("role")
        ev.role = role if type(role) is str else _ROLE_OF_SOURCE.get(ev.source or "")
        ev.text = texts(lm.get("content"), "\n")
        rid = g("llm_response_id")
        ev.response_id = rid if type(rid) is str else None
        ev.reasoning = reasoning(lm)
        ext = g("extended_content")
        if ext:
            extra["extended_text"] = texts(ext, "\n")
        sender = g("sender")
        if type(sender) is str:
            extra["sender"] = sender
    elif kind == "UserRejectObservation":
        v = UserRejectView(raw)
        ev.role = "tool"
        ev.text = v.text
        ev.call_id = v.tool_call_id
        ev.cause = v.action_id
        extra["tool_name"] = v.tool_name
        extra["rejected"] = True
        if v.rejection_source:
            extra["rejection_source"] = v.rejection_source
    elif kind == "AgentErrorEvent":
        v = AgentErrorView(raw)
        ev.role = "tool"
        ev.text = v.error
        ev.call_id = v.tool_call_id
        extra["tool_name"] = v.tool_name
        extra["is_error"] = True
        if v.classification is not None:
            extra["classification"] = v.classification
    elif kind == "SystemPromptEvent":
        v = SystemPromptView(raw)
        ev.role = "system"
        ev.text = v.text
        dc = v.dynamic_context
        if dc is not None and isinstance(dc.get("text"), str):
            extra["dynamic_context"] = dc["text"]
        extra["tool_names"] = [t.get("title") or t.get("name") for t in v.tools if isinstance(t, dict)]
        tools = g("tools")
        if type(tools) is list:
            ev.tools = tools
    elif kind == "Condensation":
        v = CondensationView(raw)
        ev.response_id = v.llm_response_id
        ev.text = v.summary
        extra["forgotten_event_ids"] = v.forgotten_event_ids
        if v.summary is not None:
            extra["summary"] = v.summary
        if v.summary_offset is not None:
            extra["summary_offset"] = v.summary_offset
    elif kind in ("ConversationErrorEvent", "ServerErrorEvent"):
        v = ConversationErrorView(raw)
        ev.text = v.detail
        extra["code"] = v.code
        if v.classification is not None:
            extra["classification"] = v.classification
    elif kind == "ConversationStateUpdateEvent":
        key = g("key")
        extra["key"] = key if type(key) is str else None
    elif kind == "SecurityAnalysisEvent":
        extra["risks"] = SecurityAnalysisView(raw).risks
    elif kind == "ACPToolCallEvent":
        v = ACPToolCallView(raw)
        name = v.tool_kind or v.title or "acp_tool"
        ev.role = "assistant"
        ev.text = v.title
        ev.tool_calls.append(SDK_TOOLS.call(name, v.raw_input, v.tool_call_id))
        ev.call_id = v.tool_call_id
        extra["acp_output"] = v.output_text
        extra["acp_status"] = v.status
        if v.is_error:
            extra["is_error"] = True
    if kind not in KNOWN_KINDS:
        extra["unknown_kind"] = True
    elif kind in _REQUIRED and kind not in _CHECKED_INLINE:
        bad = misfit_members(raw, kind)
        if bad:
            extra["misfit_members"] = bad
    return ev


_CHECKED_INLINE = frozenset({"ActionEvent", "ObservationEvent"})
#: Known kinds with required members (the reader checks them as it reads).
_REQUIRED_KNOWN = frozenset(_REQUIRED) & KNOWN_KINDS
#: The known kinds that require one member: (its name, its JSON type), checked inline as the reader reads.
_ONE_REQUIRED = {k: req[0] for k, req in _REQUIRED.items() if k in _REQUIRED_KNOWN and len(req) == 1}


# ----------------------------------------------------------------- state


_COUNT_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "context_window",
    "per_turn_token",
)


#: The largest count :func:`jsonio.tolerant_int` takes as written (its default limit).
_COUNT_LIMIT = 1 << 53


class _Numbers:
    """Counts read leniently, with a tally of what was odd."""

    __slots__ = ("floats", "bad")

    def __init__(self) -> None:
        self.floats = 0
        self.bad = 0

    def count(self, v: Any) -> int:
        n, flagged = jsonio.tolerant_int(v)
        if flagged:
            if v is None:
                pass
            elif isinstance(v, float) and v.is_integer() and n == v:
                self.floats += 1
            else:
                self.bad += 1
        return n

    def money(self, v: Any) -> float:
        t = type(v)
        if t is float:
            if 0.0 <= v < _INF:  # false for NaN, negatives and infinity
                return v
        elif t is int and v >= 0:
            return float(v)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if v is not None:
                self.bad += 1
            return 0.0
        if v != v or v < 0 or v in (_INF, -_INF):
            self.bad += 1
            return 0.0
        return float(v)

    def seconds(self, v: Any) -> float | None:
        t = type(v)
        if t is float or t is int:
            return float(v) if v >= 0 else None  # NaN is not >= 0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0:
            return None
        return float(v)


_INF = float("inf")


_counts_of = itemgetter(*_COUNT_FIELDS)


def _usage(tu: dict, nums: _Numbers) -> dict[str, Any]:
    try:
        a, b, c, d, e, f, g = _counts_of(tu)
    except KeyError:  # a count missing: the general case below
        pass
    else:
        # every count present, each a plain int in 0 .. 2**53 - 1 (or'ed together a
        # negative stays negative): taken as written, what the general case below
        # makes of them, in its order, without its per-count test
        if (type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int
                and type(f) is int and type(g) is int and not (a | b | c | d | e | f | g) >> 53):
            model = tu.get("model")
            if type(model) is str:
                return {"prompt_tokens": a, "completion_tokens": b, "cache_read_tokens": c, "cache_write_tokens": d,
                        "reasoning_tokens": e, "context_window": f, "per_turn_token": g, "model": model}
            return {"prompt_tokens": a, "completion_tokens": b, "cache_read_tokens": c, "cache_write_tokens": d,
                    "reasoning_tokens": e, "context_window": f, "per_turn_token": g}
    out = {f: tu[f] for f in _COUNT_FIELDS if f in tu}
    for f, v in out.items():
        # a plain count as tolerant_int takes it, without the call
        if type(v) is not int or not 0 <= v <= _COUNT_LIMIT:
            out[f] = nums.count(v)
    model = tu.get("model")
    if type(model) is str:
        out["model"] = model
    return out


def read_stats(state: StateView, nums: _Numbers) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Per usage id: model, accumulated cost and token totals, call count;
    and the per-response usage index (response id -> usage, latency, cost)."""
    summary: dict[str, Any] = {}
    by_response: dict[str, dict[str, Any]] = {}
    money, seconds = nums.money, nums.seconds
    for usage_id, m in state.usage_to_metrics.items():
        if not isinstance(m, dict):
            continue
        g = m.get
        acc = g("accumulated_token_usage")
        # one pass over each list (each entry that is an object), making
        # what the summary and the per-response index take from it
        norm_usages: list[dict[str, Any]] = []
        rids: list[Any] = []
        usage_rows: list[dict[str, Any]] = []
        v = g("token_usages")
        if type(v) is list:
            for t in v:
                if type(t) is dict:
                    u = _usage(t, nums)
                    r = t.get("response_id")
                    norm_usages.append(u)
                    rids.append(r)
                    usage_rows.append(dict(u, response_id=r))
        norm_costs: list[float] = []
        cost_rows: list[dict[str, Any]] = []
        cost_by_id: dict[str, float] = {}
        v = g("costs")
        if type(v) is list:
            for c in v:
                if type(c) is dict:
                    x = money(c.get("cost"))
                    norm_costs.append(x)
                    cost_rows.append({"model": c.get("model"), "cost": x, "timestamp": c.get("timestamp")})
                    r = c.get("response_id")
                    if type(r) is str:
                        cost_by_id[r] = x
        latency_rows: list[dict[str, Any]] = []
        latency: dict[str, Any] = {}
        v = g("response_latencies")
        if type(v) is list:
            for c in v:
                if type(c) is dict:
                    x = c.get("latency")
                    if type(x) is not float or not x >= 0.0:
                        x = seconds(x)
                    r = c.get("response_id")
                    latency_rows.append({"model": c.get("model"), "latency": x, "response_id": r})
                    if type(r) is str:
                        latency[r] = x
        name = g("model_name")
        summary[usage_id] = {
            "model_name": name if type(name) is str else None,
            "accumulated_cost": money(g("accumulated_cost")),
            "accumulated_token_usage": _usage(acc, nums) if type(acc) is dict else {},
            "calls": len(norm_usages),
            "token_usages": usage_rows,
            "costs": cost_rows,
            "response_latencies": latency_rows,
        }
        positional = not cost_by_id and norm_costs and len(norm_costs) == len(norm_usages)
        for i, rid in enumerate(rids):
            if type(rid) is not str or not rid or rid in by_response:
                continue  # no response id, or a later entry of one already indexed (the first wins)
            # the entry's own usage dict becomes the index entry (its summary row is a copy made
            # above): nothing else holds it
            u = norm_usages[i]
            u["usage_id"] = usage_id
            lat = latency.get(rid)
            if lat is not None:
                u["latency"] = lat
            if rid in cost_by_id:
                u["cost"] = cost_by_id[rid]
            elif positional:
                u["cost"] = norm_costs[i]
                u["cost_join"] = "position"
            by_response[rid] = u
    return summary, by_response


#: The conversation status field: ``execution_status`` since SDK 1.0, ``agent_status`` before
#: (pre-1.0 ``base_state.json`` and ``ConversationStateUpdateEvent`` keys).
STATUS_KEYS = ("execution_status", "agent_status")


def state_status(state: dict[str, Any]) -> str | None:
    """The conversation's status in a state dict, under its current or its pre-1.0 name."""
    for k in STATUS_KEYS:
        v = state.get(k)
        if isinstance(v, str):
            return v
    return None


def state_facts(state: StateView) -> dict[str, Any]:
    """The base_state facts consumers need, flat (the whole file stays in ``metadata['state']``).
    (:class:`StateView`'s properties, read from the dict at once.)"""
    raw = state.raw
    if not isinstance(raw, dict):
        raw = {}
    g = raw.get
    agent = g("agent")
    if not isinstance(agent, dict) or not agent:
        agent = {}
    ag = agent.get
    llm = ag("llm")
    if not isinstance(llm, dict) or not llm:
        llm = {}
    ws = g("workspace")
    wd = ws.get("working_dir") if isinstance(ws, dict) else None
    cp = g("confirmation_policy")
    sa = g("security_analyzer")
    v = [g("id"), ag("kind"), llm.get("model"), llm.get("usage_id"), llm.get("reasoning_effort"), g("leaf_event_id"),
         g("persistence_dir"), g("last_user_message_id")]
    tools = ag("tools")
    cond = ag("condenser")
    hie, mi, ba, tags = g("head_is_empty"), g("max_iterations"), g("blocked_actions"), g("tags")
    return {
        "conversation_id": v[0] if type(v[0]) is str else None,
        "agent_kind": v[1] if type(v[1]) is str else None,
        "model": v[2] if type(v[2]) is str else None,
        "usage_id": v[3] if type(v[3]) is str else None,
        "reasoning_effort": v[4] if type(v[4]) is str else None,
        "working_dir": wd if type(wd) is str else None,
        "execution_status": state_status(raw),
        "confirmation_policy": cp.get("kind") if isinstance(cp, dict) else None,
        "security_analyzer": sa.get("kind") if isinstance(sa, dict) else None,
        "leaf_event_id": v[5] if type(v[5]) is str else None,
        "head_is_empty": hie if type(hie) is bool else None,
        "max_iterations": mi if isinstance(mi, int) else None,
        "persistence_dir": v[6] if type(v[6]) is str else None,
        "last_user_message_id": v[7] if type(v[7]) is str else None,
        "tools": [t.get("name") for t in tools if isinstance(t, dict)] if isinstance(tools, list) else [],
        "condenser": (cond or {}).get("kind") if isinstance(cond, dict) else None,
        "blocked_actions": ba if isinstance(ba, dict) else {},
        "tags": tags if isinstance(tags, dict) else {},
    }


def meta_facts(meta: dict) -> dict[str, Any]:
    """The agent-server ``meta.json`` facts, and which shape it has
    (``embedded-agent`` before 1.43, ``stored-conversation`` after)."""
    g = meta.get
    metrics = g("metrics") if isinstance(g("metrics"), dict) else None
    return {
        "shape": "embedded-agent" if isinstance(g("agent"), dict) else "stored-conversation",
        "id": g("id"),
        "conversation_id": g("conversation_id"),
        "title": g("title") if isinstance(g("title"), str) else None,
        "created_at": g("created_at"),
        "updated_at": g("updated_at"),
        "tags": g("tags") if isinstance(g("tags"), dict) else {},
        "parent_conversation_id": g("parent_conversation_id"),
        "forked_from_conversation_id": g("forked_from_conversation_id"),
        "forked_from_event_id": g("forked_from_event_id"),
        "accumulated_cost": metrics.get("accumulated_cost") if metrics else None,
        "model": ((g("agent") or {}).get("llm") or {}).get("model") if isinstance(g("agent"), dict) else (
            g("llm_model") if isinstance(g("llm_model"), str) else None),  # Cloud's meta.json names the model so
    }


# ----------------------------------------------------------------- read


_ANSWER_KINDS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
#: Kinds whose ``response_id`` is their ``llm_response_id`` (every other kind has none).
#: The fields a lazy event derives (:meth:`Event.lazy`).
_DERIVED = ("source", "role", "timestamp", "text", "tool_calls", "call_id", "cause", "response_id", "reasoning", "usage", "parent_id",
            "edit", "cwd", "tools")


def _derive(tz: Any, added: dict[str, Any], raw: dict) -> dict[str, Any]:
    """The derived fields of a lazily built event: :func:`normalize_raw`'s,
    with what the reader added to ``extra`` (``added``) after its own."""
    ev = normalize_raw(raw, "", tz)
    values = {name: getattr(ev, name) for name in _DERIVED}
    extra = ev.extra
    extra.update(added)
    values["extra"] = extra
    return values
_READ_PROBLEM = {
    "sdk.event-too-large": "event {index} is {size} bytes, over the size cap of {cap} bytes; not read",
    "sdk.event-unreadable": "event {index} could not be read (vanished or unreadable)",
}
_READ_CODE = {read_io.TOO_LARGE: "sdk.event-too-large", read_io.UNREADABLE: "sdk.event-unreadable"}
def _load_json(path: str, cap: int) -> tuple[Any, Diagnostic | None, int | None]:
    """:func:`~trajkit.reading.io.load_json_sized`, with the common case of
    its lossless check inline (a compact object orjson writes back byte for
    byte, as the SDK writes ``base_state.json``); anything else takes it."""
    data, why = read_io.read_capped(path, cap)
    if data is None:
        return jsonio.MISSING, why.diagnostic(path, cap), None  # type: ignore[union-attr]
    try:
        value = orjson.loads(data)
        if type(value) is dict and data[1:2] != b"\n" and orjson.dumps(value) == data:
            return value, None, len(data)
    except (ValueError, TypeError):
        pass
    value, d = jsonio.loads(data, path)
    return value, d, len(data)


def read(root: Path, options: ReadOptions | None = None) -> Session:
    """Read the conversation directory ``root`` (never raises on bad data)."""
    options = options or ReadOptions()
    # A read allocates many small acyclic objects (decoded JSON, events); the
    # cycle collector would walk them over and over while they are built and
    # find nothing. Pause it for the read (about a tenth of the read time).
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _read(_abs(root), options, 0, ())
    finally:
        if paused:
            gc.enable()


def read_derived(root: Path, options: ReadOptions | None = None) -> Session:
    """The same Session as :func:`read`, with every event field derived while
    reading (the reference lazily built events are checked against)."""
    options = options or ReadOptions()
    return _read(_abs(root), options, 0, (), lazy=False)


def _abs(root: Any) -> Path:
    """``root`` as an absolute, normalized Path (the one ``trajkit.read``
    passes, absolute and without ``..``, is taken as it is)."""
    if isinstance(root, Path) and root.is_absolute() and ".." not in root.parts:
        return root
    return Path(os.path.abspath(os.fspath(root)))


def _read(root: Path, options: ReadOptions, depth: int, visiting: tuple[Any, ...], lazy: bool = True,
          entries: Any = None, listed: dict[str, Any] | None = None) -> Session:
    """One conversation and its sub-agents. ``visiting``: the stat identity
    of each conversation being read above this one (a sub-agent folder that
    is one of them is a symlink loop); ``entries``: the directory's listing
    when the caller holds it; ``listed``: the names of directories the
    caller listed (the verifier look-up answers from them without a stat)."""
    listed = dict(listed) if listed else {}
    s = _read_conversation(root, options, depth, visiting, lazy, entries, listed)
    run_facts(s, FORMAT_NAME, root, _Listed(listed))
    s.outcome = outcome(s)
    return s


class _Listed:
    """``absent`` / ``is_dir`` / ``is_file`` for :func:`~trajkit.vocab.trials.find_verifier_dir`:
    a path whose directory the read listed and that is not in the listing is
    neither, without a system call; anything else asks the disk."""

    __slots__ = ("names",)

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names

    def _listed_out(self, path: str) -> bool:
        """Whether ``path``'s folder was listed without it (paths as ``find_verifier_dir`` joins them)."""
        parent, _, name = path.rpartition(os.sep)
        listing = self.names.get(parent or os.sep)
        return listing is not None and name not in listing

    def absent(self, path: str) -> bool:
        """Certainly not there: listed out, or one ``access`` says so (a
        miss raises no exception, unlike a failing stat: half its cost)."""
        if self._listed_out(path):
            return True
        if fs.current() is not None:  # an archive mounted (reading.fs): no disk to ask
            return not fs.exists(path)
        try:
            return not os.access(path, os.F_OK)
        except ValueError:  # a NUL in the name: the stat below says no
            return False

    def is_dir(self, path: str) -> bool:
        return not self.absent(path) and fs.isdir(path)

    def is_file(self, path: str) -> bool:
        return not self.absent(path) and fs.isfile(path)


def _list_dir(root_s: str) -> list[tuple[str, bool]]:
    """(name, is a directory) per entry of ``root_s``, in name order; raises OSError."""
    return sorted(_listing(fs.scandir(root_s)))


def _read_conversation(root: Path, options: ReadOptions, depth: int, visiting: tuple[Any, ...], lazy: bool = True,
                       entries: Any = None, listed: dict[str, Any] | None = None) -> Session:
    root_s = str(root)
    s = Session(format=FORMAT_NAME, source_path=root_s, view="events")
    tz = _zone(options.tz, s) if options.tz else None
    if options.view not in (None, "events"):
        s.diag("sdk.unknown-view", f"view {options.view!r} asked for; an SDK conversation has one view, events", WARNING)
    cap = options.max_file_bytes

    # --- every top-level entry of the conversation directory, (name, is a
    # directory) in name order: as detection listed it (its hint,
    # layout.listing_hint) or the parent conversation did, else listed here
    if entries is None:
        hint = options.hint
        if type(hint) is tuple and len(hint) == 2 and hint[0] == root_s:
            entries = hint[1]
        else:
            try:
                entries = _list_dir(root_s)
            except (NotADirectoryError, FileNotFoundError):
                s.diag("sdk.not-a-directory", "not a conversation directory", ERROR, file=root_s)
                return s
            except OSError as e:
                if not fs.isdir(root_s):
                    s.diag("sdk.not-a-directory", "not a conversation directory", ERROR, file=root_s)
                    return s
                s.diag("sdk.dir-unreadable", f"cannot list the conversation directory: {e.strerror or e}", ERROR, file=root_s)
                return s
    names = [name for name, _ in entries]
    if listed is not None:
        listed[root_s] = names
    state_raw: Any = jsonio.MISSING
    meta_raw: Any = jsonio.MISSING
    child_dirs: list[Path] = []
    have_events_dir = False
    # a bare folder: event files right here, no events/ and no base_state.json
    bare = layout.is_bare_listing(names)
    base = root_s if root_s.endswith(os.sep) else root_s + os.sep  # os.path.join(root_s, name), for names from a listing
    for name, is_dir in entries:
        path = base + name
        if bare and not is_dir and layout.is_bare_event_name(name):
            continue  # an event file: scan_events accounts for it
        if name == layout.STATE_FILE and not is_dir:
            state_raw, d, size = _load_json(path, cap)
            sf = SourceFile(path, "state", "read", size)
            if state_raw is jsonio.MISSING or not isinstance(state_raw, dict):
                sf.status, sf.note = "skipped", MALFORMED
                if d is not None:
                    s.diagnostics.append(d)
                s.diag(
                    "sdk.state-malformed",
                    "base_state.json is not a readable JSON object; state facts (model, status, leaf) are unknown",
                    ERROR,
                    file=path,
                )
                state_raw = jsonio.MISSING
            elif d is not None:
                s.diagnostics.append(d)
            s.files.append(sf)
        elif name == layout.META_FILE and not is_dir:
            meta_raw, d, size = _load_json(path, cap)
            sf = SourceFile(path, "metadata", "read", size)
            if meta_raw is jsonio.MISSING or not isinstance(meta_raw, dict):
                sf.status, sf.note = "skipped", MALFORMED
                if d is not None:
                    s.diagnostics.append(d)
                s.diag("sdk.meta-malformed", "meta.json is not a readable JSON object", ERROR, file=path)
                meta_raw = jsonio.MISSING
            s.files.append(sf)
        elif name in ("TASKS.json", "owner_lease.json") and not is_dir:
            value, d, size = _load_json(path, cap)
            role = "tasks" if name == "TASKS.json" else "lease"
            sf = SourceFile(path, role, "read", size)
            if value is jsonio.MISSING:
                sf.status, sf.note = "skipped", MALFORMED
                if d is not None:
                    s.diagnostics.append(d)
            else:
                s.metadata[role] = value
            s.files.append(sf)
        elif name == layout.EVENTS_DIR and is_dir:
            have_events_dir = True
        elif name == layout.SUBAGENTS_DIR and is_dir:
            try:
                subs = sorted(fs.scandir(path), key=lambda x: x.name)
            except OSError as err:
                s.diag("sdk.dir-unreadable", f"cannot list subagents/: {err.strerror or err}", WARNING, file=path)
                subs = []
            else:
                if listed is not None:
                    listed[path] = [sub.name for sub in subs]
            for sub in subs:
                try:
                    if sub.is_dir():
                        child_dirs.append(sub)
                    else:
                        s.files.append(SourceFile(sub.path, "other", "unused", _size(sub)))
                except OSError:
                    continue
        elif name == layout.OBSERVATIONS_DIR and is_dir:
            for dirpath, _dirs, fnames in read_tree.walk(path):
                for fn in sorted(fnames):
                    fp = os.path.join(dirpath, fn)
                    s.files.append(SourceFile(fp, "observation-output", "unused", _stat_size(fp), note="full tool output the SDK saved"))
        elif name.startswith(".") and not is_dir:
            s.files.append(SourceFile(path, "sidecar", "ignored", _stat_size(path), note=layout.SIDECAR))
        else:
            s.files.append(SourceFile(path, "other", "unused", _stat_size(path) if not is_dir else None, note="not part of the SDK layout"))
            s.diag("sdk.unexpected-entry", f"{'directory' if is_dir else 'file'} not part of the SDK layout; left alone", INFO, file=path)

    state = StateView(state_raw if isinstance(state_raw, dict) else {})
    if bare:
        s.diag("sdk.bare-events", "event files directly in this folder (no events/ parent, no base_state.json): read as the "
               "conversation's events; state facts (status, leaf, usage) are unknown", INFO, file=root_s)
    elif state_raw is jsonio.MISSING and not any(f.role == "state" for f in s.files):
        s.diag("sdk.state-missing", "no base_state.json; state facts (model, status, leaf) are unknown", WARNING, file=os.path.join(root_s, layout.STATE_FILE))

    # --- events
    events_dir = root_s if bare else base + layout.EVENTS_DIR
    if bare:
        scan = layout.scan_events(events_dir, bare=True)
    else:
        scan = layout.scan_events(events_dir) if have_events_dir else layout.EventScan()
    if not have_events_dir and not bare:
        s.diag("sdk.events-missing", "no events/ directory; the conversation has no events", WARNING, file=events_dir)
    s.diagnostics.extend(scan.diagnostics)
    conv = ingest_events(s, _DirectoryEvents(scan, cap, "" if bare else layout.EVENTS_DIR + "/"), state, state_raw, meta_raw, options, tz, lazy,
                         state_file=base + layout.STATE_FILE, fallback_id=root.name)

    # --- children
    if child_dirs:
        visiting = visiting + (_identity(root_s),)
    for sub in child_dirs:
        cd = sub.path
        if depth + 1 > MAX_CHILD_DEPTH:
            s.diag("sdk.children-too-deep", f"sub-agents nest deeper than {MAX_CHILD_DEPTH}; not read", WARNING, file=cd)
            break
        try:
            st = sub.stat()  # symlinks followed (the entry's own cache)
            key: Any = (st.st_dev, st.st_ino)
        except OSError:
            key = None
        if key is not None and key in visiting:
            s.diag("sdk.symlink-loop", "sub-agent directory leads back to a conversation being read (symlink loop); not read", WARNING, file=cd)
            continue
        probe = Probe()
        if not layout.is_conversation_dir(cd, probe):
            s.files.append(SourceFile(cd, "other", "unused", None, note="subagents/ entry that is not a conversation"))
            s.diag("sdk.child-not-conversation", "subagents/ entry holds no conversation", INFO, file=cd)
            continue
        hint = layout.listing_hint(probe, cd)  # the listing the check made
        child = _read(Path(cd), options, depth + 1, visiting, lazy, hint[1] if hint is not None else None, listed)
        child.metadata["parent_id"] = s.id
        s.children.append(child)

    if options.steps:
        conv.build_steps(s)
    return s


class _DirectoryEvents:
    """The events of an ``events/`` directory, as :func:`ingest_events` takes
    them: each file read and decoded in the SDK's index order, what could not
    be read said and accounted for as it goes."""

    def __init__(self, scan: layout.EventScan, cap: int, prefix: str = layout.EVENTS_DIR + "/") -> None:
        self.scan = scan
        self.cap = cap
        self.prefix = prefix
        #: event files the SDK would read that could not be (too large, unreadable, not a JSON object)
        self.skipped = 0

    def items(self, s: Session) -> Iterator[tuple[dict, str, int, Any, int, Any]]:
        """(decoded event, file path, index, the id its name gives, size, ref line) per readable file."""
        cap = self.cap
        files_append = s.files.append
        loads, dumps = orjson.loads, orjson.dumps
        fast_loads = jsonio.fast_loads
        read_capped = read_io.read_capped
        for ef in self.scan.ordered:
            path = ef.path
            data, why = read_capped(path, cap)
            if data is None:
                code = _READ_CODE[why.code]  # type: ignore[union-attr]
                size = why.size  # type: ignore[union-attr]
                files_append(SourceFile(path, "event", "skipped", size, note=MALFORMED))
                s.diag(code, _READ_PROBLEM[code].format(index=ef.index, size=size, cap=cap), ERROR, file=path)
                self.skipped += 1
                continue
            d = None
            try:
                # jsonio.fast_loads' common case inline: a compact object that
                # orjson writes back byte for byte lost nothing (the SDK writes
                # its events so); anything else takes fast_loads' checks
                raw = loads(data)
                if type(raw) is not dict or data[1:2] == b"\n" or dumps(raw) != data:
                    raw = fast_loads(data)
            except (ValueError, TypeError):  # not JSON, or suspicious (orjson cannot write it back): the careful decode says what
                raw, d = jsonio.loads(data, path)
            if type(raw) is not dict:
                self.skipped += 1
                files_append(SourceFile(path, "event", "skipped", len(data), note=MALFORMED))
                if raw is jsonio.MISSING:
                    msg = d.message if d is not None else "not JSON"
                    code = "sdk.event-empty" if d is not None and d.code == "file.empty" else "sdk.event-malformed"
                    s.diag(code, f"event {ef.index} not read: {msg}", ERROR, file=path, offset=d.offset if d else None)
                else:
                    s.diag("sdk.event-not-object", f"event {ef.index} is JSON but not an object ({type(raw).__name__}); not read", ERROR, file=path)
                continue
            if d is not None:
                s.diagnostics.append(d)
            yield raw, path, ef.index, ef.name_id, len(data), None

    def read(self, s: Session, path: str, size: int, eid: Any) -> None:
        """Account for one event file read."""
        s.files.append(SourceFile(path, "event", "read", size, [eid], EVENT))

    def finish(self, s: Session) -> None:
        """Account for the files of ``events/`` that are not read (sidecars, gaps, bad names, duplicates)."""
        for ef in self.scan.others:
            if ef.status == layout.SIDECAR:
                s.files.append(SourceFile(ef.path, "sidecar", "ignored", _stat_size(ef.path), note=layout.SIDECAR))
            else:
                s.files.append(SourceFile(ef.path, "event", "skipped", _stat_size(ef.path), note=ef.status))

    def all_read(self) -> bool:
        """Whether every event file of the directory was read (the others are sidecars):
        its files of role ``event`` are then the events, each noted ``event``."""
        return not self.skipped and all(ef.status == layout.SIDECAR for ef in self.scan.others)

    def unreadable(self, seen_ids: dict[Any, int], n_events: int) -> dict[Any, int] | None:
        """Index per id of the event files the SDK would read but that could not be (for the tree)."""
        ordered = self.scan.ordered
        return {f.name_id: f.index for f in ordered if f.name_id not in seen_ids} if n_events != len(ordered) else None

    def task_source(self, ev: Event) -> str:
        return f"{self.prefix}{os.path.basename(ev.ref.path)}" if ev.ref else "events"


class Ingested(NamedTuple):
    """What :func:`ingest_events` leaves for the steps: each event's place on
    the tree, and the pairing made while reading (None when ACP tool calls
    need :func:`~.stepping.build_steps` to pair them itself)."""

    places: list[str]
    pairing: Any
    #: response id -> the Usage its first event carries (None when the events' usage source is not the steps')
    usages: Any = None

    def build_steps(self, s: Session) -> None:
        build_steps(s, self.places, self.pairing, self.usages)


def ingest_events(s: Session, source: Any, state: StateView, state_raw: Any, meta_raw: Any, options: ReadOptions, tz: Any,
                  lazy: bool = True, *, state_file: str | None, fallback_id: str | None, metrics: StateView | None = None,
                  usage_source: str = STEP_USAGE_SOURCE) -> Ingested:
    """Turn decoded SDK events, from any source, into ``s``: the normalized
    events, the tree and active branch, usage per response, the metadata,
    the task, and the pairing of actions and answers the steps are built from.

    ``source`` gives the events (``items(s)`` yields ``(decoded event, path,
    index, the id the file name gives or None, size, ref line or None)`` and
    accounts for what it could not decode; ``read``, ``finish``,
    ``unreadable`` and ``task_source`` say where they came from): an
    ``events/`` directory (:class:`_DirectoryEvents`) or a list held in
    another record (an evaluation output's ``history``, a Cloud export's
    ``events``). ``state`` / ``state_raw`` / ``meta_raw``: the conversation's
    ``base_state.json`` and ``meta.json`` (MISSING when there are none);
    ``metrics``: where the usage per response comes from when it is not the
    state's ``stats``.
    """
    # usage per response, known before the events are (the event loop joins it)
    nums = _Numbers()
    stats, by_response = read_stats(metrics if metrics is not None else state, nums)
    #: the Usage made for each response id (on its first event), for the steps to share
    given: dict[str, Any] = {}
    usage_on: list[int] = []
    # steps: actions in order, first action of each id, the first answer of
    # each action, later answers, actions per response
    step_order: list[int] = []
    action_at: dict[Any, int] = {}
    answer_of: dict[int, int] = {}
    extra_answers: list[tuple[int, int]] = []
    batch_size: dict[str, int] = {}
    acp_seen = False

    events: list[Event] = []
    kinds: list[Any] = []
    #: what the reader adds to each event's ``extra`` (index, branch, ...), and its decoded JSON
    extras: list[dict[str, Any]] = []
    raws: list[dict] = []
    action_of_call: dict[str, Any] = {}
    seen_ids: dict[Any, int] = {}
    #: each event's parent_id as written (a string, else None), for the tree
    pids: list[Any] = []
    accounted = source.read
    # the directory's accounting (one SourceFile per event file read), without a call per event
    direct = type(source) is _DirectoryEvents
    files_append = s.files.append
    new = object.__new__
    kind_map_get = _KIND_MAP.get
    for raw, path, index, name_id, size, line in source.items(s):
        g = raw.get
        kind = g("kind")
        if type(kind) is not str:
            kind = None
        eid = g("id")
        if type(eid) is not str:
            eid = str(eid) if type(eid) is int else None
        if eid is None:
            if name_id is not None:
                eid = name_id
                s.diag("sdk.event-no-id", "event has no id; the file name's id is used", WARNING, file=path)
            else:
                eid = f"#{index}"
                s.diag("sdk.event-no-id", f"event {index} has no id; {eid} (its position) is used", WARNING, file=path, line=line)
        elif name_id is not None and eid != name_id:
            s.diag("sdk.event-id-mismatch", f"file name says id {name_id}, the event says {eid}; the event's id is used", WARNING, file=path, event_id=eid)
        # Ref(path, eid, line, line) and Event.lazy(...), their fields set here: no Python-level
        # __init__ call per event (what those write, in the same slots)
        ref = new(Ref)
        ref.path, ref.event_id, ref.line_start, ref.line_end, ref._lines = path, eid, line, line, None
        pid = g("parent_id")
        if type(pid) is not str:
            pid = None
        if lazy:
            added = {"index": index}
            ev = new(Event)
            ev.id, ev.kind, ev.type, ev.raw, ev.ref, ev._derive = eid, kind_map_get(kind, OTHER), kind or "?", raw, ref, partial(_derive, tz, added)
            ev.parent_id = pid
            # set now, as normalize_raw would (cheap, and what every read asks
            # of every event: the outcome reads ``source``, the cost estimate
            # ``model_usage``), so that asking does not derive the whole event
            src = g("source")
            ev.source = src if type(src) is str else None
            ev.model_usage = None  # the usage join below sets it on the first event of a response
        else:
            ev = normalize_raw(raw, path, tz)
            ev.id = eid
            ev.ref = ref
            added = ev.extra
            added["index"] = index
        typ = kind or "?"
        if kind in _REQUIRED_KNOWN:
            # the two commonest kinds are checked inline; misfit_members says which members are off
            if kind == "ActionEvent":
                fits = type(g("tool_name")) is str and type(g("tool_call_id")) is str
            elif kind == "ObservationEvent":
                fits = type(g("observation")) is dict and type(g("tool_call_id")) is str and type(g("tool_name")) is str
            else:
                one = _ONE_REQUIRED.get(kind)
                fits = one is not None and type(g(one[0])) is one[1]
            bad = None if fits else misfit_members(raw, kind)
            if bad:
                s.diag("sdk.event-misfit", f"{kind} members missing or of the wrong type: {', '.join(bad)}", WARNING, file=path, event_id=eid)
        elif kind not in KNOWN_KINDS:
            s.diag("sdk.unknown-kind", f"unknown event kind {typ!r}; kept as an event of kind other", INFO, file=path, event_id=eid)
        if eid in seen_ids:
            s.diag("sdk.event-duplicate-id", f"event id also used at index {extras[seen_ids[eid]].get('index')}; the first is the one the SDK finds", WARNING, file=path, event_id=eid)
        else:
            seen_ids[eid] = len(events)
        pos = len(events)
        # usage per response (first event of a response carries it)
        rid = None
        if kind in RESPONSE_KINDS:
            rid = g("llm_response_id")
            if not rid or type(rid) is not str:
                rid = None
            elif by_response and rid in by_response:
                if rid not in given:
                    # the index entry itself (its step shares it too, as it shares the Usage)
                    ev.usage = u = by_response[rid]
                    # usage_of(u, usage_source) without its checks, which an entry read_stats
                    # made always passes (integer counts, a float cost, a str model, no other member)
                    ug = u.get
                    ev.model_usage = given[rid] = Usage(ug("prompt_tokens"), ug("completion_tokens"), ug("cache_read_tokens"),
                                                        ug("cache_write_tokens"), ug("reasoning_tokens"), None, ug("cost"),
                                                        usage_source, ug("model"))
                else:
                    usage_on.append(pos)  # marked once the analyzer's verdicts are in
        # answers name the action they answer (by action_id, else by tool call id)
        if kind == "ActionEvent":
            cid = g("tool_call_id")
            if cid and type(cid) is str:
                action_of_call[cid] = eid
            # the pairing stepping.build_steps would make (see there)
            step_order.append(pos)
            if eid not in action_at:
                action_at[eid] = pos
            if rid is not None:
                batch_size[rid] = batch_size.get(rid, 0) + 1
        elif kind in _ANSWER_KINDS:
            cause = g("action_id") if kind != "AgentErrorEvent" else None
            if type(cause) is not str:
                cause = None
                cid = g("tool_call_id")
                if type(cid) is str and cid in action_of_call:
                    cause = action_of_call[cid]
                if cause is None and kind == "AgentErrorEvent":
                    ev.kind = ERROR_EVENT
            ev.cause = cause
            target = action_at.get(cause)
            if target is not None:
                if target in answer_of:
                    extra_answers.append((pos, target))
                else:
                    answer_of[target] = pos
        elif kind == "ACPToolCallEvent":
            acp_seen = True
        if direct:
            f = new(SourceFile)  # SourceFile(path, "event", "read", size, [eid], EVENT)
            f.path, f.role, f.status, f.size, f.event_ids, f.note = path, "event", "read", size, [eid], EVENT
            files_append(f)
        else:
            accounted(s, path, size, eid)
        events.append(ev)
        kinds.append(typ)
        extras.append(added)
        raws.append(raw)
        pids.append(pid)
    source.finish(s)
    s.events = events

    # --- tree
    unreadable = source.unreadable(seen_ids, len(events))
    b = tree.branch(
        [e.id for e in events],
        kinds,
        pids,
        state.get("leaf_event_id"),
        state.get("head_is_empty"),
        file=state_file,
        unreadable=unreadable,
        file_indices=[x["index"] for x in extras] if unreadable else None,
    )
    s.diagnostics.extend(b.diagnostics)
    abandoned = tree.ABANDONED
    root_mark = tree.ROOT_MARK
    for ev, x, place in zip(events, extras, b.place):
        ev.branch = place
        x["on_active_branch"] = place != abandoned
    if b.parents != pids:  # (equal, compared in C, when every event names its parent)
        for x, parent, pid in zip(extras, b.parents, pids):
            if parent != pid and not (parent is None and pid == root_mark):
                x["effective_parent_id"] = parent

    # --- metadata
    if nums.floats:
        s.diag("sdk.number-as-float", f"{nums.floats} count(s) written as floats (e.g. 12.0) in stats; read as integers", INFO, file=state_file)
    if nums.bad:
        s.diag("sdk.bad-number", f"{nums.bad} count(s) in stats negative, fractional, absurd or not numbers; read as 0", WARNING, file=state_file)
    md = s.metadata
    md.update(state_facts(state))
    md["stats"] = stats
    md["accumulated_cost"] = round(sum(v["accumulated_cost"] for v in stats.values()), 10) if stats else None
    md["timestamps"] = f"localized to {options.tz}" if tz is not None else "naive local time (as the SDK writes them)"
    md["active_branch"] = b.active
    md["leaf_source"] = b.leaf_source
    md["abandoned_event_ids"] = [e.id for e, p in zip(events, b.place) if p == abandoned] if abandoned in b.place else []
    md["event_count"] = len(events)
    # per note, in the order first met: every one read (the common case), else counted in C
    if direct and source.all_read():
        md["event_files"] = {EVENT: len(events)} if events else {}
    else:
        md["event_files"] = dict(Counter([f.note or "?" for f in s.files if f.role == "event"]))
    md["context_rebuildable"] = md.get("agent_kind") != "ACPAgent"
    if isinstance(state_raw, dict):
        md["state"] = state_raw
    if isinstance(meta_raw, dict):
        mf = meta_facts(meta_raw)
        md["meta"] = meta_raw
        md["title"] = mf["title"]
        md["updated_at"] = mf["updated_at"]
        md["created_at"] = mf["created_at"]
        md["meta_shape"] = mf["shape"]
        if md.get("model") is None and mf["model"]:
            md["model"] = mf["model"]
        if md.get("accumulated_cost") is None and isinstance(mf["accumulated_cost"], (int, float)):
            md["accumulated_cost"] = mf["accumulated_cost"]
    if not md.get("updated_at") and events:
        ts = raws[-1].get("timestamp")
        md["updated_at"] = (_localize(ts, tz) if tz is not None else ts) if type(ts) is str else None

    s.id = md.get("conversation_id") or (isinstance(meta_raw, dict) and (meta_raw.get("conversation_id") or meta_raw.get("id"))) or fallback_id

    # --- the security analyzer's verdict, on the actions it judged
    # (read from the decoded JSON: what the reader adds to ``extra`` goes in
    # before anything reads an event's derived fields)
    if "SecurityAnalysisEvent" in kinds:
        for ev, raw in zip(events, raws):
            if ev.type == "SecurityAnalysisEvent":
                for action_id, risk in SecurityAnalysisView(raw).risks.items():
                    j = seen_ids.get(action_id)
                    if j is not None and events[j].type == "ActionEvent":
                        extras[j]["analyzed_risk"] = {"risk": risk, "analysis_event_id": ev.id}

    # --- usage per response: joined in the event loop (first event of a
    # response carries it); the later ones say where it is
    for j in usage_on:
        extras[j]["usage_on"] = "first event of the response"
    md["usage_by_response"] = by_response

    # --- task
    for ev, raw, x in zip(events, raws, extras):
        if ev.type == "MessageEvent" and raw.get("source") == "user" and x["on_active_branch"]:
            # the message's text as normalize_raw derives it (without deriving the rest of a lazy event)
            lm = raw.get("llm_message")
            text = texts(lm.get("content"), "\n") if type(lm) is dict else ""
            if text:
                s.task = text
                s.task_source = source.task_source(ev)
                break
    if s.task is None and isinstance(meta_raw, dict):
        im = meta_raw.get("initial_message")
        if isinstance(im, dict):
            t = content_text(im.get("content"))
            if t:
                s.task, s.task_source = t, "meta.json initial_message"

    return Ingested(b.place, None if acp_seen else Pairing(step_order, answer_of, extra_answers, batch_size),
                    given if usage_source == STEP_USAGE_SOURCE else None)


def _listing(entries: Iterator[os.DirEntry]) -> Iterator[tuple[str, bool]]:
    """(name, is a directory, symlinks followed) per entry."""
    for e in entries:
        try:
            yield e.name, e.is_dir()
        except OSError:
            yield e.name, False


def _size(entry: os.DirEntry) -> int | None:
    try:
        return entry.stat().st_size
    except OSError:
        return None


def _identity(path: str) -> Any:
    """A directory's identity (device, inode; symlinks followed), or its path when it cannot be had."""
    try:
        st = fs.stat(path)
    except OSError:
        return path
    return (st.st_dev, st.st_ino)


def _stat_size(path: str) -> int | None:
    try:
        return fs.stat(path).st_size
    except OSError:
        return None


def summarize(root: str | os.PathLike, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """A conversation's listing line without reading every event: id, title,
    execution status, event count (as the SDK would read them), model,
    accumulated cost, last update, sub-agent count and what was odd."""
    root_s = os.path.abspath(os.fspath(root))
    diags: list[Diagnostic] = []
    state_raw, d, _ = _load_json(os.path.join(root_s, layout.STATE_FILE), max_file_bytes)
    bare = layout.is_bare_event_dir(root_s)
    if not isinstance(state_raw, dict):
        if fs.exists(os.path.join(root_s, layout.STATE_FILE)):
            diags.append(Diagnostic("sdk.state-malformed", "base_state.json is not a readable JSON object", ERROR, file=os.path.join(root_s, layout.STATE_FILE)))
        elif bare:
            pass  # a bare folder of event files has no state by design
        else:
            diags.append(Diagnostic("sdk.state-missing", "no base_state.json", WARNING, file=os.path.join(root_s, layout.STATE_FILE)))
        state_raw = {}
    meta_path = os.path.join(root_s, layout.META_FILE)
    meta_raw: Any = {}
    if fs.isfile(meta_path):
        meta_raw, d, _ = _load_json(meta_path, max_file_bytes)
        if not isinstance(meta_raw, dict):
            diags.append(Diagnostic("sdk.meta-malformed", "meta.json is not a readable JSON object", ERROR, file=meta_path))
            meta_raw = {}
    state = StateView(state_raw)
    facts = state_facts(state)
    stats, _ = read_stats(state, _Numbers())
    scan = layout.scan_events(root_s if bare else os.path.join(root_s, layout.EVENTS_DIR), bare=bare)
    diags.extend(scan.diagnostics)
    updated = meta_raw.get("updated_at") if isinstance(meta_raw.get("updated_at"), str) else None
    if updated is None and scan.ordered:
        value, _d, _ = _load_json(scan.ordered[-1].path, max_file_bytes)
        if isinstance(value, dict) and isinstance(value.get("timestamp"), str):
            updated = value["timestamp"]
    cost = round(sum(v["accumulated_cost"] for v in stats.values()), 10) if stats else None
    if cost is None and isinstance(meta_raw.get("metrics"), dict):
        c = meta_raw["metrics"].get("accumulated_cost")
        cost = c if isinstance(c, (int, float)) else None
    subs = os.path.join(root_s, layout.SUBAGENTS_DIR)
    try:
        n_sub = sum(1 for e in fs.scandir(subs) if e.is_dir()) if fs.isdir(subs) else 0
    except OSError:
        n_sub = 0
    toks = [v for st in stats.values() for k, v in (st.get("accumulated_token_usage") or {}).items()
            if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)]
    model = facts.get("model")
    if model is None and isinstance(meta_raw.get("agent"), dict):
        model = ((meta_raw["agent"].get("llm") or {}) if isinstance(meta_raw["agent"].get("llm"), dict) else {}).get("model")
    if model is None and isinstance(meta_raw.get("llm_model"), str):
        model = meta_raw["llm_model"]  # Cloud's meta.json
    return {
        "id": facts.get("conversation_id") or meta_raw.get("conversation_id") or (bare and meta_raw.get("id")) or os.path.basename(root_s),
        "path": root_s,
        "title": meta_raw.get("title") if isinstance(meta_raw.get("title"), str) else None,
        "execution_status": facts.get("execution_status"),
        "events": len(scan.ordered),
        "model": model,
        "cost": cost,
        "tokens": sum(toks) if toks else None,
        "updated": updated,
        "agent_kind": facts.get("agent_kind"),
        "subagents": n_sub,
        "diagnostics": [x.to_dict() for x in diags],
    }
