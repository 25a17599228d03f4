"""Reading OpenHands V0 event streams (format ``openhands-v0``; the format's
face, its layouts, sniff and :data:`~trajkit.formats.openhands_v0.FORMAT`,
is the package's ``__init__``). See the package docstring for the views."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ... import jsonio
from ...diagnostics import ERROR, INFO, WARNING
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
    LineIndex,
    ReadOptions,
    Ref,
    Session,
    SourceFile,
    Step,
    FileEdit,
    Outcome,
    ToolCall,
    Usage,
)
from ...reading import fs
from ...reading import io as read_io
from ...vocab.openhands import BUDGET_TEXT, V0_TOOLS
from ...vocab.trials import HARBOR, TERMINAL_BENCH, find_results, find_verifier_dir, trial_outcome
from ...steps import render_action, thinking_of
from .layout import (  # the layouts and the sniff: the light part, which detection imports
    CACHE,
    EVENTS,
    FLAT,
    HISTORY,
    Layout,
    NAME,
    VIEWS,
    _EVENT_FILE,
    _SHARD_FILE,
    _has_files,
    _join,
    locate,
    views_present,
)

#: Views whose ids have gaps by design (filtered lists).
_GAPPY_VIEWS = (FLAT, HISTORY)

#: Actions whose lack of an observation is normal: they never get one.
_UNANSWERED_BY_DESIGN = frozenset(
    {"message", "system", "finish", "null", "change_agent_state", "condensation", "condensation_request",
     "reject", "pause", "resume", "stop", "start", "delegate", "loop_recovery"}
)
_STATE_ACTIONS = frozenset({"change_agent_state", "null", "pause", "resume", "stop", "start"})
_STATE_OBSERVATIONS = frozenset({"agent_state_changed"})


def _rel(path: Path | str, lay: Layout) -> str:
    """``path`` relative to the trial (the folder of a bare flat export), as
    ``os.path.relpath`` writes it. Every non-file layout's root is a listed
    folder, so no stat is needed; a path under the root (all of a layout's)
    is its text after the root's."""
    base = lay.rel_base
    if base is None:
        root = os.fspath(lay.root)
        # a bare file's folder: Path.parent, by string (a written Path has no trailing separator)
        base = lay.rel_base = (os.path.dirname(root) or ".") if lay.kind == "flat-file" else root
    s = os.fspath(path)
    if s[:1] == os.sep and base[:1] == os.sep and os.sep + ".." not in s:
        prefix = base if base.endswith(os.sep) else base + os.sep
        if s.startswith(prefix) and len(s) > len(prefix):
            return s[len(prefix):]
    try:
        return os.path.relpath(s, base)
    except ValueError:
        return str(path)


def _read_flat(lay: Layout, session: Session, opts: ReadOptions) -> tuple[list[Event], str | None]:
    """Events of the flat view: the largest candidate that is a JSON list."""
    cands = []
    only = lay.flat_candidates[0] if len(lay.flat_candidates) == 1 else None
    held = lay.probe.whole(only, opts.max_file_bytes) if only is not None else None
    if held is None and only is not None:
        # one candidate: read it at once; its bytes give its size, no stat (a
        # file that cannot be read takes the path below: a stat, then the read's diagnostic)
        held = read_io.read_capped(only, opts.max_file_bytes)[0]
    if held is not None:  # one candidate, all of it read (by detection's sniff, or just now): its size is known
        cands.append((len(held), only))
    for p in lay.flat_candidates if held is None else ():
        st = lay.probe.stat(p)  # detection's stat when it made one
        try:
            cands.append(((st or fs.stat(p)).st_size, p))
        except OSError as e:
            session.diag("file.unreadable", f"cannot stat: {e.strerror}", ERROR, file=str(p))
    cands.sort(key=lambda t: -t[0])
    chosen: str | None = None
    out: list[Event] = []
    for size, p in cands:
        if chosen is not None:
            session.files.append(SourceFile(p, "flat-export-candidate", "unused", size, note=f"smaller than the chosen flat export {_name(chosen)}"))
            continue
        data = held if held is not None else lay.probe.whole(p, opts.max_file_bytes)  # detection's sniff often read it all
        if data is None:
            data, d = read_io.read_bytes(p, opts.max_file_bytes)
        if data is None:
            session.diagnostics.append(d)
            session.files.append(SourceFile(str(p), "flat-export", "skipped", size, note=d.code))
            continue
        value, d = jsonio.loads(data, str(p))
        if d is not None:
            session.diagnostics.append(d)
        if value is jsonio.MISSING:
            session.files.append(SourceFile(str(p), "flat-export", "skipped", size, note="not JSON"))
            continue
        if not isinstance(value, list):
            session.diag(
                "v0.flat-not-list",
                f"flat export candidate is a JSON {type(value).__name__}, not a list of events; not used",
                ERROR,
                file=str(p),
            )
            session.files.append(SourceFile(str(p), "flat-export", "skipped", size, note="not a list"))
            continue
        if not value:
            session.diag("v0.flat-empty", "flat export is an empty list; not used", WARNING, file=str(p))
            session.files.append(SourceFile(str(p), "flat-export", "skipped", size, note="empty list"))
            continue
        chosen = p
        index = LineIndex(data, len(value))
        rel = _rel(p, lay)
        ids = []
        lazy_ref = Ref.lazy
        for k, ev in enumerate(value):
            eid = ev.get("id") if type(ev) is dict else None  # _id_of(ev), inline: once per event
            if type(eid) is not int and type(eid) is not str:
                eid = None
            ids.append(eid)
            out.append(to_event(ev, lazy_ref(rel, eid, index, k), eid))
        session.files.append(SourceFile(p, "flat-export", "read", size, ids))
    return out, chosen


def _read_events_dir(d: str, lay: Layout, session: Session, opts: ReadOptions) -> list[Event]:
    base = os.fspath(d)
    prefix = _rel(d, lay) + os.sep
    numbered = []
    for n in lay.ls(d):
        m = _EVENT_FILE.match(n)
        if m:
            numbered.append((int(m.group(1)), n))
        elif not n.startswith("."):
            session.diag("v0.bad-event-name", "file name is not <id>.json; ignored", INFO, file=os.path.join(base, n))
            session.files.append(SourceFile(os.path.join(base, n), "event", "skipped", note="bad name"))
    numbered.sort()
    out = []
    files = session.files
    cap = opts.max_file_bytes
    loads = jsonio.fast_loads
    read_capped = read_io.read_capped
    for num, n in numbered:
        p = base + os.sep + n
        data, why = read_capped(p, cap)
        diags: Any = ()
        if data is None:
            value, diags = jsonio.MISSING, [why.diagnostic(p, cap)]  # type: ignore[union-attr]
        else:
            try:
                value = loads(data)
            except ValueError:
                value, d = jsonio.loads(data, p)
                diags = [d] if d else ()
        if diags:
            for x in diags:
                if x.code != "json.nonstandard":
                    x.event_id = num
                session.diagnostics.append(x)
        if value is jsonio.MISSING or not isinstance(value, dict):
            if value is not jsonio.MISSING:
                session.diag("v0.malformed-event", f"event file holds a JSON {type(value).__name__}, not an object; skipped", ERROR, file=p, event_id=num)
            else:
                session.diag("v0.malformed-event", "event file could not be decoded; skipped", ERROR, file=p, event_id=num)
            files.append(SourceFile(p, "event", "skipped", note="malformed"))
            continue
        eid = _id_of(value)
        if eid != num:
            session.diag("v0.id-mismatch", f"file {n} holds event id {eid!r}", WARNING, file=p, event_id=eid)
        out.append(to_event(value, Ref(prefix + n, eid, 1, 1), eid))  # json.dumps: one line
        files.append(SourceFile(p, "event", "read", None, [eid]))
    return out


def _read_cache_dir(d: str, lay: Layout, session: Session, opts: ReadOptions) -> list[Event]:
    base = os.fspath(d)
    shards = []
    for n in lay.ls(d):
        m = _SHARD_FILE.match(n)
        if m:
            shards.append((int(m.group(1)), int(m.group(2)), n))
        elif not n.startswith("."):
            session.diag("v0.bad-event-name", "file name is not <start>-<end>.json; ignored", INFO, file=base + os.sep + n)
            session.files.append(SourceFile(base + os.sep + n, "event-cache-shard", "skipped", note="bad name"))
    shards.sort()
    out = []
    files = session.files
    expected_start = None
    prefix = _rel(d, lay) + os.sep
    for start, end, n in shards:
        p = base + os.sep + n  # as str(d / n) writes it: d is a listed folder's path, n a name in it
        if expected_start is not None and start != expected_start:
            session.diag("v0.shard-gap", f"shard starts at {start}, the previous one ended at {expected_start}", WARNING, file=p)
        expected_start = end
        value, diags = _load(p, opts.max_file_bytes)
        if diags:
            session.diagnostics.extend(diags)
        if type(value) is not list:
            what = "could not be decoded" if value is jsonio.MISSING else f"holds a JSON {type(value).__name__}, not a list"
            session.diag("v0.malformed-shard", f"cache shard {what}; skipped", ERROR, file=p)
            files.append(SourceFile(p, "event-cache-shard", "skipped", note="malformed"))
            continue
        if len(value) != end - start:
            session.diag("v0.shard-size", f"shard {n} holds {len(value)} events, its name says {end - start}", WARNING, file=p)
        rel = prefix + n
        ids = []
        for k, ev in enumerate(value):
            if type(ev) is not dict:
                session.diag("v0.malformed-event", f"element {k} of the shard is a JSON {type(ev).__name__}, not an object; skipped", ERROR, file=p, offset=k)
                continue
            eid = ev.get("id")  # _id_of(ev), inline: ev is a dict
            if type(eid) is not int and type(eid) is not str:
                eid = None
            ids.append(eid)
            out.append(to_event(ev, Ref(rel, eid, 1, 1), eid))
        files.append(SourceFile(p, "event-cache-shard", "read", None, ids))
    return out


def _load(p: str, cap: int) -> tuple[Any, Any]:
    """:func:`~trajkit.reading.io.load_json` of ``p`` (the value or MISSING,
    and its diagnostics: a list, or an empty tuple), the common case (a file
    that reads and decodes, nothing suspicious) without the list."""
    data, why = read_io.read_capped(p, cap)
    if data is None:
        return jsonio.MISSING, [why.diagnostic(p, cap)]  # type: ignore[union-attr]
    try:
        return jsonio.fast_loads(data), ()
    except ValueError:
        value, d = jsonio.loads(data, p)
        return value, [d] if d else ()


#: The per-session-directory views: subdirectory, file-name pattern, reader.
_DIR_VIEWS = {
    EVENTS: ("events", _EVENT_FILE, _read_events_dir),
    CACHE: ("event_cache", _SHARD_FILE, _read_cache_dir),
}


def _note_unused_view(name: str, paths: list[str], role: str, session: Session) -> None:
    note = f"view {name} not chosen"
    session.files.extend(SourceFile(p, role, "unused", None, [], note) for p in paths)


def _view_files(lay: Layout, d: str, pat: re.Pattern) -> list[str]:
    base = d + os.sep
    return [base + n for n in sorted(filter(pat.match, lay.ls(d)))]


# ---------------------------------------------------------------- events


def _llm_facts(raw: dict, args: Any, action: str) -> tuple[list[ToolCall], str | None, Any, str | None]:
    """(tool calls, response id, model, reasoning) of an action, in one pass
    over its ``tool_call_metadata``.

    The call's arguments are the model's own (the ``arguments`` JSON of the
    matching tool call in ``model_response``); without metadata, the action's
    args minus ``thought``.
    """
    executed = args if type(args) is dict else {}  # what the harness ran: the action and its args

    def call(name: str, arguments: Any, call_id: str | None, lazy_json: bool = False) -> ToolCall:
        return V0_TOOLS.call(name, arguments, call_id, lazy_json=lazy_json, action=action, input=executed)

    tcm = raw.get("tool_call_metadata")
    if type(tcm) is not dict:
        if type(args) is dict:
            return [call(action, {k: v for k, v in args.items() if k != "thought"}, None)], None, None, None
        return [call(action, args, None)], None, None, None
    call_id = tcm.get("tool_call_id")
    if type(call_id) is not str:
        call_id = None
    name = tcm.get("function_name") or action
    arguments: Any = None
    rid = model = reasoning = None
    mr = tcm.get("model_response")
    if type(mr) is dict:
        rid = mr.get("id")
        if type(rid) is not str:
            rid = None
        model = mr.get("model")
        choices = mr.get("choices")
        # malformed members are passed over, never raised on: the fields are derived
        # on first access, after the read, where an exception has no diagnostic to become
        for ch in choices if type(choices) is list else ():
            msg = ch.get("message") if type(ch) is dict else None
            if type(msg) is not dict:
                continue
            r = msg.get("reasoning_content")
            if type(r) is str and r.strip():
                reasoning = r
            calls = msg.get("tool_calls")
            for tc in calls if type(calls) is list else ():
                if type(tc) is dict and tc.get("id") == call_id:
                    fn = tc.get("function")
                    if type(fn) is not dict:
                        fn = {}
                    arguments = fn.get("arguments")
                    name = fn.get("name") or name
    if type(arguments) is str:  # the model's own JSON text: decoded when someone reads it
        return [call(str(name), arguments, call_id, lazy_json=True)], rid, model, reasoning
    if arguments is None and type(args) is dict:
        arguments = {k: v for k, v in args.items() if k != "thought"}
    return [call(str(name), arguments, call_id)], rid, model, reasoning


def _usage_of(m: Any) -> dict[str, Any] | None:
    """Running totals from ``llm_metrics`` (cumulative, not per step)."""
    if type(m) is not dict:
        return None
    acc = m.get("accumulated_token_usage") if isinstance(m.get("accumulated_token_usage"), dict) else {}
    out: dict[str, Any] = {}
    for k in ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens"):
        v, _ = jsonio.tolerant_int(acc.get(k))
        out[k] = v
    cost = m.get("accumulated_cost")
    out["cost"] = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0
    if acc.get("model"):
        out["model"] = acc.get("model")
    return out


def _id_of(raw: Any) -> int | str | None:
    """An event's id when it is usable (an int or a string), else None."""
    eid = raw.get("id") if type(raw) is dict else None
    return eid if type(eid) is int or type(eid) is str else None


_UNSET = object()


#: The kind of an action event by its type (any other action is an ACTION).
_ACTION_KINDS = {"message": MESSAGE, "system": SYSTEM, "condensation": CONDENSATION, "condensation_request": CONDENSATION,
                 **dict.fromkeys(_STATE_ACTIONS, STATE)}


def _kind_type(raw: Any) -> tuple[str, str]:
    """An event's normalized kind and native type name."""
    if type(raw) is not dict:
        return OTHER, "invalid"
    action = raw.get("action")
    if action is not None:
        if type(action) is not str:
            action = str(action)
        return _ACTION_KINDS.get(action, ACTION), action
    obs = raw.get("observation")
    if obs is not None:
        if type(obs) is not str:
            obs = str(obs)
        if obs in _STATE_OBSERVATIONS:
            return STATE, obs
        if obs == "error" and type(raw.get("cause")) is not int:
            return ERROR_EVENT, obs
        return OBSERVATION, obs
    return OTHER, "unknown"


_DERIVED = ("source", "role", "timestamp", "text", "tool_calls", "call_id", "cause", "response_id", "reasoning",
            "usage", "parent_id", "extra", "edit", "cwd", "tools")


def _derive(raw: Any) -> dict[str, Any]:
    ev = full_event(raw, None)
    return {name: getattr(ev, name) for name in _DERIVED}


_new_event = Event.__new__


def to_event(raw: Any, ref: Ref | None, event_id: Any = _UNSET) -> Event:
    """The normalized view of one V0 event dict (``raw`` is kept as is).

    Id, kind, type and ref are set at once; the other fields are derived
    from ``raw`` on first access (:meth:`Event.lazy`), exactly as
    :func:`full_event` derives them.
    """
    # _kind_type, inline for the two kinds almost every event is (one call less per event)
    if type(raw) is dict and type(typ := raw.get("action")) is str:
        kind = _ACTION_KINDS.get(typ, ACTION)
    elif type(raw) is dict and type(typ := raw.get("observation")) is str and "action" not in raw:
        kind = OBSERVATION if typ != "error" and typ not in _STATE_OBSERVATIONS else _kind_type(raw)[0]
    else:
        kind, typ = _kind_type(raw)
    # Event.lazy(id, kind, typ, raw, ref, _derive), its slots set here (no call per event).
    # usage and model_usage are set now, not derived: only :func:`attribute_usage` gives
    # them a value, and every read prices each event's ``model_usage`` (estimate_session),
    # which would otherwise derive every field of every event.
    # (One store per slot: a tuple assignment builds and unpacks a tuple.)
    ev = _new_event(Event)
    ev.id = _id_of(raw) if event_id is _UNSET else event_id
    ev.kind = kind
    ev.type = typ
    ev.raw = raw
    ev.ref = ref
    ev._derive = _derive
    ev.usage = None
    ev.model_usage = None
    return ev


def _response_id(raw: dict) -> str | None:
    """The model response id of an action or message event (``Event.response_id``
    as :func:`full_event` derives it for those kinds), from the dict alone."""
    tcm = raw.get("tool_call_metadata")
    if type(tcm) is not dict:
        return None
    mr = tcm.get("model_response")
    if type(mr) is not dict:
        return None
    rid = mr.get("id")
    return rid if type(rid) is str else None


def _model_of(raw: dict) -> Any:
    """The model an action event names (``extra["model"]`` as :func:`full_event`
    derives it: set only when truthy), from the dict alone."""
    tcm = raw.get("tool_call_metadata")
    mr = tcm.get("model_response") if type(tcm) is dict else None
    return mr.get("model") if type(mr) is dict else None


def full_event(raw: Any, ref: Ref | None) -> Event:
    """The normalized view of one V0 event dict, every field derived now."""
    if type(raw) is not dict:
        return Event(None, OTHER, "invalid", raw, ref=ref)
    get = raw.get
    eid = get("id")
    if type(eid) is not int and type(eid) is not str:
        eid = None  # not a usable id (v0.bad-id says so); raw keeps what was written
    source = get("source")
    ts = get("timestamp")
    action = get("action")
    if action is not None:
        if type(action) is not str:
            action = str(action)
        args = get("args")
        a = args if type(args) is dict else {}
        if action == "message":
            content = a.get("content")
            _, rid, _, reasoning = _llm_facts(raw, args, action) if "tool_call_metadata" in raw else (None, None, None, None)
            ev = Event(eid, MESSAGE, action, raw, source, "user" if source == "user" else "assistant", ts,
                       content if type(content) is str else None, response_id=rid, reasoning=reasoning, ref=ref)
            if "llm_metrics" in raw:
                totals = _usage_of(get("llm_metrics"))
                if totals is not None:
                    ev.extra["cumulative_usage"] = totals
            return ev
        if action == "system":
            content = a.get("content")
            ev = Event(eid, SYSTEM, action, raw, source, "system", ts, content if type(content) is str else None, ref=ref)
            if type(a.get("tools")) is list:
                ev.extra["tools"] = a["tools"]
                ev.tools = a["tools"]
            return ev
        thought = a.get("thought")
        if type(thought) is not str or not thought.strip():
            thought = None
        if action in _STATE_ACTIONS:
            return Event(eid, STATE, action, raw, source, None, ts, thought, ref=ref)
        if action == "condensation" or action == "condensation_request":
            summary = a.get("summary")
            ev = Event(eid, CONDENSATION, action, raw, source, None, ts, summary if type(summary) is str else None, ref=ref)
            if type(a.get("forgotten_event_ids")) is list:
                ev.extra["forgotten_event_ids"] = a["forgotten_event_ids"]
            elif type(a.get("forgotten_events_start_id")) is int and type(a.get("forgotten_events_end_id")) is int:
                ev.extra["forgotten_event_ids"] = list(range(a["forgotten_events_start_id"], a["forgotten_events_end_id"] + 1))
            return ev
        calls, rid, model, reasoning = _llm_facts(raw, args, action)
        ev = Event(eid, ACTION, action, raw, source, "assistant" if source == "agent" else None, ts, thought, calls,
                   response_id=rid, reasoning=reasoning, ref=ref)
        totals = _usage_of(get("llm_metrics"))
        if totals is not None:
            ev.extra["cumulative_usage"] = totals
        if action == "finish":
            ft = a.get("final_thought") or a.get("message")
            if type(ft) is str:
                ev.extra["final_thought"] = ft
        if model:
            ev.extra["model"] = model
        return ev
    obs = get("observation")
    if obs is not None:
        if type(obs) is not str:
            obs = str(obs)
        content = get("content")
        cause = get("cause")
        if type(cause) is not int:
            cause = None
        tcm = get("tool_call_metadata")
        call_id = tcm.get("tool_call_id") if type(tcm) is dict else None
        if obs in _STATE_OBSERVATIONS:
            kind = STATE
        elif obs == "error" and cause is None:
            kind = ERROR_EVENT
        else:
            kind = OBSERVATION
        ev = Event(eid, kind, obs, raw, source, "tool" if kind == OBSERVATION else None, ts,
                   content if type(content) is str else None, call_id=call_id if type(call_id) is str else None,
                   cause=cause, ref=ref)
        extras = get("extras")
        if type(extras) is dict:
            md = extras.get("metadata")
            wd = md.get("working_dir") if type(md) is dict else None
            if type(wd) is str and wd.startswith("/"):
                ev.cwd = wd
            if obs == "edit" or obs == "write":
                ev.edit = _file_edit(obs, extras)
        elif obs == "write":
            ev.edit = FileEdit(None, whole=True)
        return ev
    return Event(eid, OTHER, "unknown", raw, source, None, ts, ref=ref)


def _file_edit(obs: str, ex: dict[str, Any]) -> FileEdit:
    """The file change of an ``edit`` (old / new content) or ``write`` (whole content) observation."""
    path = ex.get("path")
    prev = ex.get("prev_exist")
    prev = prev if type(prev) is bool else None
    if obs == "write":
        new = ex.get("content")
        return FileEdit(path if type(path) is str else None, None, new if type(new) is str else None, prev, whole=True)
    old, new = ex.get("old_content"), ex.get("new_content")
    return FileEdit(path if type(path) is str else None, old if type(old) is str else None, new if type(new) is str else None, prev)


# ---------------------------------------------------------------- read


def read(root: Path, options: ReadOptions | None = None) -> Session:
    """Read a V0 trial directory, session directory or flat export file."""
    session, lay = _read(root, options)
    _run_facts(session, lay)
    session.outcome = stream_outcome(session)
    return session


def _read(root: Path, options: ReadOptions | None) -> tuple[Session, Layout | None]:
    opts = options or ReadOptions()
    if not isinstance(root, Path):
        root = Path(root)
    session = Session(format=NAME, source_path=str(root))
    try:
        hint = opts.hint
        lay = hint if isinstance(hint, Layout) and hint.root == root else locate(root)
    except OSError as e:
        lay = None
        session.diag("file.unreadable", f"cannot read: {e}", ERROR, file=str(root))
    if lay is None:
        session.diag("v0.no-layout", "not a V0 trial, session directory or flat export", ERROR, file=str(root))
        return session, None
    session.metadata["layout"] = lay.kind
    session.metadata["trial_root"] = str(lay.root)
    _read_metadata(lay, session, opts)

    present = views_present(root, lay)
    session.metadata["views_present"] = present
    want = opts.view
    if want is not None and want not in VIEWS:
        session.diag("v0.unknown-view", f"unknown view {want!r}; views are {', '.join(VIEWS)}", ERROR)
        return session, lay
    events: list[Event] = []
    view = None
    view_path = None
    order = [want] if want else list(VIEWS)
    if want and want not in present:
        session.diag("v0.view-missing", f"view {want} is not present (present: {', '.join(present) or 'none'})", ERROR, file=str(root))
    for v in order:
        if v == FLAT and lay.flat_candidates:
            events, chosen = _read_flat(lay, session, opts)
            if chosen is not None:
                view, view_path = FLAT, chosen
                break
        elif v in _DIR_VIEWS:
            subdir, pattern, read_view = _DIR_VIEWS[v]
            d = next((sub for sub in (_join(sd, subdir) for sd in lay.session_dirs) if _has_files(lay.ls(sub), pattern)), None)
            if d is not None:
                events = read_view(d, lay, session, opts)
                view, view_path = v, d
                break
    no_stream = lay.kind == "terminal-bench" and not lay.flat_candidates and not lay.session_dirs
    if FLAT not in present and lay.kind in ("terminal-bench", "harbor") and not no_stream:
        session.diag("v0.flat-missing", "no flat export (a killed or timed-out run writes none); using " + (view or "no view"), INFO, file=str(lay.root))
    # account for the views not chosen
    chosen_dir = view_path if view in _DIR_VIEWS else None
    for d in lay.session_dirs:
        base = d + os.sep  # as _join(d, "events") writes it
        if not (view == EVENTS and chosen_dir == base + "events"):
            _note_unused_view(EVENTS, _view_files(lay, base + "events", _EVENT_FILE), "event", session)
        if not (view == CACHE and chosen_dir == base + "event_cache"):
            _note_unused_view(CACHE, _view_files(lay, base + "event_cache", _SHARD_FILE), "event-cache-shard", session)
    if view != FLAT and lay.flat_candidates:  # (the set of every file's path only when there is a candidate to look up)
        seen = {f.path for f in session.files}
        _note_unused_view(FLAT, [p for p in lay.flat_candidates if p not in seen], "flat-export", session)
    for r in lay.recordings:
        session.files.append(SourceFile(r, "recording", "unused", note="a terminal recording, not steps"))
    if len(lay.session_dirs) > 1:
        session.diag("v0.multiple-sessions", f"{len(lay.session_dirs)} session directories; the first with the chosen view was used", INFO,
                     file=os.path.dirname(lay.session_dirs[0]))

    session.view = view
    session.metadata["view"] = view
    session.metadata["view_path"] = _rel(view_path, lay) if view_path else None
    if view is None and no_stream:
        fm = (session.metadata.get("results") or {}).get("failure_mode") if isinstance(session.metadata.get("results"), dict) else None
        session.diag("v0.no-event-stream", "a terminal-bench trial with no event stream (results.json, panes and recordings only): "
                     "there are no steps to count" + (f"; its own verdict: failure_mode {fm}" if isinstance(fm, str) else ""),
                     WARNING, file=str(lay.root))
    elif view is None:
        session.diag("v0.no-events", "no view holds any events", ERROR if not present else WARNING, file=str(root))
    session.id = _session_id(lay, view_path)
    from_events(session, events, view, opts.steps)
    return session, lay


def from_events(session: Session, events: list[Event], view: str | None, steps: bool = True) -> None:
    """Fill ``session`` from V0 events of any source (a trial's view, an
    evaluation output's ``history``, a Cloud export's ``events``; each made
    with :func:`to_event`): usage per response from the running totals, id
    checks, the task, model facts and the steps (one per action an
    observation names as its ``cause``). ``view`` names where the events came
    from; ids may have gaps in the flat export and in a ``history``."""
    session.events = events
    attribute_usage(session.events)
    _check_ids(session, view)
    _task_text(session)
    _model_facts(session)
    if steps:
        session.steps = build_steps(session)


def _read_metadata(lay: Layout, session: Session, opts: ReadOptions) -> None:
    for name, p in lay.metadata_files:
        path = os.fspath(p)
        value, diags = _load(path, opts.max_file_bytes)
        if diags:
            session.diagnostics.extend(diags)
        key = _METADATA_KEYS[name]
        if value is jsonio.MISSING:
            session.files.append(SourceFile(path, key, "skipped", note="unreadable"))
            continue
        session.metadata[key] = value
        session.files.append(SourceFile(path, key, "read"))


_METADATA_KEYS = {"results.json": "results", "result.json": "result", "config.json": "config"}
#: The metadata keys of results files (the ``Session.files`` roles :func:`_run_facts` names them by).
_RESULT_KEYS = ("results", "result")


def _session_id(lay: Layout, view_path: str | None) -> str:
    if lay.session_dirs:
        parent = os.path.dirname(view_path) if view_path is not None else None
        if parent in lay.session_dirs:
            return _name(parent)  # type: ignore[arg-type]
        return _name(lay.session_dirs[0])
    if lay.kind == "flat-file":
        return _stem(_name(os.fspath(lay.root)))
    if lay.flat_candidates and lay.kind in ("terminal-bench", "agent-logs"):
        return _stem(_name(view_path or lay.flat_candidates[0]))
    return lay.root.name


def _stem(name: str) -> str:
    """``Path.stem`` of a file name: without its last suffix (none for ``.x`` or ``x.``)."""
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _name(path: str) -> str:
    """``Path(path).name`` for a path written as ``str(Path)`` writes one."""
    return path[path.rfind(os.sep) + 1:]


def _check_ids(session: Session, view: str | None) -> None:
    seen: set = set()
    prev = None
    file = session.metadata.get("view_path")
    gappy = view in _GAPPY_VIEWS
    for e in session.events:
        eid = e.id
        if type(eid) is not int:  # ids are an int, a str or None (to_event), never an int subclass
            written = e.raw.get("id") if isinstance(e.raw, dict) else None
            session.diag("v0.bad-id", f"event has no integer id (id={written!r})", WARNING, file=e.ref.path if e.ref else file)
            continue
        if eid in seen:
            session.diag("v0.duplicate-id", f"event id {eid} appears more than once; the first is used for pairing", WARNING,
                         file=e.ref.path if e.ref else file, event_id=eid)
        seen.add(eid)
        if prev is None:
            prev = eid
            continue
        if not gappy and eid > prev + 1:
            session.diag("v0.id-gap", f"ids jump from {prev} to {eid} ({eid - prev - 1} missing)", WARNING,
                         file=e.ref.path if e.ref else file, event_id=eid)
        if eid < prev:
            session.diag("v0.id-order", f"id {eid} comes after {prev}", WARNING, file=e.ref.path if e.ref else file, event_id=eid)
        elif eid > prev:
            prev = eid


def _task_text(session: Session) -> None:
    for e in session.events:
        # a message's source and text (args.content) as full_event derives them, from the dict
        if e.kind == MESSAGE and e.raw.get("source") == "user":
            args = e.raw.get("args")
            text = args.get("content") if type(args) is dict else None
            if type(text) is not str or not text.strip():
                continue
            session.task = text
            session.task_source = "first user message event"
            return
    results = session.metadata.get("results")
    if isinstance(results, dict) and isinstance(results.get("instruction"), str):
        session.task = results["instruction"]
        session.task_source = "results.json instruction"


def _model_facts(session: Session) -> None:
    for e in session.events:
        if e.kind == SYSTEM and isinstance(e.raw, dict):
            a = e.raw.get("args") or {}
            if isinstance(a, dict):
                for k in ("openhands_version", "agent_class"):
                    if a.get(k):
                        session.metadata[k] = a.get(k)
                if a.get("openhands_version"):
                    session.metadata["harness_version"] = a.get("openhands_version")
            break
    for e in session.events:
        if e.kind == ACTION and type(e.raw) is dict and "tool_call_metadata" in e.raw:
            model = _model_of(e.raw)
            if model:
                session.metadata["model"] = model
                break
    for e in reversed(session.events):
        if e.type == "agent_state_changed" and isinstance(e.raw, dict):
            ex = e.raw.get("extras") or {}
            if isinstance(ex, dict) and ex.get("agent_state"):
                session.metadata["final_agent_state"] = ex.get("agent_state")
                break


# ---------------------------------------------------------------- run facts and end signal


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _run_facts(session: Session, lay: Layout | None = None) -> None:
    """``Session.run``: what the trial files and the system event say about the run."""
    md = session.metadata
    run = session.run
    run.harness = NAME
    hv = md.get("harness_version")
    run.harness_version = str(hv) if hv else None
    agent = md.get("agent_class")
    run.agent = str(agent) if agent else None
    if isinstance(md.get("model"), str):
        run.models = [md["model"]]
    run.default_workspace = "/workspace"  # the sandbox workspace when the record names none
    # the results files read (``_read_metadata`` sets their metadata key only when it read one),
    # from the layout's few metadata files rather than every file of the run
    if lay is not None:
        paths = {key: p for name, p in lay.metadata_files if (key := _METADATA_KEYS[name]) in _RESULT_KEYS and key in md}
    else:
        paths = {f.role: f.path for f in session.files if f.role in _RESULT_KEYS and f.status == "read"}
    run.results = find_results(md, paths)
    cost = _d(_d(md.get("result")).get("agent_result")).get("cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        run.cost_usd = float(cost)
    ends = [e.raw.get("timestamp") if type(e.raw) is dict else None for e in (session.events[:1] + session.events[-1:])]
    stamps = [t for t in ends if isinstance(t, str)]
    if stamps:
        run.started_at, run.ended_at = stamps[0], stamps[-1]
    for r in run.results:
        g = r.data.get
        harbor = r.kind == HARBOR
        if r.kind == TERMINAL_BENCH:
            run.benchmark = TERMINAL_BENCH
        run.trial_id = run.trial_id or (g("trial_name") if isinstance(g("trial_name"), str) else None)
        task = g("task_name") if harbor else g("task_id")
        run.instance_id = run.instance_id or (task if isinstance(task, str) else None)
        start, end = (g("started_at"), g("finished_at")) if harbor else (g("trial_started_at"), g("trial_ended_at"))
        if isinstance(start, str) and isinstance(end, str):
            run.started_at, run.ended_at = start, end
    # the layout's root is the Path source_path was written from; its probe holds the root's listing
    run.verifier_dir = find_verifier_dir(lay.root, lay.probe) if lay is not None else find_verifier_dir(session.source_path)


#: The action and observation types :func:`stream_outcome` looks at.
_END_TYPES = frozenset({"agent_state_changed", "error", "finish", "change_agent_state", "pause", "stop"})


def stream_outcome(session: Session) -> Outcome:
    """The end signal: the finish action, the last ``agent_state_changed``
    state and its reason, error observations, and the trial's terminal-bench
    ``results.json`` (``failure_mode``) or harbor ``result.json``
    (``exception_info``); see ``formats/certification.md`` §6.2. The events
    are :func:`to_event`'s."""
    ev: list[dict[str, Any]] = []
    state = None
    reason = ""
    state_event = None
    finish = None
    errors: list[Event] = []
    operator_stop = False
    for e in session.events:
        raw = e.raw
        if e.type not in _END_TYPES:
            # e.type is the action, else the observation (to_event): an event of another
            # type can only be one of the cases below with both members (then its action
            # is its type, and its observation may still be one of these)
            if not isinstance(raw, dict) or "action" not in raw or "observation" not in raw:
                continue
        elif not isinstance(raw, dict):
            continue  # no member to look at: none of the cases below
        obs = raw.get("observation")
        act = raw.get("action")
        if obs == "agent_state_changed":
            ex = _d(raw.get("extras"))
            state = ex.get("agent_state") or state
            reason = str(ex.get("reason") or "")
            state_event = e
        elif act == "finish" and (raw.get("source") or e.source) == "agent":
            finish = e
        elif obs == "error":
            errors.append(e)
        elif act in ("change_agent_state", "pause", "stop") and (raw.get("source") or e.source) == "user":
            operator_stop = True
    if state_event is not None:
        ev.append({"event_id": state_event.id, "what": f"agent_state {state}" + (f" ({reason})" if reason else "")})
    if finish is not None:
        ev.append({"event_id": finish.id, "what": "finish action"})
    claimed = finish is not None or state == "finished"
    # harness signals first: they see what the stream cannot (timeouts, installs)
    decided = trial_outcome(session.run.results, claimed, ev)
    if decided is not None:
        return decided
    if state == "error" or (state is None and errors and finish is None):
        text = reason or (errors[-1].text if errors else "") or ""
        if "Agent reached maximum" in text or BUDGET_TEXT.search(text):
            return Outcome(False, budget_exhausted=True, status=state or "error", signal=text[:300], claimed_success=claimed, evidence=ev)
        if "OUT_OF_CREDITS" in text:
            return Outcome(False, external_error=f"provider credits exhausted ({text[:200]})", status="error", signal=text[:300], claimed_success=claimed, evidence=ev)
        return Outcome(False, external_error=(text[:300] or "unclassified agent error"), status=state or "error", signal="agent_state error", claimed_success=claimed, evidence=ev)
    if state == "rate_limited":
        return Outcome(False, external_error="rate limited by the LLM provider", status=state, signal="agent_state rate_limited", claimed_success=claimed, evidence=ev)
    if state in ("stopped", "paused", "user_rejected"):
        if operator_stop or state in ("paused", "user_rejected"):
            return Outcome(False, human_abort=True, status=state, signal=f"agent_state {state} after an operator action", claimed_success=claimed, evidence=ev)
        return Outcome(False, status=state, signal=f"agent_state {state} without an operator action", claimed_success=claimed, evidence=ev)
    if state == "rejected":
        return Outcome(False, external_error=f"the agent rejected the task{': ' + reason if reason else ''}", status=state, signal="agent_state rejected", claimed_success=False, evidence=ev)
    if state == "finished" or (finish is not None and state in (None, "awaiting_user_input", "running")):
        return Outcome(True, status=state or "finish", signal="finish action" if finish is not None else "agent_state finished", claimed_success=True, evidence=ev)
    if state == "awaiting_user_confirmation":
        return Outcome(False, status=state, signal="waiting for the operator's confirmation", approval_wait=True, evidence=ev)
    return Outcome(False, status=state, signal=f"no finish (last agent_state {state or 'none'}): the run ended without its own end signal", evidence=ev)


# ---------------------------------------------------------------- steps


def build_steps(session: Session) -> list[Step]:
    """One step per action answered by an observation (first answer wins).

    From each event's dict and the fields :func:`to_event` sets at once (id,
    kind, type, ref, usage): no event's other fields are derived."""
    events = session.events
    ids: set[int] = set()
    answer: dict[int, Event] = {}
    actions: list[Event] = []  # the action events with an int id, in stream order
    last_obs_id = -1
    for e in events:
        eid = e.id
        raw = e.raw
        if type(eid) is int:
            ids.add(eid)
            if type(raw) is not dict:
                continue
            if "action" in raw:
                actions.append(e)
        elif type(raw) is not dict:
            continue
        if "observation" in raw:
            cause = raw.get("cause")
            if type(cause) is int:
                if type(eid) is int and eid > last_obs_id:
                    last_obs_id = eid
                if cause not in answer:
                    answer[cause] = e
    if not ids.issuperset(answer):
        # one diagnostic per observation whose cause is not in the view, in stream order
        for e in events:
            raw = e.raw
            if type(raw) is dict and "observation" in raw:
                cause = raw.get("cause")
                if type(cause) is int and cause not in ids:
                    answer.pop(cause, None)
                    session.diag("v0.orphan-observation", f"observation names cause {cause}, which is not in the {session.view} view",
                                 WARNING, file=e.ref.path if e.ref else None, event_id=e.id)
    steps: list[Step] = []
    unanswered: list[Any] = []
    done: set[int] = set()
    for e in actions:
        eid = e.id
        if eid in done:
            continue
        done.add(eid)
        action = e.type
        obs = answer.get(eid)
        if obs is None:
            unanswered.append(eid)
            if eid > last_obs_id and action not in _UNANSWERED_BY_DESIGN:
                session.diag("v0.cutoff-action", f"trailing {action} action has no observation (the run was cut off); not a step",
                             WARNING, file=e.ref.path if e.ref else None, event_id=eid)
            continue
        raw = e.raw
        args = raw.get("args")
        content = obs.raw.get("content")
        # the fields most steps leave at None are set after, when they have a value
        # (keyword arguments cost a third of the Step's construction)
        step = Step(len(steps) + 1, render_action(action, args if type(args) is dict else {}), action,
                    content if type(content) is str else "", thinking_of(action, args), e.ref, obs.ref, eid, obs.id)
        kind = e.kind
        if kind == ACTION or kind == MESSAGE:
            tcm = raw.get("tool_call_metadata")
            if type(tcm) is dict:  # a parallel response: its calls share the response id
                n = tcm.get("total_calls_in_response")
                if type(n) is int and n > 1:
                    step.parallel_group = _response_id(raw)
        if "llm_metrics" in raw:
            usage = e.usage
            step.usage = _usage_tokens(usage)
            step.cost = usage.get("cost") if usage else None
            step.model_usage = e.model_usage
        steps.append(step)
    session.metadata["actions_without_observation"] = unanswered
    return steps


def _usage_tokens(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {k: v for k, v in usage.items() if k != "cost"}


def attribute_usage(events: list[Event]) -> None:
    """Per-response usage from V0's running totals.

    ``llm_metrics`` on an action holds the totals so far (kept in
    ``extra["cumulative_usage"]``); the first event of each model response
    gets the difference from the previous totals as its ``usage`` (tokens and
    ``cost``); the other actions of a parallel response get none.
    """
    prev: dict[str, Any] = {}
    seen: set[str] = set()
    for e in events:
        raw = e.raw
        if type(raw) is not dict or "llm_metrics" not in raw or (e.kind != ACTION and e.kind != MESSAGE):
            continue
        # what full_event keeps in extra["cumulative_usage"] and response_id, from the dict
        # alone (the event's other fields stay underived)
        totals = _usage_of(raw["llm_metrics"])
        if totals is None:
            continue
        rid = _response_id(raw)
        if rid is None or rid not in seen:
            e.usage = {k: (v - prev.get(k, 0) if type(v) in (int, float) else v) for k, v in totals.items()}
            e.model_usage = Usage.from_counts(e.usage, "llm_metrics (difference of running totals)")
        if rid:
            seen.add(rid)
        prev = totals
