"""The loss report: where every native file and event of a run went in an export.

For each native file a reader looked at (``Session.files``, every session of
the tree) the report says whether its content is in the output and, if not,
why; for each native event it lists the ASF entry ids (``--to asf``) or the
ATIF steps (``--to atif``) it went to, or a stable code saying why it went
nowhere. :func:`unaccounted` is the completeness check the tests run: an
empty list means nothing was dropped silently.

File codes: ``export.file-converted``, ``export.file-metadata``, ``export.file-other-view``,
``export.file-recording``, ``export.file-skipped``, ``export.file-ignored``,
``export.file-not-read``. Event codes: ``export.entry``, ``export.step``,
``export.step-extra``, ``export.no-entry``, ``export.no-step``. Member code
(``--no-passthrough``): ``export.raw-not-kept``.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import Session, native_record
from .to_asf import AsfExport

FILE_CODES = {
    "read": ("export.file-converted", "its content is in the output"),
    "unused": ("export.file-other-view", "another on-disk view of the same run was converted instead"),
    "skipped": ("export.file-skipped", "the reader could not use it; see the diagnostics"),
    "ignored": ("export.file-ignored", "a sidecar the format itself ignores"),
}

_NAIVE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")

_EXTRA_GROUPS = ("config_entries", "custom", "labels", "info", "environments", "outcomes", "outcome", "links", "queued",
                 "runs", "dispatches", "decisions", "extensions")


def _file_record(f: Any) -> dict[str, Any]:
    code, why = FILE_CODES.get(f.status, ("export.file-not-read", f"status {f.status!r}"))
    if f.status == "unused" and f.role in ("recording",):
        code, why = "export.file-recording", "a terminal recording or log, not part of the event record"
    elif f.status == "read" and not f.event_ids:
        code, why = "export.file-metadata", "read into the session metadata: the ASF header's trajkit:metadata, the ATIF root extra"
    d = {"path": f.path, "role": f.role, "status": f.status, "code": code, "why": why, "size": f.size}
    if f.note:
        d["note"] = f.note
    if f.event_ids:
        d["events"] = len(f.event_ids)
    return d


def _raw_members(raw: Any) -> list[str]:
    """Member paths of a native event (top level, and one level into objects)."""
    out: list[str] = []
    if isinstance(raw, dict):
        for k, v in raw.items():
            out.append(str(k))
            if isinstance(v, dict):
                out.extend(f"{k}.{k2}" for k2 in v)
    return out


def _doc_steps(doc: dict[str, Any], tid_prefix: str = "") -> dict[str, list[dict[str, Any]]]:
    """Entry id -> [{trajectory, step, where}] over a document and its embedded sub-agents."""
    out: dict[str, list[dict[str, Any]]] = {}
    tid = doc.get("trajectory_id")
    for st in doc.get("steps", []):
        ex = st.get("extra") or {}
        sid = st["step_id"]

        def put(eid: Any, where: str) -> None:
            if isinstance(eid, str):
                out.setdefault(eid, []).append({"trajectory": tid, "step": sid, "where": where})

        put((ex.get("agentsession") or {}).get("entry_id"), "step")
        put(ex.get("response_entry_id"), "step")
        for i in ex.get("item_entry_ids", []):
            put(i, "step")
        for group in _EXTRA_GROUPS:
            for rec in list(ex.get(group, [])) + list((ex.get("trailing") or {}).get(group, [])):
                if isinstance(rec, dict):
                    put(rec.get("entry_id"), f"extra.{group}")
        for res in (st.get("observation") or {}).get("results", []):
            put(((res.get("extra") or {}).get("agentsession") or {}).get("entry_id"), "observation")
            for ref in res.get("subagent_trajectory_ref") or []:
                put(((ref.get("extra") or {}).get("agentsession") or {}).get("entry_id"), "subagent_trajectory_ref")
    agent_entry = (((doc.get("agent") or {}).get("extra") or {}).get("agentsession") or {}).get("entry_id")
    if isinstance(agent_entry, str):
        out.setdefault(agent_entry, []).append({"trajectory": tid, "step": None, "where": "agent"})
    for group in _EXTRA_GROUPS:
        for rec in (doc.get("extra") or {}).get(group, []):
            if isinstance(rec, dict) and isinstance(rec.get("entry_id"), str):
                out.setdefault(rec["entry_id"], []).append({"trajectory": tid, "step": None, "where": f"root extra.{group}"})
    for sub in doc.get("subagent_trajectories") or []:
        for k, v in _doc_steps(sub).items():
            out.setdefault(k, []).extend(v)
    return out


def build_report(
    session: Session,
    export: AsfExport,
    target: str,
    outputs: list[str],
    docs: list[dict[str, Any]] | None = None,
    passthrough: bool = True,
) -> dict[str, Any]:
    """The loss report of converting ``session`` (as ``export``) to ``target``."""
    steps_of: dict[str, list[dict[str, Any]]] = {}
    for d in docs or []:
        for k, v in _doc_steps(d).items():
            steps_of.setdefault(k, []).extend(v)
    placement = {}
    for p in export.placements:
        placement.setdefault((p.session, repr(p.event_id)), p)
    files: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    diagnostics: list[dict[str, Any]] = []
    for s in session.walk():
        sid = export.sessions.get(id(s))
        for f in s.files:
            rec = _file_record(f)
            rec["session"] = s.id
            files.append(rec)
        for d in s.diagnostics:
            x = d.to_dict()
            x["session"] = s.id
            diagnostics.append(x)
        for e in s.events:
            p = placement.get((sid, repr(e.id)))
            rec: dict[str, Any] = {
                "session": s.id,
                "event_id": e.id,
                "kind": e.kind,
                "type": e.type,
                "file": e.ref.path if e.ref else None,
            }
            if e.ref is not None and e.ref.line_start is not None:
                rec["line"] = e.ref.line_start
            if isinstance(e.timestamp, str) and _NAIVE.match(e.timestamp):
                rec["_naive"] = True
            entries = list(p.entries) if p else []
            if target == "asf":
                rec["asf_session"] = sid
                rec["entries"] = entries
                rec["code"] = "export.entry" if entries else "export.no-entry"
                if not entries:
                    rec["why"] = (p.note if p and p.note else "the event produced no entry")
            else:
                where = [w for eid in entries for w in steps_of.get(eid, [])]
                seen = set()
                uniq = []
                for w in where:
                    key = (w["trajectory"], w["step"], w["where"])
                    if key not in seen:
                        seen.add(key)
                        uniq.append(w)
                rec["asf_entries"] = entries
                rec["steps"] = uniq
                if not uniq:
                    rec["code"] = "export.no-step"
                    rec["why"] = "no ATIF step holds the entries this event produced"
                elif all(w["where"].startswith(("extra.", "root extra.", "agent")) for w in uniq):
                    rec["code"] = "export.step-extra"
                else:
                    rec["code"] = "export.step"
            if not passthrough:
                rec["raw_not_kept"] = {"code": "export.raw-not-kept", "members": _raw_members(native_record(e))}
            events.append(rec)
    naive = [r for r in events if r.get("_naive")]
    for r in events:
        r.pop("_naive", None)
    if naive:
        diagnostics.append({
            "severity": "warning",
            "code": "export.naive-timestamp",
            "message": f"{len(naive)} event timestamp(s) carry no UTC offset; ASF needs UTC, so they were read as UTC",
        })
    by_code: dict[str, int] = {}
    for r in files + events:
        by_code[r["code"]] = by_code.get(r["code"], 0) + 1
    report = {
        "source": session.source_path,
        "format": session.format,
        "view": session.view,
        "target": target,
        "passthrough": passthrough,
        "outputs": outputs,
        "redactions": export.redactions,
        "summary": {
            "sessions": sum(1 for _ in session.walk()),
            "files": len(files),
            "events": len(events),
            "events_placed": sum(1 for r in events if r["code"] in ("export.entry", "export.step", "export.step-extra")),
            "events_dropped": sum(1 for r in events if r["code"] in ("export.no-entry", "export.no-step")),
            "by_code": dict(sorted(by_code.items())),
        },
        "files": files,
        "events": events,
        "diagnostics": diagnostics,
    }
    report["unaccounted"] = unaccounted(session, report)
    return report


def unaccounted(session: Session, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Native files and events the report does not account for (should be empty)."""
    missing: list[dict[str, Any]] = []
    by_event = {(r["session"], repr(r["event_id"])) for r in report["events"] if r.get("code")}
    by_file = {(r["session"], r["path"]) for r in report["files"] if r.get("code")}
    placed_codes = ("export.entry", "export.step", "export.step-extra")
    for s in session.walk():
        for f in s.files:
            if (s.id, f.path) not in by_file:
                missing.append({"session": s.id, "file": f.path})
        for e in s.events:
            if (s.id, repr(e.id)) not in by_event:
                missing.append({"session": s.id, "event_id": e.id})
        # Every event a read file declares must be in the events (and so placed or explained).
        events = {repr(e.id) for e in s.events}
        for f in s.files:
            if f.status == "read":
                for eid in f.event_ids:
                    if repr(eid) not in events:
                        missing.append({"session": s.id, "file": f.path, "event_id": eid, "why": "declared by the file, not in the session"})
    for r in report["events"]:
        if r["code"] not in placed_codes and not r.get("why"):
            missing.append({"session": r["session"], "event_id": r["event_id"], "why": "dropped without a reason"})
    return missing
