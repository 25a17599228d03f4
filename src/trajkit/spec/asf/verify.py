"""ASF verification: every check a reader can make on an :class:`AsfFile`
(ids, parents, ``parents``, ``base``, ``ts`` spelling, ``first_kept``,
instruction parts, omitted lists, ``omit``, call-id uniqueness, promised
records, run ``source``, request hashes), as ``asf.*`` diagnostics.
"""

from __future__ import annotations

from typing import Any

from ...diagnostics import ERROR, INFO, WARNING, Diagnostic
from .codec import entry_id, normalize_ts, request_hash
from .context import RequestWalker, build_context, request_context
from .entries import CORE_TYPES, FORMAT_MINOR, FUTURE_RECORD_TYPES, AsfFile, Entry, _parents_key

# --------------------------------------------------------------------------- verification

def verify(f: AsfFile, check_requests: bool = True) -> list[Diagnostic]:
    """Every problem a reader can find in ``f`` (plus the reading diagnostics).

    Errors mean the file does not conform; warnings and infos do not.
    """
    out = list(f.diagnostics)
    path = f.path
    ver = f.version
    if ver is not None and (ver[0] != 0 or ver[1] > FORMAT_MINOR):
        return out  # a newer format is refused, not checked
    hashed = ver is not None and ver[1] >= 5 or f.migrated

    def err(code: str, e: Entry | None, msg: str, sev: str = ERROR) -> None:
        out.append(Diagnostic(code, msg, sev, file=path, event_id=e.id if e is not None else None, line=e.line if e is not None else None))

    seen: dict[Any, Entry] = {}
    roots: list[Entry] = []
    base = f.header.get("base")
    call_ids: dict[str, Entry] = {}
    for idx, e in enumerate(f.entries):
        o = e.obj
        if o.get("_unparsed"):
            continue
        missing = [m for m in ("id", "type", "parent", "ts") if m not in o]
        if missing:
            err("asf.missing-member", e, f"entry lacks {', '.join(missing)}")
            if "id" in missing:
                continue
        eid = o.get("id")
        if not isinstance(eid, str) or not eid:
            err("asf.missing-member", e, "entry id is not a non-empty string")
            continue
        if eid in seen:
            err("asf.duplicate-id", e, f"id {eid} already appears on line {seen[eid].line}")
            continue
        t = o.get("type")
        if isinstance(t, str) and t not in CORE_TYPES and t not in FUTURE_RECORD_TYPES and ":" not in t:
            err("asf.unknown-entry-type", e, f"entry type {t!r} is neither core nor namespaced; preserved", WARNING)
        for reserved in ("content",):
            if reserved in o:
                err("asf.reserved-member", e, f"body member {reserved!r} is reserved")
        if hashed:
            if "ts" in o and normalize_ts(o["ts"]) != o["ts"]:
                err("asf.bad-ts", e, f"ts {o['ts']!r} is not in the one hashed spelling ({normalize_ts(o['ts'])!r})")
            want = entry_id(o)
            if want != eid:
                err("asf.bad-id", e, f"id does not match its content (recomputed {want})")
        p = o.get("parent")
        if p is None:
            roots.append(e)
        elif p not in seen:
            if p in (x.id for x in f.entries[idx + 1:]):
                err("asf.bad-parent", e, f"parent {p} appears later in the file")
            else:
                err("asf.bad-parent", e, f"parent {p} is not in the file")
        parents = o.get("parents")
        if parents is not None:
            if not isinstance(parents, list):
                err("asf.bad-parents", e, "parents is not a list")
            else:
                names = []
                for ref in parents:
                    if not isinstance(ref, dict) or not isinstance(ref.get("entry"), str):
                        err("asf.bad-parents", e, "a parents reference does not name an entry")
                        continue
                    names.append((ref.get("session"), ref["entry"]))
                    if ref.get("session") is None and ref["entry"] not in seen:
                        err("asf.bad-parents", e, f"parents names {ref['entry']}, which is not earlier in the file")
                    if ref.get("session") is None and ref["entry"] == p:
                        err("asf.bad-parents", e, "parents repeats the parent")
                if len(set(names)) != len(names):
                    err("asf.bad-parents", e, "parents names the same entry twice")
                if hashed and parents != sorted(parents, key=_parents_key):
                    err("asf.bad-parents", e, "parents is not sorted by session then entry")
        if t == "item" and isinstance(o.get("item"), dict) and o["item"].get("type") == "function_call":
            cid = o["item"].get("call_id")
            if not isinstance(cid, str) or not cid:
                err("asf.bad-call-id", e, "function_call has no call_id")
            elif cid in call_ids:
                err("asf.duplicate-call-id", e, f"call_id {cid} is already used on line {call_ids[cid].line}")
            else:
                call_ids[cid] = e
        if t == "item" and isinstance(o.get("item"), dict) and o["item"].get("type") == "item_reference":
            err("asf.item-reference", e, "item_reference is accepted but writers must not emit it", INFO)
        seen[eid] = e
    # base: the file opens with the prefix path to base, then the session's own entries.
    if base is not None:
        _verify_base(f, base, roots, err)
    # Structure per entry that names other entries.
    for e in f.entries:
        o = e.obj
        if o.get("_unparsed") or not isinstance(o.get("id"), str):
            continue
        if o.get("type") == "compaction":
            fk = o.get("first_kept")
            anc = {x.id for x in f.path_to(e.id)[:-1]}
            if fk not in anc:
                err("asf.bad-first-kept", e, f"first_kept {fk!r} is not an entry on this compaction's path")
        if o.get("type") in ("dispatch", "decision") and o.get("target") not in seen:
            err("asf.bad-target", e, f"target {o.get('target')!r} is not an entry in the file")
    # Context checks at every leaf, request hashes at every response.
    leaves = f.leaves()
    reported: set[tuple[str, str]] = set()
    for leaf in leaves:
        ctx = build_context(f, leaf)
        for code, eid, msg in ctx.problems:
            if code == "asf.bad-first-kept":
                continue  # reported above
            if (code, eid) not in reported:
                reported.add((code, eid))
                out.append(Diagnostic(code, msg, ERROR, file=path, event_id=eid, line=_line_of(f, eid)))
    if check_requests:
        checked: set[str] = set()
        for leaf in leaves:
            lpath = f.path_to(leaf)
            if lpath and lpath[0].parent is not None:
                continue  # a broken path: reported as asf.bad-parent already
            walker = RequestWalker()
            for e in lpath:
                o = e.obj
                if o.get("type") == "response" and isinstance(o.get("request_hash"), str) and e.id not in checked:
                    checked.add(e.id)
                    got = walker.hash_for(o.get("response_id")) if walker.path else None
                    if got is None:
                        ctx = request_context(f, e)
                        if ctx is None:
                            err("asf.bad-request-hash", e, "request_hash on a response with no path before it")
                            walker.feed(e)
                            continue
                        got = request_hash(ctx.request())
                    if got != o["request_hash"]:
                        err("asf.bad-request-hash", e, f"request_hash {o['request_hash']} does not match the request rebuilt from the path ({got})")
                walker.feed(e)
    _verify_records(f, err)
    return out


def _line_of(f: AsfFile, eid: Any) -> int | None:
    e = f.by_id.get(eid)
    return e.line if e is not None else None


def _verify_base(f: AsfFile, base: Any, roots: list[Entry], err) -> None:
    ids = [e.id for e in f.entries]
    if base not in ids:
        err("asf.bad-base", None, f"base {base} is not in the file (the file must open with the path to it)")
        return
    k = ids.index(base)
    prefix = f.entries[: k + 1]
    want = [e.id for e in f.path_to(base)]
    if [e.id for e in prefix] != want:
        err("asf.bad-base", prefix[-1], "the entries before base are not exactly the path to it")
    if len(roots) > 1:
        for r in roots[1:]:
            err("asf.bad-base", r, "a second root in a file with base")
    prefix_ids = set(want)
    for e in f.entries[k + 1:]:
        p = e.parent
        if p in prefix_ids and p != base:
            err("asf.bad-base", e, f"parent {p} is in the base prefix but is not base")


def _verify_records(f: AsfFile, err) -> None:
    """Promised records and run shapes (RFC 0001 §7), per path."""
    records = f.header.get("records") or []
    if not isinstance(records, list):
        return
    promised = set(x for x in records if isinstance(x, str))
    leaves = f.leaves()
    done: set[tuple[str, Any]] = set()
    for leaf in leaves:
        path = f.path_to(leaf)
        calls: dict[str, Entry] = {}
        dispatched: set[str] = set()
        for e in path:
            o = e.obj
            t = o.get("type")
            it = o.get("item") if t == "item" else None
            if isinstance(it, dict) and it.get("type") == "function_call" and isinstance(it.get("call_id"), str):
                calls[it["call_id"]] = e
            if t == "dispatch" and isinstance(o.get("call_id"), str):
                dispatched.add(o["call_id"])
            if isinstance(it, dict) and it.get("type") == "function_call_output" and "dispatch" in promised:
                cid = it.get("call_id")
                decided = _has_decision(path, cid, e)
                if cid in calls and cid not in dispatched and not decided and ("rec", e.id) not in done:
                    done.add(("rec", e.id))
                    err("asf.bad-records", e, f"the header promises dispatch records but call {cid} has an output and no dispatch")
        if "run" in promised:
            for problem in _run_problems(path):
                key = ("run", problem[0].id)
                if key not in done:
                    done.add(key)
                    err("asf.bad-run", problem[0], problem[1])


def _has_decision(path: list[Entry], cid: Any, before: Entry) -> bool:
    """A call answered without dispatch: rejected or answered by a decision."""
    for e in path:
        if e is before:
            break
        o = e.obj
        if o.get("type") == "decision" and o.get("call_id") == cid and o.get("verdict") in ("reject", "answer"):
            return True
    return False


def _run_problems(path: list[Entry]) -> list[tuple[Entry, str]]:
    """Run starts whose written ``source`` the segment contradicts."""
    out: list[tuple[Entry, str]] = []
    open_calls: set[str] = set()
    i = 0
    n = len(path)
    while i < n:
        e = path[i]
        o = e.obj
        if o.get("type") == "run" and o.get("phase") == "start":
            pending_at_start = set(open_calls)
            run_id = o.get("run_id")
            j = i + 1
            first_takeup = None
            adds = False
            while j < n:
                x = path[j].obj
                if x.get("type") == "run" and x.get("run_id") == run_id and x.get("phase") == "end":
                    break
                t = x.get("type")
                it = x.get("item") if t == "item" else None
                if first_takeup is None:
                    if t in ("decision", "dispatch") or (isinstance(it, dict) and it.get("type") == "function_call_output"):
                        cid = x.get("call_id") if t != "item" else it.get("call_id")
                        first_takeup = cid in pending_at_start
                if t in ("item", "response"):
                    adds = True
                j += 1
            computed = "resume" if first_takeup else "input"
            written = o.get("source")
            if written not in ("input", "resume"):
                out.append((e, f"run {run_id} start has source {written!r}, not input or resume"))
            elif written != computed:
                empty = not adds and first_takeup is None
                if not (written == "resume" and empty):
                    out.append((e, f"run {run_id} is written source={written} but its segment shows {computed}"))
        t = o.get("type")
        it = o.get("item") if t == "item" else None
        if isinstance(it, dict):
            if it.get("type") == "function_call" and isinstance(it.get("call_id"), str):
                open_calls.add(it["call_id"])
            elif it.get("type") == "function_call_output":
                open_calls.discard(it.get("call_id"))
        i += 1
    return out
