"""One :class:`NSession` (any source) as a trajkit :class:`Session`.

Events, one per native record, in order (messages by time, parts by id):

- the session record: ``state`` (``session``);
- each message record: ``state`` (``message.user`` / ``message.assistant``),
  or ``error`` when the assistant message carries an ``error``;
- each part: ``text`` -> ``message`` (the message's role; an ``ignored``
  text is ``state``), ``reasoning`` -> ``reasoning``, ``tool`` -> an
  ``action`` (its call: ``callID``, ``tool``, ``state.input``) and, once the
  tool ran (``completed`` / ``error``), an ``observation`` ``<part id>/result``
  (``state.output`` or ``state.error``), placed after the span's outputs as
  the model was sent them; ``step-start``, ``step-finish``, ``patch``,
  ``snapshot``, ``agent``, ``retry``, ``compaction``, ``subtask`` ->
  ``state``; ``file`` and unknown part types -> ``other``;
- todo rows and records that did not decode: ``state`` / ``other``.

A model call is one ``step-start`` ... ``step-finish`` span of an assistant
message (one message per call in 1.18); its usage is the span's
``step-finish`` ``tokens`` and ``cost``, set on the span's first output event
(and its first step). A message without step-finish usage falls back to the
message's own ``tokens`` (never both: the message total repeats its spans).
Steps: one per tool part that ran, as ``opencode.md`` §8.4 says.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from ...diagnostics import INFO, WARNING
from ...model import (
    ACTION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    OTHER,
    REASONING,
    STATE,
    Event,
    Outcome,
    Ref,
    Session,
    SPAWN_OP,
    SpawnLink,
    Step,
    Usage,
)
from ...steps import render_action
from ...vocab.opencode import OPENCODE_TOOLS
from .native import NMessage, NSession, Rec

NAME = "opencode"
SINGLE_ARGUMENT = OPENCODE_TOOLS.single_argument()

#: Part types that mark or annotate a model call and are no step.
STATE_PARTS = {"step-start", "step-finish", "patch", "snapshot", "agent", "retry", "compaction", "subtask"}
KNOWN_PARTS = STATE_PARTS | {"text", "reasoning", "tool", "file"}
#: Assistant ``finish`` values that end a turn with an answer.
ANSWER_FINISH = {"stop", "end_turn", "end-turn", "endTurn"}


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _num(v: Any) -> int | float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_ms(ms: Any) -> str | None:
    """Epoch milliseconds as an ISO UTC timestamp (``2026-01-01T00:00:00.000Z``)."""
    v = _num(ms)
    if v is None or v != v:
        return None
    try:
        secs, milli = divmod(int(v), 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{milli:03d}Z" if secs >= 0 else None
    except (OverflowError, OSError, ValueError):
        return None


def usage_of(tokens: Any, cost: Any, source: str, model: str | None) -> tuple[Usage | None, dict[str, Any] | None]:
    """opencode's ``tokens`` (+ ``cost``) as a :class:`Usage` and the dict outputs print.

    opencode counts prompt tokens apart from the cache: ``Usage.input`` is
    ``input + cache.read + cache.write`` (every prompt token),
    ``cache_read`` / ``cache_write`` the cached parts, ``output`` and
    ``reasoning`` as recorded, ``total`` as recorded.
    """
    t = _obj(tokens)
    if not t and _num(cost) is None:
        return None, None
    cache = _obj(t.get("cache"))
    inp, out, cr, cw, rs = (_num(t.get("input")), _num(t.get("output")), _num(cache.get("read")), _num(cache.get("write")),
                            _num(t.get("reasoning")))
    prompt = None if inp is None and cr is None and cw is None else int((inp or 0) + (cr or 0) + (cw or 0))
    c = float(cost) if _num(cost) is not None else None
    u = Usage(input=prompt, output=int(out) if out is not None else None, cache_read=int(cr) if cr is not None else None,
              cache_write=int(cw) if cw is not None else None, reasoning=int(rs) if rs is not None else None,
              total=int(t["total"]) if _num(t.get("total")) is not None else None, cost=c, source=source, model=model)
    native = {"tokens": tokens, "cost": cost, "source": source}
    return u, native


class _Span:
    __slots__ = ("index", "response_id", "outputs", "pending", "finish", "finish_event", "reasoning", "texts", "usage", "native")

    def __init__(self, index: int, response_id: str):
        self.index = index
        self.response_id = response_id
        self.outputs: list[Event] = []
        self.pending: list[Event] = []  # observations placed after the span's outputs
        self.finish: Rec | None = None
        self.finish_event: Event | None = None
        self.reasoning: list[str] = []
        self.texts: list[str] = []
        self.usage: Usage | None = None
        self.native: dict[str, Any] | None = None


def build(ns: NSession, *, steps: bool = True) -> Session:
    """The Session of ``ns`` (sub-sessions are attached by the caller)."""
    s = Session(format=NAME, source_path=ns.path, id=ns.id, view=ns.source)
    s.files = ns.files
    s.diagnostics = list(ns.diagnostics)
    s.metadata.update(ns.metadata)
    s.metadata["source"] = ns.source
    s.metadata["context_rebuildable"] = False  # the system prompt and tool list are not stored
    info = ns.info
    events = s.events
    if ns.rec is not None:
        events.append(Event(ns.rec.id, STATE, "session", ns.rec.raw, source="harness", timestamp=iso_ms(_obj(info.get("time")).get("created")),
                            text=info.get("title") if isinstance(info.get("title"), str) else None, ref=ns.rec.ref))
    calls: list[dict[str, Any]] = []  # per model call: response id, message, span usage
    actions: list[tuple[Event, Event | None, _Span, bool]] = []  # (action, observation, span, first tool of its span)
    unanswered: list[str] = []
    last_role: str | None = None
    for m in ns.messages:
        role = _message_role(m)
        last_role = role or last_role
        mi = m.info
        model = mi.get("modelID") if isinstance(mi.get("modelID"), str) else None
        created = iso_ms(_obj(mi.get("time")).get("created"))
        message_event = None
        if m.rec is not None:
            err = _obj(mi.get("error"))
            kind = ERROR_EVENT if err else STATE
            extra = {k: mi[k] for k in ("finish", "agent", "mode", "modelID", "providerID", "summary") if k in mi}
            text = _error_text(err) if err else None
            if not m.rec.ok:
                kind, text = OTHER, None
            message_event = Event(m.id, kind, f"message.{role or 'unknown'}", m.rec.raw, source="agent" if role == "assistant" else role,
                                  role=role, timestamp=created, text=text, ref=m.rec.ref, extra=extra)
            events.append(message_event)
        spans: list[_Span] = []
        span: _Span | None = None

        def new_span() -> _Span:
            sp = _Span(len(spans), m.id if not spans else f"{m.id}:{len(spans)}")
            spans.append(sp)
            return sp

        def close(sp: _Span | None) -> None:
            if sp is not None and sp.pending:
                events.extend(sp.pending)
                sp.pending = []

        for p in m.parts:
            b = p.body
            typ = b.get("type") if isinstance(b.get("type"), str) else None
            ts = iso_ms(_obj(b.get("time")).get("start")) or created
            if not p.ok:
                events.append(Event(p.id, OTHER, "part", p.raw, ref=p.ref))
                continue
            if typ == "step-start":
                if span is not None and (span.outputs or span.finish is not None or span.pending):
                    close(span)
                    span = None
                if span is None:
                    span = new_span()
                events.append(Event(p.id, STATE, "part.step-start", p.raw, source="agent", timestamp=ts, ref=p.ref,
                                    response_id=span.response_id, extra=_pick(b, "snapshot")))
                continue
            if typ == "step-finish":
                if span is None:
                    span = new_span()
                close(span)
                span.finish = p
                span.usage, span.native = usage_of(b.get("tokens"), b.get("cost"), "step-finish", model)
                span.finish_event = Event(p.id, STATE, "part.step-finish", p.raw, source="agent", timestamp=ts, ref=p.ref,
                                          response_id=span.response_id, extra=_pick(b, "reason", "snapshot"))
                events.append(span.finish_event)
                span = None
                continue
            if role == "assistant" and typ in ("text", "reasoning", "tool") and span is None:
                span = new_span()
            rid = span.response_id if span is not None and role == "assistant" else None
            if typ == "text":
                text = b.get("text") if isinstance(b.get("text"), str) else ""
                extra = _pick(b, "synthetic", "ignored", "metadata")
                if b.get("ignored") is True:
                    events.append(Event(p.id, STATE, "part.text", p.raw, source=role, role=role, timestamp=ts, text=text, ref=p.ref, extra=extra))
                    continue
                ev = Event(p.id, MESSAGE, "part.text", p.raw, source="agent" if role == "assistant" else (role or "user"), role=role or "user",
                           timestamp=ts, text=text, response_id=rid, ref=p.ref, extra=extra)
                events.append(ev)
                if role == "assistant" and span is not None:
                    span.outputs.append(ev)
                    span.texts.append(text)
            elif typ == "reasoning":
                text = b.get("text") if isinstance(b.get("text"), str) else ""
                ev = Event(p.id, REASONING, "part.reasoning", p.raw, source="agent", role="assistant", timestamp=ts, reasoning=text,
                           response_id=rid, ref=p.ref, extra=_pick(b, "metadata"))
                events.append(ev)
                if span is not None:
                    span.outputs.append(ev)
                    span.reasoning.append(text)
            elif typ == "tool":
                st = _obj(b.get("state"))
                status = st.get("status") if isinstance(st.get("status"), str) else None
                name = b.get("tool") if isinstance(b.get("tool"), str) else "tool"
                call_id = b.get("callID") if isinstance(b.get("callID"), str) else p.id
                args = st.get("input") if "input" in st else {}
                call = OPENCODE_TOOLS.call(name, args, call_id)
                act = Event(p.id, ACTION, "part.tool", p.raw, source="agent", role="assistant", timestamp=iso_ms(_obj(st.get("time")).get("start")) or ts,
                            tool_calls=[call], response_id=rid, ref=p.ref, extra={"status": status, **_pick(b, "metadata")})
                events.append(act)
                first = span is not None and not any(o.kind == ACTION for o in span.outputs)
                if span is not None:
                    span.outputs.append(act)
                obs = None
                if status in ("completed", "error"):
                    out = st.get("output") if status == "completed" else st.get("error")
                    compacted = _num(_obj(st.get("time")).get("compacted")) is not None
                    obs = Event(f"{p.id}/result", OBSERVATION, f"tool.{status}", None, source="environment", role="tool",
                                timestamp=iso_ms(_obj(st.get("time")).get("end")) or ts,
                                text=out if isinstance(out, str) else ("" if out is None else str(out)), call_id=call_id, cause=p.id,
                                ref=Ref(p.ref.path, f"{p.id}/result", p.ref.line_start, p.ref.line_end),
                                extra={"status": status, "from_part": p.id, **_pick(st, "title", "metadata", "attachments"),
                                       **({"compacted": True} if compacted else {})})
                    if span is not None:
                        span.pending.append(obs)
                    else:
                        events.append(obs)
                else:
                    unanswered.append(call_id)
                    s.diag("opencode.tool-not-run", f"tool call {call_id} ({name}) is {status or 'without a state'}: the run stopped before it answered",
                           WARNING, file=p.ref.path, event_id=p.id, line=p.ref.line_start)
                actions.append((act, obs, span, first))
            elif typ in STATE_PARTS:
                text = None
                if typ == "subtask":
                    text = b.get("description") if isinstance(b.get("description"), str) else b.get("prompt")
                elif typ == "retry":
                    text = _error_text(_obj(b.get("error")))
                ev = Event(p.id, STATE, f"part.{typ}", p.raw, source="agent" if role == "assistant" else role, role=role, timestamp=ts,
                           text=text if isinstance(text, str) else None, ref=p.ref, response_id=rid,
                           extra={"context_management": True} if typ == "compaction" else _pick(b, "hash", "files"))
                events.append(ev)
            else:
                if typ not in KNOWN_PARTS:
                    s.diag("opencode.unknown-part", f"part type {typ!r} is not one opencode 1.18 writes; kept as an event of kind other",
                           INFO, file=p.ref.path, event_id=p.id, line=p.ref.line_start)
                text = None
                if typ == "file":
                    text = " ".join(str(b[k]) for k in ("filename", "mime") if isinstance(b.get(k), str)) or None
                events.append(Event(p.id, OTHER, f"part.{typ or 'unknown'}", p.raw, source=role, role=role, timestamp=ts, text=text, ref=p.ref))
        close(span)
        # usage: the spans' step-finish figures; else the message's own tokens, once
        have_span_usage = any(sp.native is not None for sp in spans)
        if have_span_usage:
            for sp in spans:
                if sp.native is None:
                    continue
                target = sp.outputs[0] if sp.outputs else sp.finish_event
                if target is not None:
                    target.model_usage, target.usage = sp.usage, sp.native
                calls.append({"response_id": sp.response_id, "message_id": m.id, "usage": sp.usage, "event_id": target.id if target else None})
        elif role == "assistant" and m.rec is not None and ("tokens" in mi or "cost" in mi):
            u, native = usage_of(mi.get("tokens"), mi.get("cost"), "message.tokens", model)
            target = spans[0].outputs[0] if spans and spans[0].outputs else message_event
            if u is not None and target is not None:
                target.model_usage, target.usage = u, native
                if spans:
                    spans[0].usage, spans[0].native = u, native
                calls.append({"response_id": spans[0].response_id if spans else m.id, "message_id": m.id, "usage": u, "event_id": target.id})
        elif role == "assistant" and spans:
            for sp in spans:
                calls.append({"response_id": sp.response_id, "message_id": m.id, "usage": None, "event_id": sp.outputs[0].id if sp.outputs else None})
    for r in ns.extras:
        kind = STATE if r.ok and r.table in ("todo", "superseded") else OTHER
        events.append(Event(r.id, kind, r.table or "record", r.raw, source="harness", ref=r.ref))
    # every event came from a file of the session
    by_path: dict[str, list[Any]] = {}
    for e in events:
        if e.ref is not None:
            by_path.setdefault(e.ref.path, []).append(e.id)
    for f in s.files:
        if f.status == "read":
            f.event_ids = by_path.get(f.path, [])
    if steps:
        s.steps = _steps(actions)
    s.metadata["model_calls"] = len(calls)
    s.metadata["actions_without_observation"] = unanswered
    _run_facts(s, ns, calls)
    s.outcome = _outcome(s, ns, unanswered)
    task = next((e for e in events if e.kind == MESSAGE and e.role == "user" and e.text), None)
    if task is not None:
        s.task, s.task_source = task.text, "first user message"
    return s


def _message_role(m: NMessage) -> str | None:
    r = m.info.get("role")
    if isinstance(r, str):
        return r
    if m.rec is None:
        return "assistant"  # run events hold the assistant's parts only
    types = {p.body.get("type") for p in m.parts}
    return "assistant" if types & {"step-start", "step-finish", "tool", "reasoning"} else None


def _error_text(err: dict[str, Any]) -> str:
    data = _obj(err.get("data"))
    msg = data.get("message") if isinstance(data.get("message"), str) else None
    name = err.get("name") if isinstance(err.get("name"), str) else "error"
    return f"{name}: {msg}" if msg else name


def _pick(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: d[k] for k in keys if k in d}


def _steps(actions: list[tuple[Event, Event | None, _Span | None, bool]]) -> list[Step]:
    out: list[Step] = []
    for act, obs, span, first in actions:
        if obs is None:
            continue
        call = act.tool_calls[0]
        thinking = None
        usage = cost = model_usage = None
        if span is not None and first:
            thought = "\n".join(t for t in span.reasoning if t.strip()) or "\n".join(t for t in span.texts if t.strip())
            thinking = thought or None
            model_usage = span.usage
            usage = span.native
            cost = span.usage.cost if span.usage is not None else None
        out.append(Step(
            step_id=len(out) + 1,
            action=render_action(call.name, call.arguments, SINGLE_ARGUMENT),
            tool_type=call.name,
            observation=obs.text or "",
            thinking=thinking,
            action_ref=act.ref,
            observation_ref=obs.ref,
            action_event_id=act.id,
            observation_event_id=obs.id,
            usage=usage,
            cost=cost,
            model_usage=model_usage,
            extra={"call_id": call.call_id, "status": obs.extra.get("status")},
        ))
    return out


def _run_facts(s: Session, ns: NSession, calls: list[dict[str, Any]]) -> None:
    info = ns.info
    run = s.run
    run.harness = NAME
    if isinstance(info.get("version"), str):
        run.harness_version = info["version"]
    agents = [m.info.get("agent") for m in ns.messages if isinstance(m.info.get("agent"), str)]
    run.agent = info.get("agent") if isinstance(info.get("agent"), str) else (agents[0] if agents else None)
    models = [m.info.get("modelID") for m in ns.messages if m.info.get("role") == "assistant" and isinstance(m.info.get("modelID"), str)]
    smodel = _obj(info.get("model")).get("id")
    if not models and isinstance(smodel, str):
        models = [smodel]
    run.models = list(dict.fromkeys(models))
    if isinstance(info.get("directory"), str) and info["directory"]:
        run.workspace = info["directory"]
    t = _obj(info.get("time"))
    run.started_at = iso_ms(t.get("created"))
    run.ended_at = iso_ms(t.get("updated"))
    costs = [c["usage"].cost for c in calls if c["usage"] is not None and c["usage"].cost is not None]
    if _num(info.get("cost")) is not None:
        run.cost_usd = float(info["cost"])
    elif costs:
        run.cost_usd = round(sum(costs), 10)
    md = s.metadata
    for k in ("title", "slug", "projectID", "parentID"):
        if isinstance(info.get(k), str):
            md[k] = info[k]
    # the session's own totals (1.16+) against the per-call figures
    tok = _obj(info.get("tokens"))
    known = [c["usage"] for c in calls if c["usage"] is not None]
    summed = {
        "input": sum((u.input or 0) - (u.cache_read or 0) - (u.cache_write or 0) for u in known),
        "output": sum(u.output or 0 for u in known),
        "reasoning": sum(u.reasoning or 0 for u in known),
        "cache_read": sum(u.cache_read or 0 for u in known),
        "cache_write": sum(u.cache_write or 0 for u in known),
    }
    md["usage_summed"] = summed
    if tok:
        cache = _obj(tok.get("cache"))
        recorded = {"input": tok.get("input"), "output": tok.get("output"), "reasoning": tok.get("reasoning"),
                    "cache_read": cache.get("read"), "cache_write": cache.get("write")}
        md["usage_recorded"] = recorded
        diff = {k: (recorded[k], summed[k]) for k in summed if _num(recorded[k]) is not None and recorded[k] != summed[k]}
        if diff and known:
            s.diag("opencode.usage-mismatch", "the session's token totals differ from the sum of its model calls: "
                   + ", ".join(f"{k} {a} recorded vs {b} summed" for k, (a, b) in diff.items())
                   + " (calls opencode does not store as messages, such as title generation, or a store written mid-run)",
                   INFO, file=ns.rec.ref.path if ns.rec is not None else ns.path)


def _outcome(s: Session, ns: NSession, unanswered: list[str]) -> Outcome:
    msgs = [m for m in ns.messages if m.rec is not None or m.parts]
    if not msgs:
        return Outcome(False, signal="no messages recorded")
    last = msgs[-1]
    role = _message_role(last)
    ev = [{"event_id": last.id, "what": "last message"}]
    if role != "assistant":
        return Outcome(False, status=None, signal="the last message is the user's: no reply was recorded", evidence=ev)
    mi = last.info
    err = _obj(mi.get("error"))
    finish = mi.get("finish") if isinstance(mi.get("finish"), str) else None
    if finish is None:  # run events / exports without message info: the last span's step-finish reason
        for p in reversed(last.parts):
            if p.body.get("type") == "step-finish" and isinstance(p.body.get("reason"), str):
                finish = p.body["reason"]
                break
    if err:
        name = err.get("name")
        text = _error_text(err)
        if name == "MessageAbortedError":
            return Outcome(False, human_abort=True, status=name, signal=text, evidence=ev)
        if name == "MessageOutputLengthError":
            return Outcome(False, budget_exhausted=True, status=name, signal=text, evidence=ev)
        return Outcome(False, external_error=text, status=str(name or "error"), signal=text, evidence=ev)
    if unanswered:
        return Outcome(False, status=finish, signal=f"tool call(s) {', '.join(unanswered)} never answered: the run was stopped mid-call",
                       evidence=ev)
    if finish == "length":
        return Outcome(False, budget_exhausted=True, status=finish, signal="the last model call hit its output token limit", evidence=ev)
    if finish in ANSWER_FINISH:
        return Outcome(True, status=finish, signal=f"the last assistant message finished with {finish!r}", claimed_success=True, evidence=ev)
    if finish is None and not any(p.body.get("type") == "tool" for p in last.parts) and any(p.body.get("type") == "text" for p in last.parts):
        return Outcome(True, status=None, signal="the last assistant message is a final answer (no finish reason recorded)",
                       claimed_success=True, evidence=ev)
    return Outcome(False, status=finish, signal=f"the last assistant message finished with {finish!r}: the run stopped before its answer",
                   evidence=ev)


def link_child(parent: Session, child: Session) -> None:
    """Attach ``child`` (``parentID`` = the parent) to the step that spawned it."""
    cid = child.id
    best: tuple[Step, str, str] | None = None
    for st in parent.steps:
        act = parent.event_by_id(st.action_event_id)
        call = act.tool_calls[0] if act is not None and act.tool_calls else None
        if call is None:
            continue
        md = _obj(_obj(act.extra).get("metadata"))
        obs = parent.event_by_id(st.observation_event_id)
        omd = _obj(obs.extra.get("metadata")) if obs is not None else {}
        args = call.input or {}
        if omd.get("sessionId") == cid or md.get("sessionId") == cid:
            best = (st, "task-metadata", f"the {call.name} call's result metadata names session {cid}")
            break
        if args.get("task_id") == cid:
            best = (st, "task-id", f"the {call.name} call resumes session {cid} (task_id)")
            break
        if obs is not None and isinstance(obs.text, str) and f"task_id: {cid}" in obs.text:
            best = best or (st, "task-output", f"the {call.name} call's output names task_id {cid}")
    if best is None:
        # the task call running when the child was created
        born = child.run.started_at
        for st in parent.steps:
            act = parent.event_by_id(st.action_event_id)
            obs = parent.event_by_id(st.observation_event_id)
            if act is None or obs is None or not act.tool_calls or act.tool_calls[0].op != SPAWN_OP:
                continue
            if born and act.timestamp and obs.timestamp and act.timestamp <= born <= obs.timestamp:
                best = (st, "timestamp", f"session {cid} was created while the {act.tool_calls[0].name} call ran")
                break
    parent.children.append(child)
    if best is None:
        parent.diag("opencode.child-unlinked", f"sub-session {cid} names this session as its parent, but no task call of it could be tied to it",
                    INFO, file=parent.source_path, event_id=cid)
        return
    st, method, detail = best
    st.children.append(child)
    child.spawned_by = SpawnLink(cid, st.step_id, st.action_event_id, method, detail)
