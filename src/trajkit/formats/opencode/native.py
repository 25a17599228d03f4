"""The four opencode sources, each loaded into one shape: :class:`NSession`.

- **SQLite** (``opencode.db``, ``opencode-<channel>.db``; 1.2+): the rows of
  ``session``, ``message`` and ``part`` (``data`` holds the JSON without the
  ids), plus ``todo``;
- **legacy tree** (``storage/``; up to 1.1): ``session/<project>/<id>.json``,
  ``message/<session>/<id>.json``, ``part/<message>/<id>.json``,
  ``todo/<session>.json``; ids come from file and folder names;
- **export** (``opencode export``): ``{info, messages: [{info, parts}]}``,
  also wrapped as ``{session_id, ..., session: {info, messages}}`` and with a
  leading status line;
- **run events** (``opencode run --format json``): one ``{type, timestamp,
  sessionID, part}`` a line, assistant parts only.

Every native record becomes a :class:`Rec` (its id, the decoded JSON object,
the record untouched and where it came from); what cannot be decoded is
still a record (``ok`` false) with a located diagnostic. Messages are
ordered by ``(time created, id)`` and parts by id, as opencode's own
hydrate does, never by file order. Nothing here builds events: that is
:mod:`.build`, the same for every source.

Diagnostic codes (see ``docs/diagnostics.md``): ``opencode.bad-record``,
``opencode.id-mismatch``, ``opencode.orphan-part``, ``opencode.part-repeated``,
``opencode.export-preamble``, ``opencode.not-export``, ``opencode.no-session``,
``opencode.other-sessions``, ``opencode.rows-not-read``, ``opencode.event-type``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...diagnostics import ERROR, INFO, WARNING, Diagnostic
from ...jsonio import MISSING, loads
from ...model import Ref, SourceFile
from ...reading import fs
from ...reading.io import iter_jsonl, read_capped
from .db import Store, check_schema

SQLITE, STORAGE, EXPORT, EVENTS = "sqlite", "storage", "export", "run-events"

#: Tables whose rows are read for a session (the rest are counted, not read).
READ_TABLES = ("session", "message", "part", "todo")


@dataclass(slots=True)
class Rec:
    """One native record: ``id``, its JSON object (``body``; ``{}`` when it
    did not decode), the record as stored (``raw``) and where (``ref``)."""

    id: str
    body: dict[str, Any]
    raw: Any
    ref: Ref
    ok: bool = True
    table: str = ""


@dataclass(slots=True)
class NMessage:
    id: str
    rec: Rec | None  # None: the source holds parts only (run events)
    parts: list[Rec] = field(default_factory=list)

    @property
    def info(self) -> dict[str, Any]:
        return self.rec.body if self.rec is not None else {}


@dataclass(slots=True)
class NSession:
    """One session as a source holds it."""

    id: str
    source: str
    path: str  # the store, tree or file it came from
    info: dict[str, Any] = field(default_factory=dict)  # export-shaped session info
    rec: Rec | None = None
    messages: list[NMessage] = field(default_factory=list)
    extras: list[Rec] = field(default_factory=list)  # todo rows, orphan parts, odd lines
    files: list[SourceFile] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def parent_id(self) -> str | None:
        p = self.info.get("parentID")
        return p if isinstance(p, str) and p else None


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _time_of(body: dict[str, Any]) -> int | float:
    t = _obj(body.get("time")).get("created")
    return t if isinstance(t, (int, float)) and not isinstance(t, bool) else 0


def _sid(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


# ---------------------------------------------------------------- SQLite

def _decode_json_col(v: Any) -> Any:
    if isinstance(v, (str, bytes)) and v[:1] in ("{", "[", b"{", b"["):
        val, _ = loads(v)
        return v if val is MISSING else val
    return v


def db_session_info(row: dict[str, Any]) -> dict[str, Any]:
    """A ``session`` row as the export's session ``info``."""
    info: dict[str, Any] = {"id": row.get("id")}
    for col, key in (("slug", "slug"), ("project_id", "projectID"), ("workspace_id", "workspaceID"), ("parent_id", "parentID"),
                     ("directory", "directory"), ("path", "path"), ("title", "title"), ("version", "version"), ("agent", "agent"),
                     ("share_url", "shareURL")):
        if row.get(col) is not None:
            info[key] = row[col]
    for col in ("model", "permission", "metadata", "revert", "summary_diffs"):
        if row.get(col) is not None:
            info[col if col != "summary_diffs" else "summaryDiffs"] = _decode_json_col(row[col])
    if "cost" in row and row["cost"] is not None:
        info["cost"] = row["cost"]
    if any(k.startswith("tokens_") for k in row):
        info["tokens"] = {
            "input": row.get("tokens_input"), "output": row.get("tokens_output"), "reasoning": row.get("tokens_reasoning"),
            "cache": {"read": row.get("tokens_cache_read"), "write": row.get("tokens_cache_write")},
        }
    t = {k: row.get(f"time_{k}") for k in ("created", "updated", "compacting", "archived") if row.get(f"time_{k}") is not None}
    if t:
        info["time"] = t
    return info


def db_sessions(store: Store) -> list[dict[str, Any]]:
    """``id``, ``parent_id`` and ``time_updated`` of every ``session`` row
    (the columns present), in creation order."""
    if not store.has("session", "id"):
        return []
    cols = ", ".join(c for c in ("id", "parent_id", "time_updated") if store.has("session", c))
    order = "time_created, id" if store.has("session", "time_created") else "id"
    return list(store.rows(f"SELECT {cols} FROM session ORDER BY {order}", what="sessions"))


def db_family(store: Store, sid: str) -> list[dict[str, Any]]:
    """Session ``sid`` and its descendants (``id``, ``parent_id``, ``time_updated``),
    without reading the other sessions' rows (``parent_id`` lookups)."""
    if not store.has("session", "id"):
        return []
    cols = ", ".join(c for c in ("id", "parent_id", "time_updated") if store.has("session", c))
    out = list(store.rows(f"SELECT {cols} FROM session WHERE id = ?", (sid,), "the session row"))
    if not out or not store.has("session", "parent_id"):
        return out
    seen = {sid}
    frontier = [sid]
    while frontier and len(seen) < 100_000:
        nxt = []
        for pid in frontier:
            for r in store.rows(f"SELECT {cols} FROM session WHERE parent_id = ? ORDER BY id", (pid,), "sub-sessions"):
                if isinstance(r.get("id"), str) and r["id"] not in seen:
                    seen.add(r["id"])
                    out.append(r)
                    nxt.append(r["id"])
        frontier = nxt
    return out


def load_db(store: Store, sid: str, cap: int) -> NSession | None:
    """Session ``sid`` of an open store (None when it has no such session row)."""
    path = store.path
    missing = store.missing if store.missing is not None else check_schema(store)
    rows = list(store.rows("SELECT * FROM session WHERE id = ?", (sid,), "the session row")) if "session" not in missing else []
    if not rows:
        return None
    row = rows[0]
    ns = NSession(sid, SQLITE, path, info=db_session_info(row))
    ns.diagnostics.extend(store.diagnostics)
    store.diagnostics.clear()
    ns.rec = Rec(sid, ns.info, row, Ref(path, sid), table="session")
    ns.metadata["db_open_mode"] = store.mode
    src = SourceFile(path, "store", "read", _size(path), [])
    ns.files.append(src)
    for side in ("-wal", "-shm"):
        if fs.exists(path + side):
            ns.files.append(SourceFile(path + side, "store-journal", "read" if store.mode == "ro" else "unused", _size(path + side), [],
                                       "applied by SQLite to the store it sits beside" if store.mode == "ro"
                                       else "not applied: the store was read immutable"))
    by_id: dict[str, NMessage] = {}
    if "message" not in missing:
        order = "time_created, id" if store.has("message", "time_created") else "id"
        for r in store.rows(f"SELECT * FROM message WHERE session_id = ? ORDER BY {order}", (sid,), "messages"):
            rec = _db_rec(r, "message", path, ns)
            m = NMessage(rec.id, rec)
            by_id[rec.id] = m
            ns.messages.append(m)
    if "part" not in missing:
        if store.has("part", "session_id"):
            q, params = "SELECT * FROM part WHERE session_id = ? ORDER BY message_id, id", (sid,)
        else:
            q, params = "SELECT * FROM part WHERE message_id IN (SELECT id FROM message WHERE session_id = ?) ORDER BY message_id, id", (sid,)
        for r in store.rows(q, params, "parts"):
            rec = _db_rec(r, "part", path, ns)
            m = by_id.get(r.get("message_id")) if isinstance(r.get("message_id"), str) else None
            if m is None:
                ns.diagnostics.append(Diagnostic("opencode.orphan-part", f"part of message {r.get('message_id')!r}, which the session does not hold; kept as a record",
                                                 WARNING, file=path, event_id=rec.id))
                ns.extras.append(rec)
            else:
                m.parts.append(rec)
    if store.has("todo", "session_id"):
        order = "position" if store.has("todo", "position") else "rowid"
        for k, r in enumerate(store.rows(f"SELECT * FROM todo WHERE session_id = ? ORDER BY {order}", (sid,), "todos")):
            ns.extras.append(Rec(f"todo:{r.get('position', k)}", r, r, Ref(path, f"todo:{r.get('position', k)}"), table="todo"))
    # rows of this session in tables not read: counted, so the loss report can say so
    counts: dict[str, int] = {}
    for table, cols in store.tables.items():
        if table in READ_TABLES or "session_id" not in cols:
            continue
        got = list(store.rows(f'SELECT count(*) AS n FROM "{table}" WHERE session_id = ?', (sid,), f"the {table} rows"))
        if got and got[0].get("n"):
            counts[table] = got[0]["n"]
    if counts:
        ns.metadata["rows_not_read"] = counts
        ns.diagnostics.append(Diagnostic(
            "opencode.rows-not-read", "rows of this session in tables trajkit does not read: "
            + ", ".join(f"{t} ({n})" for t, n in sorted(counts.items())), INFO, file=path))
    ns.diagnostics.extend(store.diagnostics)
    store.diagnostics.clear()
    src.event_ids = []  # filled by the builder (every event of the session comes from this file)
    return ns


def _db_rec(r: dict[str, Any], table: str, path: str, ns: NSession) -> Rec:
    rid = r.get("id") if isinstance(r.get("id"), str) else str(r.get("id"))
    raw = dict(r)
    data = r.get("data")
    body: Any = MISSING
    if isinstance(data, (str, bytes)):
        body, d = loads(data, path)
        if d is not None:
            d.event_id = rid
            ns.diagnostics.append(d)
    if not isinstance(body, dict):
        ns.diagnostics.append(Diagnostic("opencode.bad-record", f"{table} row's data is not a JSON object; kept as a record", ERROR, file=path, event_id=rid))
        return Rec(rid, {}, raw, Ref(path, rid), ok=False, table=table)
    raw["data"] = body
    return Rec(rid, body, raw, Ref(path, rid), table=table)


def _size(p: str) -> int | None:
    try:
        return fs.stat(p).st_size
    except OSError:
        return None


# ---------------------------------------------------------------- legacy storage/ tree

def storage_index(root: str) -> dict[str, str]:
    """``session id -> session file`` of a legacy tree (ids from file names)."""
    out: dict[str, str] = {}
    sdir = os.path.join(root, "session")
    try:
        projects = sorted(fs.listdir(sdir))
    except OSError:
        return out
    for proj in projects:
        pdir = os.path.join(sdir, proj)
        try:
            names = sorted(fs.listdir(pdir))
        except OSError:
            continue
        for n in names:
            if n.endswith(".json") and not n.startswith("."):
                out.setdefault(n[:-5], os.path.join(pdir, n))
    return out


def _read_json_file(path: str, cap: int, ns: NSession, role: str, expect_id: str | None, id_key: str = "id") -> Rec:
    data, why = read_capped(path, cap)
    rid = expect_id or os.path.basename(path)[:-5]
    if data is None:
        ns.diagnostics.append(why.diagnostic(path, cap))  # type: ignore[union-attr]
        ns.files.append(SourceFile(path, role, "skipped", why.size))  # type: ignore[union-attr]
        return Rec(rid, {}, None, Ref(path, rid), ok=False, table=role)
    value, d = loads(data, path)
    sf = SourceFile(path, role, "read", len(data), [])
    ns.files.append(sf)
    if d is not None:
        d.event_id = rid
        ns.diagnostics.append(d)
    if not isinstance(value, dict):
        if value is not MISSING:
            ns.diagnostics.append(Diagnostic("opencode.bad-record", f"the {role} file holds a JSON {type(value).__name__}, not an object; kept as a record",
                                             ERROR, file=path, event_id=rid))
        return Rec(rid, {}, None if value is MISSING else value, Ref(path, rid), ok=False, table=role)
    if expect_id is not None and isinstance(value.get(id_key), str) and value[id_key] != expect_id:
        ns.diagnostics.append(Diagnostic("opencode.id-mismatch", f"the file is named {expect_id} but its {id_key} says {value[id_key]}; the name wins",
                                         INFO, file=path, event_id=expect_id))
    return Rec(rid, value, value, Ref(path, rid), table=role)


def load_storage(root: str, sid: str, cap: int, index: dict[str, str] | None = None) -> NSession | None:
    """Session ``sid`` of a legacy tree (None when the tree has no such session)."""
    index = index if index is not None else storage_index(root)
    spath = index.get(sid)
    if spath is None:
        return None
    ns = NSession(sid, STORAGE, root)
    rec = _read_json_file(spath, cap, ns, "session", sid)
    ns.rec = rec
    ns.info = dict(rec.body) if rec.ok else {"id": sid}
    ns.info["id"] = sid
    mdir = os.path.join(root, "message", sid)
    msgs: list[NMessage] = []
    for name in _json_names(mdir):
        mid = name[:-5]
        mrec = _read_json_file(os.path.join(mdir, name), cap, ns, "message", mid)
        msgs.append(NMessage(mid, mrec))
    msgs.sort(key=lambda m: (_time_of(m.info), m.id))
    for m in msgs:
        pdir = os.path.join(root, "part", m.id)
        for name in _json_names(pdir):
            m.parts.append(_read_json_file(os.path.join(pdir, name), cap, ns, "part", name[:-5]))
        m.parts.sort(key=lambda p: p.id)
    ns.messages = msgs
    todo = os.path.join(root, "todo", sid + ".json")
    if fs.isfile(todo):
        data, why = read_capped(todo, cap)
        if data is None:
            ns.diagnostics.append(why.diagnostic(todo, cap))  # type: ignore[union-attr]
            ns.files.append(SourceFile(todo, "todo", "skipped", why.size))  # type: ignore[union-attr]
        else:
            value, d = loads(data, todo)
            if d is not None:
                ns.diagnostics.append(d)
            sf = SourceFile(todo, "todo", "read" if value is not MISSING else "skipped", len(data), [])
            ns.files.append(sf)
            if value is not MISSING:
                ns.extras.append(Rec(f"todo:{sid}", _obj(value) if isinstance(value, dict) else {"todos": value}, value, Ref(todo, f"todo:{sid}"), table="todo"))
    for side, role in (("session_share", "share"),):
        p = os.path.join(root, side, sid + ".json")
        if fs.isfile(p):
            ns.files.append(SourceFile(p, role, "ignored", _size(p), [], "share state, not part of the conversation"))
    return ns


def _json_names(d: str) -> list[str]:
    try:
        return sorted(n for n in fs.listdir(d) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []


# ---------------------------------------------------------------- opencode export

def _strip_preamble(data: bytes) -> tuple[bytes, int]:
    """The JSON document of an export file and how many bytes of leading
    text (a captured ``Exporting session: ...`` status line) came before it."""
    s = data.lstrip(b"\xef\xbb\xbf")
    skip = len(data) - len(s)
    if s.lstrip()[:1] in (b"{", b"["):
        return data, 0
    pos = 0
    while pos < len(s):
        nl = s.find(b"\n", pos)
        if nl < 0:
            break
        pos = nl + 1
        if s[pos:].lstrip()[:1] == b"{":
            return s[pos:], skip + pos
    return data, 0


def export_document(value: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(the {info, messages} document, the wrapper around it)`` of a decoded export."""
    if not isinstance(value, dict):
        return None, None
    if isinstance(value.get("info"), dict) and isinstance(value.get("messages"), list):
        return value, None
    inner = value.get("session")
    if isinstance(inner, dict) and isinstance(inner.get("info"), dict) and isinstance(inner.get("messages"), list):
        return inner, {k: v for k, v in value.items() if k != "session"}
    return None, None


def load_export(path: str, cap: int) -> NSession:
    """The session of an ``opencode export`` file (always a session, perhaps empty, with diagnostics)."""
    ns = NSession(os.path.basename(path), EXPORT, path)
    data, why = read_capped(path, cap)
    if data is None:
        ns.diagnostics.append(why.diagnostic(path, cap))  # type: ignore[union-attr]
        ns.files.append(SourceFile(path, "export", "skipped", why.size))  # type: ignore[union-attr]
        return ns
    sf = SourceFile(path, "export", "read", len(data), [])
    ns.files.append(sf)
    body, skipped = _strip_preamble(data)
    if skipped:
        ns.diagnostics.append(Diagnostic("opencode.export-preamble", f"{skipped} bytes of text before the JSON document (a captured status line); skipped",
                                         INFO, file=path, offset=0))
    value, d = loads(body, path)
    if d is not None:
        if d.offset is not None:
            d.offset += skipped
        ns.diagnostics.append(d)
    doc, wrapper = export_document(value)
    if doc is None:
        if value is not MISSING:
            ns.diagnostics.append(Diagnostic("opencode.not-export", "not an opencode export document ({info, messages: [{info, parts}]})", ERROR, file=path))
        sf.status = "skipped"
        return ns
    if wrapper:
        ns.metadata["export_wrapper"] = wrapper
    info = doc["info"]
    sid = _sid(info.get("id")) or (_sid(wrapper.get("session_id")) if wrapper else None) or ns.id
    ns.id = sid
    ns.info = dict(info)
    ns.rec = Rec(sid, info, info, Ref(path, sid), table="session")
    for k, m in enumerate(doc["messages"]):
        if not isinstance(m, dict) or not isinstance(m.get("info"), dict):
            rid = f"message-{k}"
            ns.diagnostics.append(Diagnostic("opencode.bad-record", f"messages[{k}] is not {{info, parts}}; kept as a record", ERROR, file=path, event_id=rid))
            ns.extras.append(Rec(rid, {}, m, Ref(path, rid), ok=False, table="message"))
            continue
        mi = m["info"]
        mid = _sid(mi.get("id")) or f"message-{k}"
        nm = NMessage(mid, Rec(mid, mi, mi, Ref(path, mid), table="message"))
        parts = m.get("parts") if isinstance(m.get("parts"), list) else []
        if not isinstance(m.get("parts"), list):
            ns.diagnostics.append(Diagnostic("opencode.bad-record", f"message {mid} has no parts list", WARNING, file=path, event_id=mid))
        for j, p in enumerate(parts):
            pid = _sid(p.get("id")) if isinstance(p, dict) else None
            if not isinstance(p, dict):
                rid = f"{mid}/part-{j}"
                ns.diagnostics.append(Diagnostic("opencode.bad-record", f"part {j} of message {mid} is not an object; kept as a record", ERROR, file=path, event_id=rid))
                nm.parts.append(Rec(rid, {}, p, Ref(path, rid), ok=False, table="part"))
                continue
            nm.parts.append(Rec(pid or f"{mid}/part-{j}", p, p, Ref(path, pid or f"{mid}/part-{j}"), table="part"))
        if nm.parts and all(_sid(p.body.get("id")) for p in nm.parts):
            nm.parts.sort(key=lambda p: p.id)
        nm.rec.ref = Ref(path, mid)
        ns.messages.append(nm)
    ns.messages.sort(key=lambda m: (_time_of(m.info), m.id if m.id.startswith("msg_") else ""))
    return ns


# ---------------------------------------------------------------- opencode run --format json

EVENT_TYPES = {"step_start": "step-start", "text": "text", "reasoning": "reasoning", "tool_use": "tool", "step_finish": "step-finish"}


def load_events(path: str, cap: int) -> NSession:
    """The session of an ``opencode run --format json`` event stream."""
    ns = NSession(os.path.basename(path), EVENTS, path)
    data, why = read_capped(path, cap)
    if data is None:
        ns.diagnostics.append(why.diagnostic(path, cap))  # type: ignore[union-attr]
        ns.files.append(SourceFile(path, "events", "skipped", why.size))  # type: ignore[union-attr]
        return ns
    ns.files.append(SourceFile(path, "events", "read", len(data), []))
    if not data.strip():
        ns.diagnostics.append(Diagnostic("file.empty", "the event stream is empty", ERROR, file=path))
        return ns
    sids: list[str] = []
    msgs: dict[str, NMessage] = {}
    seen: dict[str, tuple[NMessage, int]] = {}
    stamps: list[float] = []
    for jl in iter_jsonl(data, path, ns.diagnostics):
        if jl.value is MISSING:
            continue
        ev = jl.value
        rid = f"line-{jl.line}"
        if not isinstance(ev, dict):
            ns.diagnostics.append(Diagnostic("opencode.bad-record", f"line holds a JSON {type(ev).__name__}, not an event; kept as a record", ERROR, file=path, line=jl.line))
            ns.extras.append(Rec(rid, {}, ev, Ref(path, rid, jl.line, jl.line), ok=False, table="event"))
            continue
        ts = ev.get("timestamp")
        if isinstance(ts, (int, float)) and not isinstance(ts, bool):
            stamps.append(ts)
        s = _sid(ev.get("sessionID"))
        if s is not None and s not in sids:
            sids.append(s)
        part = ev.get("part")
        typ = ev.get("type")
        if typ not in EVENT_TYPES or not isinstance(part, dict):
            if typ not in EVENT_TYPES:
                ns.diagnostics.append(Diagnostic("opencode.event-type", f"event type {typ!r} is not one trajkit maps; kept as a record", INFO, file=path, line=jl.line))
            else:
                ns.diagnostics.append(Diagnostic("opencode.bad-record", f"a {typ} event without a part object; kept as a record", WARNING, file=path, line=jl.line))
            ns.extras.append(Rec(rid, ev, ev, Ref(path, rid, jl.line, jl.line), table="event"))
            continue
        mid = _sid(part.get("messageID")) or "message-0"
        pid = _sid(part.get("id")) or f"{mid}/line-{jl.line}"
        rec = Rec(pid, part, ev, Ref(path, pid, jl.line, jl.line), table="event")
        m = msgs.get(mid)
        if m is None:
            m = msgs[mid] = NMessage(mid, None)
        if pid in seen:
            om, k = seen[pid]
            ns.diagnostics.append(Diagnostic("opencode.part-repeated", f"part {pid} is written again (an update); the last one is kept",
                                             INFO, file=path, line=jl.line, event_id=pid))
            old = om.parts[k]
            ns.extras.append(Rec(f"{pid}@line-{old.ref.line_start}", old.body, old.raw, old.ref, table="superseded"))
            om.parts[k] = rec
            continue
        seen[pid] = (m, len(m.parts))
        m.parts.append(rec)
    if len(sids) > 1:
        ns.diagnostics.append(Diagnostic("opencode.other-sessions", f"the stream holds events of {len(sids)} sessions ({', '.join(sids)}); all are read as one",
                                         WARNING, file=path))
    if sids:
        ns.id = sids[0]
    ns.info = {"id": ns.id}
    if stamps:
        ns.info["time"] = {"created": min(stamps), "updated": max(stamps)}
    for m in msgs.values():
        if all(p.id.startswith("prt_") for p in m.parts):
            m.parts.sort(key=lambda p: p.id)
    ns.messages = sorted(msgs.values(), key=lambda m: m.id) if all(k.startswith("msg_") for k in msgs) else list(msgs.values())
    return ns
