"""ASF sessions as input (format name ``asf``): Agent Session Format files
(RFC 0001, ``agentsession/0.x`` JSONL) as other harnesses, agentimport and
trajkit's own exports write them (``shared/formats/asf.md`` §13).

Reading shares the spec package with writing (:mod:`trajkit.spec.asf`): the
file is read by :func:`~trajkit.spec.asf.read_asf` (lenient: a cut final
line, a corrupt middle line, unknown entry types and members kept; pre-0.5
files migrated in memory through ``legacy_id``) and checked by
:func:`~trajkit.spec.asf.verify`, whose ``asf.*`` diagnostics the session
carries (``docs/export.md``). The read :class:`~trajkit.spec.asf.AsfFile`
is kept as ``Session.asf``, so exporting the session to ASF passes the file
through unchanged (``asf.md`` §13.5): ASF -> Session -> ASF keeps every
content-addressed id.

Every entry becomes one event (``raw`` is the line as written):

- ``config``: a system event (instructions, tools added);
- ``item``: by its Open Responses item: a user/system/developer message, an
  assistant message, a ``function_call`` (an action; the call's arguments
  decoded), a ``reasoning`` item, a ``function_call_output`` (an
  observation, paired by ``call_id``); other items are events of kind
  ``other``;
- ``response``: an event of kind ``other``; its ``usage`` (and model,
  ``trajkit:cost_usd``) becomes the :class:`~trajkit.model.Usage` of the
  first output item of that response;
- every record entry (``run``, ``dispatch``, ``decision``, ``queued``,
  ``label``, ``info``, ``env``, ``outcome``, ``link``, ``custom``,
  ``compaction``, ``branch_summary``, ``ns:type`` extensions): an event of
  kind ``other``, kept.

Events on the path to the live leaf are ``active``, others ``abandoned``;
steps (``asf.md`` §13.4) are the ``function_call`` items on the live path
paired with their output by ``call_id``. A ``link rel=subsession`` names a
session resolved as ``<session id>.jsonl`` beside the file; it becomes a
sub-session linked to the call it names (``asf.subsession-missing`` when it
is not there). The last ``run`` end on the live path decides the outcome.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...diagnostics import ERROR, INFO
from ...model import (
    ACTION,
    BRANCH_ABANDONED,
    BRANCH_ACTIVE,
    MESSAGE,
    OBSERVATION,
    OTHER,
    REASONING,
    SYSTEM,
    Event,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    SpawnLink,
    Usage,
)
from ...reading import fs
from ...reading.builder import SessionBuilder
from ...reading.pairing import pair_by_call_id
from ...spec import asf as spec
from .names import ASF_TOOLS, NAME

_MAX_DEPTH = 8




def _text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                for k in ("text", "refusal"):
                    if isinstance(c.get(k), str):
                        parts.append(c[k])
                        break
        return "\n".join(parts)
    return None


def _reasoning(item: dict[str, Any]) -> str:
    t = _text(item.get("content"))
    return t if t else (_text(item.get("summary")) or "")


def _args(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _outcome(f: spec.AsfFile, active: list[spec.Entry]) -> Outcome:
    end = None
    for e in active:
        o = e.obj
        if o.get("type") == "run" and o.get("phase") == "end":
            end = e
    if end is not None:
        reason = end.obj.get("reason")
        ev = [{"event_id": end.id, "reason": reason}]
        sig = f"the last run on the live path ended with reason {reason!r}"
        if reason == "done":
            return Outcome(True, status=reason, signal=sig, claimed_success=True, evidence=ev)
        if reason == "error":
            return Outcome(False, external_error="the run ended in error", status=reason, signal=sig, evidence=ev)
        if reason == "interrupted":
            return Outcome(False, human_abort=True, status=reason, signal=sig, evidence=ev)
        if reason == "input_required":
            return Outcome(False, approval_wait=True, status=reason, signal=sig, evidence=ev)
        return Outcome(False, status=str(reason), signal=sig, evidence=ev)
    last = next((e for e in reversed(active) if e.obj.get("type") == "item"), None)
    it = last.obj.get("item") if last is not None else None
    ended = isinstance(it, dict) and it.get("type") == "message" and it.get("role") == "assistant"
    return Outcome(ended, status=None,
                   signal="no run records; the live path ends with an assistant message" if ended
                   else "no run records; the live path does not end with an assistant message",
                   evidence=[{"event_id": last.id}] if last is not None else [])


def _session(path: Path, data: bytes, b: SessionBuilder, session: Session, depth: int, seen: set[str]) -> None:
    file = str(path)
    f = spec.read_asf(data, path=file)
    session.asf = f
    session.diagnostics.extend(spec.verify(f))
    h = f.header if isinstance(f.header, dict) else {}
    session.id = str(h.get("id")) if h.get("id") is not None else path.stem
    meta = {k: v for k, v in h.items() if k not in ("type",)}
    session.metadata["asf_header"] = meta
    run = session.run
    harness = h.get("harness") if isinstance(h.get("harness"), dict) else {}
    run.harness = harness.get("name") if isinstance(harness.get("name"), str) else None
    run.harness_version = harness.get("version") if isinstance(harness.get("version"), str) else None
    run.workspace = h.get("cwd") if isinstance(h.get("cwd"), str) else None
    run.started_at = h.get("created_at") if isinstance(h.get("created_at"), str) else None
    leaf = f.main_leaf()
    active = f.path_to(leaf) if leaf is not None else []
    on_path = {id(e) for e in active}
    session.metadata["leaf_entry_id"] = leaf
    session.metadata["leaves"] = f.leaves()
    models: list[str] = []
    by_response: dict[Any, Event] = {}  # response id -> its first output event
    pending_outputs: list[Event] = []  # output events of a response without an id
    calls: dict[str, Event] = {}
    links: list[tuple[dict[str, Any], Event]] = []
    last_ts = None
    for n, e in enumerate(f.entries):
        o = e.obj
        eid = e.id if isinstance(e.id, str) else f"line-{e.line}"
        ref = Ref(file, eid, e.line, e.line)
        typ = o.get("type")
        ts = o.get("ts") if isinstance(o.get("ts"), str) else None
        last_ts = ts or last_ts
        branch = BRANCH_ACTIVE if id(e) in on_path else BRANCH_ABANDONED
        common = dict(timestamp=ts, ref=ref, parent_id=o.get("parent"), branch=branch)
        ev: Event
        if o.get("_unparsed"):
            ev = Event(eid, OTHER, "asf.unparsed", e.raw, **common)
        elif typ == "config":
            if isinstance(o.get("model"), str):
                models.append(o["model"])
            tools = o.get("tools_added") if isinstance(o.get("tools_added"), list) else None
            ev = Event(eid, SYSTEM, "config", e.raw, source="agent", role="system",
                       text=o.get("instructions") if isinstance(o.get("instructions"), str) else None, tools=tools, **common)
        elif typ == "item" and isinstance(o.get("item"), dict):
            it = o["item"]
            ityp = it.get("type")
            resp = o.get("response") if isinstance(o.get("response"), str) else None
            if ityp == "message" and it.get("role") == "assistant":
                ev = Event(eid, MESSAGE, "item.message", e.raw, source="agent", role="assistant", text=_text(it.get("content")),
                           response_id=resp, **common)
            elif ityp == "message":
                role = it.get("role") if isinstance(it.get("role"), str) else "user"
                ev = Event(eid, MESSAGE, "item.message", e.raw, source="user" if role == "user" else role, role=role,
                           text=_text(it.get("content")), **common)
            elif ityp == "function_call":
                cid = it.get("call_id") if isinstance(it.get("call_id"), str) else None
                tc = ASF_TOOLS.call(it.get("name") if isinstance(it.get("name"), str) else "tool", _args(it.get("arguments")), cid)
                ev = Event(eid, ACTION, "item.function_call", e.raw, source="agent", role="assistant", tool_calls=[tc],
                           response_id=resp, **common)
                if cid is not None:
                    calls.setdefault(cid, ev)
            elif ityp == "function_call_output":
                cid = it.get("call_id") if isinstance(it.get("call_id"), str) else None
                act = calls.get(cid) if cid else None
                out = it.get("output")
                ev = Event(eid, OBSERVATION, "item.function_call_output", e.raw, source="environment", role="tool",
                           text=_text(out) if not isinstance(out, str) else out, call_id=cid,
                           cause=act.id if act is not None else None, **common)
            elif ityp == "reasoning":
                ev = Event(eid, REASONING, "item.reasoning", e.raw, source="agent", role="assistant", reasoning=_reasoning(it),
                           response_id=resp, **common)
            else:
                ev = Event(eid, OTHER, f"item.{ityp}", e.raw, **common)
            if ev.kind in (ACTION, REASONING) or (ev.kind == MESSAGE and ev.role == "assistant"):
                if resp is not None:
                    by_response.setdefault(resp, ev)
                else:
                    pending_outputs.append(ev)
        elif typ == "response":
            rid = o.get("response_id") if isinstance(o.get("response_id"), str) else None
            ev = Event(eid, OTHER, "response", e.raw, response_id=rid, **common)
            if isinstance(o.get("model"), str):
                models.append(o["model"])
            target = by_response.get(rid) if rid is not None else (pending_outputs[0] if pending_outputs else None)
            pending_outputs = []
            usage = o.get("usage")
            cost = o.get("trajkit:cost_usd")
            if target is not None and (isinstance(usage, dict) or isinstance(cost, (int, float))):
                u = Usage.from_counts(usage, "asf response.usage") if isinstance(usage, dict) else Usage(source="asf response")
                u.model = o.get("model") if isinstance(o.get("model"), str) else (models[-1] if models else None)
                if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                    u.cost = float(cost)
                    u.cost_estimated = o.get("trajkit:cost_estimated") is True  # a trajkit export's own estimate
                target.usage = usage if isinstance(usage, dict) else None
                target.model_usage = u
        else:
            text = None
            if typ in ("compaction", "branch_summary") and isinstance(o.get("summary"), dict):
                text = _text(o["summary"].get("content"))
            ev = Event(eid, OTHER, str(typ), e.raw, text=text, call_id=o.get("call_id") if isinstance(o.get("call_id"), str) else None,
                       **common)
            if typ == "link" and o.get("rel") == "subsession":
                links.append((o, ev))
        session.events.append(ev)
    run.models = list(dict.fromkeys(models))
    run.ended_at = last_ts
    first_user = next((ev for ev in session.events if ev.kind == MESSAGE and ev.role == "user" and ev.branch == BRANCH_ACTIVE), None)
    if first_user is not None and first_user.text:
        session.task, session.task_source = first_user.text, "first user message"
    session.outcome = _outcome(f, active)
    view = Session(format=NAME, source_path=session.source_path, events=[ev for ev in session.events if ev.branch == BRANCH_ACTIVE])
    session.steps = pair_by_call_id(view)
    # sub-sessions
    for o, lev in links:
        sid = o.get("session")
        cid = o.get("call_id") if isinstance(o.get("call_id"), str) else None
        p = path.parent / f"{sid}.jsonl" if isinstance(sid, str) else None
        if p is None or not fs.isfile(p) or depth >= _MAX_DEPTH or str(p) in seen:
            session.diag("asf.subsession-missing",
                         f"link rel=subsession names session {sid!r}, not found as {sid}.jsonl beside the file", INFO,
                         file=file, event_id=lev.id)
            continue
        cdata, _sf = b.read_bytes(p, "subsession")
        if cdata is None:
            continue
        child = Session(format=NAME, source_path=str(p))
        _session(p, cdata, b, child, depth + 1, seen | {str(p)})
        act = calls.get(cid) if cid else None
        st = next((x for x in session.steps if act is not None and x.action_event_id == act.id), None)
        child.spawned_by = SpawnLink(child.id, st.step_id if st is not None else 0, act.id if act is not None else None,
                                     "asf link rel=subsession", f"call {cid}" if cid else "the link names no call")
        if st is not None:
            st.children.append(child)
        session.children.append(child)


def read(root: Path, options: ReadOptions) -> Session:
    b = SessionBuilder(NAME, root, options, view="session")
    session = b.session
    data, sf = b.read_bytes(root, "session")
    if data is None:
        return b.finish()
    _session(root, data, b, session, 0, {str(root)})
    sf.event_ids = [e.id for e in session.events]
    if not session.asf.header:
        session.diag("asf.not-a-session", "the file has no ASF header line", ERROR, file=str(root))
    if not options.steps:
        for s in session.walk():
            s.steps = []
    return b.finish()


__all__ = ["read"]
