"""Reading, listing and summarizing opencode sessions (the heavy half of the
``opencode`` format, imported on first use: see :mod:`trajkit.formats.opencode`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...diagnostics import ERROR, INFO, Diagnostic
from ...model import ReadOptions, Session, SourceFile
from ...reading import fs
from ...reading.listing import session_row
from ...reading.probe import Probe
from ...registry import split_member
from . import native
from .layout import MAGIC, _head_kind, _is_storage, _store_in
from .build import NAME, build, link_child
from .db import open_store

#: How many sub-session levels are read below a session.
MAX_CHILD_DEPTH = 16


# ---------------------------------------------------------------- reading

def _kind(root: str) -> str | None:
    probe = Probe()
    if fs.isdir(root):
        if _is_storage(probe, root):
            return "storage"
        return None
    if not fs.exists(root):
        return None
    if os.path.basename(root).endswith(".db") or probe.head(root, 16).startswith(MAGIC):
        return "db"
    return _head_kind(probe, root) or ("export" if root.endswith(".json") else "events")


def _container(root: str | os.PathLike) -> str:
    """A data folder as the store (or tree) in it; any other path as it is."""
    path = os.fspath(root)
    probe = Probe()
    if fs.isdir(path) and not _is_storage(probe, path):
        db = _store_in(probe, Path(path))
        if db is not None:
            return str(db)
        if probe.is_dir(Path(path) / "storage"):
            return str(Path(path) / "storage")
    return path


def read(root: Path, options: ReadOptions) -> Session:
    """The session at ``root`` (a store or tree, with ``options.member`` naming
    one of its sessions; an export; an event stream)."""
    path = _container(root)
    member = options.member
    kind = _kind(path)
    cap = options.max_file_bytes
    if kind == "db":
        return _read_db(path, member, options)
    if kind == "storage":
        return _read_storage(path, member, options)
    if kind in ("export", "events"):
        ns = native.load_export(path, cap) if kind == "export" else native.load_events(path, cap)
        s = build(ns, steps=options.steps)
        if kind == "events":
            _link_proxy_trace(s, path)
        if member is not None and member != s.id:
            s.diag("opencode.no-session", f"the file holds session {s.id}, not {member}", ERROR, file=path)
        return s
    s = Session(format=NAME, source_path=os.fspath(root))
    s.diag("opencode.no-session", "no opencode store, storage tree, export or event stream here", ERROR, file=os.fspath(root))
    return s


def _tops(sessions: list[tuple[str, str | None, Any]]) -> list[str]:
    """The top-level sessions (no parent, or a parent the container lacks), in order."""
    ids = {sid for sid, _p, _t in sessions}
    return [sid for sid, parent, _t in sessions if not parent or parent not in ids]


def _pick_root(sessions: list[tuple[str, str | None, Any]], member: str | None, where: str, s_diags: list[Diagnostic]) -> str | None:
    """The session to read: the member named, else the only top-level one
    (with several, none: which one is the caller's to say, as ``PATH#ID``)."""
    ids = {sid for sid, _p, _t in sessions}
    if member is not None:
        if member in ids:
            return member
        s_diags.append(Diagnostic("opencode.no-session", f"no session {member} here (it holds {len(ids)})", ERROR, file=where))
        return None
    tops = _tops(sessions)
    if len(tops) != 1:
        s_diags.append(Diagnostic(
            "opencode.no-session", "the store holds no session" if not tops else
            f"holds {len(tops)} top-level sessions; name one as {where}#<session id>", ERROR, file=where))
        return None
    return tops[0]


def _read_db(path: str, member: str | None, options: ReadOptions) -> Session:
    store, diags = open_store(path, options.max_file_bytes)
    if store is None:
        s = Session(format=NAME, source_path=path, view=native.SQLITE)
        s.diagnostics.extend(diags)
        s.files.append(SourceFile(path, "store", "skipped", native._size(path)))
        return s
    try:
        native.check_schema(store)
        # a named session: it and its descendants only; else every session, to find the one top-level
        rows = native.db_family(store, member) if member is not None else native.db_sessions(store)
        sessions = [(r.get("id"), r.get("parent_id"), r.get("time_updated")) for r in rows if isinstance(r.get("id"), str)]
        picked_diags: list[Diagnostic] = []
        sid = _pick_root(sessions, member, path, picked_diags)
        ns = native.load_db(store, sid, options.max_file_bytes) if sid is not None else None
        if ns is None:
            s = Session(format=NAME, source_path=path, view=native.SQLITE)
            s.diagnostics.extend(store.diagnostics + picked_diags)
            s.files.append(SourceFile(path, "store", "read", native._size(path)))
            return s
        ns.diagnostics.extend(picked_diags)
        children: dict[str, list[str]] = {}
        for cid, parent, _t in sessions:
            if isinstance(parent, str):
                children.setdefault(parent, []).append(cid)

        def load(i: str) -> native.NSession | None:
            return native.load_db(store, i, options.max_file_bytes)

        s = build(ns, steps=options.steps)
        _attach_children(s, children, load, options, {sid}, 0)
        if member is not None:
            s.source_path = f"{path}#{sid}"
        return s
    finally:
        store.close()


def _attach_children(s: Session, children: dict[str, list[str]], load, options: ReadOptions, seen: set[str], depth: int) -> None:
    for cid in children.get(s.id or "", []):
        if cid in seen or depth >= MAX_CHILD_DEPTH:
            s.diag("opencode.child-unlinked", f"sub-session {cid} is already read above this one (a parent cycle) or too deep; not read again",
                   INFO, event_id=cid, file=s.source_path)
            continue
        seen.add(cid)
        ns = load(cid)
        if ns is None:
            continue
        child = build(ns, steps=options.steps)
        _attach_children(child, children, load, options, seen, depth + 1)
        link_child(s, child)


def _storage_parents(root: str, index: dict[str, str], cap: int) -> list[tuple[str, str | None, Any]]:
    """``(session id, parent id, last update)`` of each session in a legacy tree.

    A session whose own file cannot be read has lost its ``parentID``; when a
    part of another session (its ``task`` call) names it, that session is its
    parent, so a damaged sub-session stays under its parent instead of
    turning into a second top-level session."""
    from ...jsonio import loads
    from ...reading.io import read_capped

    out = []
    lost: list[int] = []
    for sid, p in index.items():
        data, _why = read_capped(p, cap)
        parent = updated = None
        v = None
        if data is not None:
            v, _d = loads(data, p)
            if isinstance(v, dict):
                parent = v.get("parentID") if isinstance(v.get("parentID"), str) else None
                t = v.get("time") if isinstance(v.get("time"), dict) else {}
                updated = t.get("updated", t.get("created"))
        if not isinstance(v, dict):
            lost.append(len(out))
        out.append((sid, parent, updated))
    if lost:
        owner: dict[str, str] = {}  # message id -> session id
        for sid in index:
            for name in native._json_names(os.path.join(root, "message", sid)):
                owner[name[:-5]] = sid
        for k in lost:
            sid = out[k][0]
            needle = sid.encode()
            for mid, msid in owner.items():
                if msid == sid:
                    continue
                pdir = os.path.join(root, "part", mid)
                if any(needle in (read_capped(os.path.join(pdir, n), cap)[0] or b"") for n in native._json_names(pdir)):
                    out[k] = (sid, msid, out[k][2])
                    break
    return out


def _read_storage(path: str, member: str | None, options: ReadOptions) -> Session:
    cap = options.max_file_bytes
    index = native.storage_index(path)
    sessions = _storage_parents(path, index, cap)
    diags: list[Diagnostic] = []
    sid = _pick_root(sessions, member, path, diags)
    if sid is None:
        s = Session(format=NAME, source_path=path, view=native.STORAGE)
        s.diagnostics.extend(diags)
        return s
    ns = native.load_storage(path, sid, cap, index)
    assert ns is not None
    ns.diagnostics.extend(diags)
    children: dict[str, list[str]] = {}
    for cid, parent, _t in sessions:
        if isinstance(parent, str):
            children.setdefault(parent, []).append(cid)
    s = build(ns, steps=options.steps)
    _attach_children(s, children, lambda i: native.load_storage(path, i, cap, index), options, {sid}, 0)
    if member is not None:
        s.source_path = f"{path}#{sid}"
    return s


def _link_proxy_trace(s: Session, path: str) -> None:
    """Tie an event stream to the proxy trace of the same run beside it (OpenEnv keeps both in ``~/logs/agent/``)."""
    from ...model import RecordLink
    from ...reading.io import read_capped

    d = os.path.dirname(path)
    try:
        names = sorted(fs.listdir(d))
    except OSError:
        return
    traces = [n for n in names if n in ("trace.jsonl", "trace.json") or (n.startswith("proxy_trace") and n.endswith((".jsonl", ".json")))]
    calls = [tc.call_id for e in s.events for tc in e.tool_calls if tc.call_id]
    for n in traces:
        p = os.path.join(d, n)
        data, _why = read_capped(p, 1 << 28)
        if data is None:
            continue
        if calls:
            hit = [c for c in calls if c.encode() in data]
            if not hit:
                continue
            s.run.links.append(RecordLink("model-calls", p, None, "call-ids",
                                          f"{len(hit)} of the session's {len(calls)} tool call ids appear in {n}"))
        else:
            s.run.links.append(RecordLink("model-calls", p, None, "sibling-file", f"{n} sits beside the event stream"))


# ---------------------------------------------------------------- members, listing

def _db_session_list(path: str, cap: int) -> list[tuple[str, str | None, Any]] | None:
    store, _diags = open_store(path, cap)
    if store is None:
        return None
    try:
        rows = native.db_sessions(store)
    finally:
        store.close()
    return [(r["id"], r.get("parent_id"), r.get("time_updated")) for r in rows if isinstance(r.get("id"), str)]


def members(root: Path, options: ReadOptions) -> list[str]:
    """The sessions a store or legacy tree holds: its top-level ones (a
    sub-session is read with its parent), plus the one ``options.member``
    names when that is a sub-session of it. ``[]`` for an export or an event
    stream (one session each)."""
    path = _container(root)
    kind = _kind(path)
    if kind == "db":
        sessions = _db_session_list(path, options.max_file_bytes) or []
    elif kind == "storage":
        sessions = _storage_parents(path, native.storage_index(path), options.max_file_bytes)
    else:
        return []
    tops = _tops(sessions)
    if options.member is not None and options.member not in tops and any(sid == options.member for sid, _p, _t in sessions):
        tops.append(options.member)
    return tops


def sessions_in(containers: list[str], diags: list[Diagnostic]) -> list[Path]:
    """The top-level sessions of the stores and legacy trees :func:`.walk.find_sessions`
    found (it loads this module only when there is one)."""
    out: list[Path] = []
    db_ids: dict[str, set[str]] = {}
    for c in containers:
        if fs.isfile(c):
            store, ds = open_store(c)
            if store is None:
                diags.extend(ds)
                continue
            try:
                rows = native.db_sessions(store)
                diags.extend(store.diagnostics)
            finally:
                store.close()
            ids = {r["id"] for r in rows if isinstance(r.get("id"), str)}
            db_ids[os.path.dirname(c)] = db_ids.get(os.path.dirname(c), set()) | ids
            out += [Path(f"{c}#{r['id']}") for r in rows if isinstance(r.get("id"), str) and not (r.get("parent_id") in ids)]
    for c in containers:
        if fs.isdir(c):
            index = native.storage_index(c)
            sessions = _storage_parents(c, index, 1 << 30)
            ids = {sid for sid, _p, _t in sessions}
            shadow = db_ids.get(os.path.dirname(c), set())
            for sid, parent, _t in sessions:
                if parent in ids:
                    continue
                if sid in shadow:
                    diags.append(Diagnostic("opencode.stale-copy", f"session {sid} is also in the SQLite store beside this tree; the store's copy is listed",
                                            INFO, file=index[sid]))
                    continue
                out.append(Path(f"{c}#{sid}"))
    return out


def summarize(root: str | os.PathLike, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """One ``trajkit ls`` row: id, title, status, model, steps, tokens, cost, last update, path."""
    p, member = split_member(root)
    s = read(Path(p), ReadOptions(max_file_bytes=max_file_bytes, member=member))
    o = s.outcome
    status = None if o is None else ("finished" if o.reached_end else "aborted" if o.human_abort else "error" if o.external_error
                                     else "budget" if o.budget_exhausted else "stopped")
    return session_row(s, path=os.path.abspath(p) + (f"#{member}" if member else ""),
                       title=s.metadata.get("title") or (s.task[:80] if s.task else None), status=status,
                       source=s.metadata.get("source"), diagnostics=[d.to_dict() for d in s.diagnostics])


