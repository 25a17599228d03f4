"""ATIF trajectories as input (format name ``atif``): Harbor's Agent
Trajectory Interchange Format, ``ATIF-v1.0`` to ``ATIF-v1.8``, as Harbor
trials (``agent/trajectory.json``), other converters and trajkit's own
exports write it (``shared/formats/atif.md`` §8).

Read leniently, validated separately: the document is read whatever
Harbor's strict models would say of it, and every rule it breaks is a
located diagnostic (``atif.*``, with the step id). Nothing is dropped:

- ``agent`` becomes the session's system event (its tool definitions the
  tools the model was given; name, version and model the run facts);
- each step one event: ``user`` and ``system`` steps messages of that role,
  an ``agent`` step one model call (an action when it has tool calls, else
  an assistant message) with its reasoning, its metrics as per-call
  :class:`~trajkit.model.Usage` and a response id of its own
  (``atif-step-<step_id>``, so the exporters keep one agent step per ATIF
  agent step);
- each observation result one observation (paired with its call by
  ``source_call_id``; a result naming no call is an event of kind
  ``other``, kept);
- embedded ``subagent_trajectories`` (v1.7) and ``trajectory_path`` refs
  that resolve next to the file become sub-sessions, linked to the call
  whose result names them;
- every step is the raw record of its event, so an export carries it
  verbatim (``trajkit:native``), unknown members included; the root's
  members other than ``steps`` and ``agent`` ride in
  ``Session.metadata["atif"]``.

Steps (``atif.md`` §8.4): one per tool call answered by a result that names
it (:func:`~trajkit.reading.pairing.pair_by_call_id`); agent steps that make
no call are model calls, not steps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING
from ...model import (
    ACTION,
    MESSAGE,
    OBSERVATION,
    OTHER,
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
from .names import ATIF_TOOLS, NAME

#: The versions this reader knows (``atif.md`` §3).
KNOWN_VERSIONS = tuple(f"ATIF-v1.{n}" for n in range(9))
_VERSION_RE = re.compile(r"^ATIF-v(\d+)\.(\d+)$")
#: ATIF members per object (v1.8), to report the ones Harbor would reject.
ROOT_MEMBERS = frozenset({"schema_version", "session_id", "trajectory_id", "agent", "steps", "notes", "final_metrics",
                          "continued_trajectory_ref", "extra", "subagent_trajectories"})
AGENT_MEMBERS = frozenset({"name", "version", "model_name", "tool_definitions", "extra"})
STEP_MEMBERS = frozenset({"step_id", "timestamp", "source", "model_name", "reasoning_effort", "message", "reasoning_content",
                          "tool_calls", "observation", "metrics", "is_copied_context", "llm_call_count", "extra"})
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
CALL_MEMBERS = frozenset({"tool_call_id", "function_name", "arguments", "extra"})
RESULT_MEMBERS = frozenset({"source_call_id", "content", "subagent_trajectory_ref", "extra"})
METRICS_MEMBERS = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd", "prompt_token_ids",
                             "completion_token_ids", "logprobs", "extra"})


# ---------------------------------------------------------------- detection





# ---------------------------------------------------------------- helpers

def content_text(content: Any) -> str | None:
    """The text of a message or result: the string, or the text parts of a
    ContentPart list joined by newlines (media parts have no text)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return str(content)


def _media(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") in ("image", "audio") and isinstance(p.get("source"), dict)]


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _unknown(obj: dict[str, Any], known: frozenset[str]) -> list[str]:
    return sorted(k for k in obj if k not in known)


class _Reader:
    def __init__(self, b: SessionBuilder, path: Path, doc_label: str = ""):
        self.b = b
        self.path = path
        self.file = str(path)
        self.label = doc_label  # "" for the root document, "subagent <id>: " inside

    def diag(self, session: Session, code: str, message: str, severity: str = WARNING, **where: Any) -> None:
        session.diag(code, self.label + message, severity, file=self.file, **where)

    # ------------------------------------------------------------ one document

    def document(self, doc: dict[str, Any], session: Session, depth: int = 0) -> None:
        file = self.file
        ver = doc.get("schema_version")
        m = _VERSION_RE.match(ver) if isinstance(ver, str) else None
        if m is None:
            self.diag(session, "atif.schema-version", f"schema_version {ver!r} is not ATIF-v<major>.<minor>; read as the latest known", WARNING)
        elif ver not in KNOWN_VERSIONS:
            self.diag(session, "atif.newer-version", f"{ver} is newer than this reader knows (up to ATIF-v1.8); "
                      "known members are read, the rest kept", WARNING)
        for k in _unknown(doc, ROOT_MEMBERS):
            self.diag(session, "atif.unknown-member", f"root member {k!r} is not ATIF (Harbor rejects it); kept", INFO)
        session.id = str(doc.get("session_id") or doc.get("trajectory_id") or session.id or Path(file).stem)
        meta = {k: v for k, v in doc.items() if k not in ("steps", "agent", "subagent_trajectories")}
        session.metadata["atif"] = meta
        run = session.run
        agent = doc.get("agent")
        if not isinstance(agent, dict):
            self.diag(session, "atif.missing-member", "no agent object (required)", ERROR)
            agent = {}
        for k in ("name", "version"):
            if not isinstance(agent.get(k), str):
                self.diag(session, "atif.missing-member", f"agent.{k} is missing or not a string (required)", WARNING)
        for k in _unknown(agent, AGENT_MEMBERS):
            self.diag(session, "atif.unknown-member", f"agent member {k!r} is not ATIF; kept", INFO)
        run.harness = agent.get("name") if isinstance(agent.get("name"), str) else None
        run.harness_version = agent.get("version") if isinstance(agent.get("version"), str) else None
        model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
        tools = agent.get("tool_definitions") if isinstance(agent.get("tool_definitions"), list) else None
        sysev = Event("agent", SYSTEM, "agent", agent, source="agent", role="system", tools=tools,
                      ref=Ref(file, "agent"))
        session.events.append(sysev)
        steps = doc.get("steps")
        if not isinstance(steps, list):
            self.diag(session, "atif.missing-member", "no steps list (required)", ERROR)
            steps = []
        elif not steps:
            self.diag(session, "atif.empty-steps", "steps is empty (ATIF needs at least one)", WARNING)
        models: list[str] = [model] if model else []
        calls: dict[str, Event] = {}  # tool_call_id -> the action event making it
        self.refs: list[tuple[dict[str, Any], Event, str | None, int]] = []  # (ref, action event, call id, step id)
        for i, st in enumerate(steps):
            self.step(st, i, session, calls, model, models)
        run.models = list(dict.fromkeys(models))
        stamps = [e.timestamp for e in session.events if e.timestamp]
        if stamps:
            run.started_at, run.ended_at = stamps[0], stamps[-1]
        first_user = next((e for e in session.events if e.kind == MESSAGE and e.role == "user"), None)
        if first_user is not None and first_user.text:
            session.task, session.task_source = first_user.text, "first user step"
        fm = doc.get("final_metrics")
        if isinstance(fm, dict):
            run.cost_usd = _num(fm.get("total_cost_usd"))
            ts = _int(fm.get("total_steps"))
            if ts is not None and ts != len(steps) and not doc.get("notes"):
                self.diag(session, "atif.total-steps", f"final_metrics.total_steps is {ts} for {len(steps)} steps and no notes explain it", INFO)
        last = next((e for e in reversed(session.events) if e.kind in (MESSAGE, ACTION) and e.source != "user"), None)
        ended = last is not None and last.kind == MESSAGE and last.role == "assistant" and session.events[-1] is last
        session.outcome = Outcome(
            reached_end=ended,
            status=None,
            signal="ATIF records no end status; the trajectory ends with an agent reply that makes no tool call"
            if ended else "ATIF records no end status; the trajectory does not end with an agent reply",
            evidence=[{"event_id": last.id}] if last is not None else [],
        )
        session.steps = build_steps(session)
        self.subagents(doc, session, depth)

    def step(self, st: Any, i: int, session: Session, calls: dict[str, Event], model: str | None, models: list[str]) -> None:
        file = self.file
        if not isinstance(st, dict):
            eid = f"step-index-{i}"
            self.diag(session, "atif.bad-step", f"steps[{i}] is not an object; kept as an event of kind other", ERROR, event_id=eid)
            session.events.append(Event(eid, OTHER, "atif.step", st, ref=Ref(file, eid)))
            return
        sid = st.get("step_id")
        eid = f"step-{sid}" if _int(sid) is not None else f"step-index-{i}"
        if any(e.id == eid for e in session.events):
            eid = f"{eid}-index-{i}"
        if _int(sid) != i + 1:
            self.diag(session, "atif.step-id", f"steps[{i}] has step_id {sid!r}; ATIF numbers steps 1..n in order", WARNING, event_id=eid)
        for k in _unknown(st, STEP_MEMBERS):
            self.diag(session, "atif.unknown-member", f"step member {k!r} is not ATIF; kept", INFO, event_id=eid)
        source = st.get("source")
        if "message" not in st:
            self.diag(session, "atif.missing-member", "the step has no message (required)", WARNING, event_id=eid)
        ts = st.get("timestamp") if isinstance(st.get("timestamp"), str) else None
        text = content_text(st.get("message"))
        ref = Ref(file, eid)
        extra: dict[str, Any] = {"step_id": sid}
        media = _media(st.get("message"))
        if media:
            extra["media"] = media
            self.check_media(session, media, eid)
        if st.get("is_copied_context") is True:
            extra["is_copied_context"] = True
        if source != "agent":
            bad = [k for k in AGENT_ONLY if k in st]
            if source == "user" and "observation" in st:
                bad.append("observation")
            if bad:
                self.diag(session, "atif.agent-only-member", f"a {source} step has agent-only member(s) {', '.join(bad)}; kept", WARNING, event_id=eid)
        if source in ("user", "system"):
            ev = Event(eid, MESSAGE, f"atif.{source}", st, source=source, role=source, timestamp=ts, text=text, ref=ref, extra=extra)
            session.events.append(ev)
            self.results(st, session, eid, ev, {}, ts)
            return
        if source != "agent":
            self.diag(session, "atif.bad-source", f"step source {source!r} is not system, user or agent; kept as an event of kind other", ERROR, event_id=eid)
            session.events.append(Event(eid, OTHER, "atif.step", st, source=str(source), timestamp=ts, text=text, ref=ref, extra=extra))
            return
        step_model = st.get("model_name") if isinstance(st.get("model_name"), str) else None
        if step_model:
            models.append(step_model)
            extra["model"] = step_model
        reasoning = st.get("reasoning_content") if isinstance(st.get("reasoning_content"), str) else None
        tcs = []
        own: dict[str, Event] = {}
        raw_calls = st.get("tool_calls")
        if raw_calls is not None and not isinstance(raw_calls, list):
            self.diag(session, "atif.bad-tool-calls", "tool_calls is not a list; kept", ERROR, event_id=eid)
            raw_calls = []
        for j, c in enumerate(raw_calls or []):
            if not isinstance(c, dict):
                self.diag(session, "atif.bad-tool-calls", f"tool_calls[{j}] is not an object; kept in the step", ERROR, event_id=eid)
                continue
            for k in _unknown(c, CALL_MEMBERS):
                self.diag(session, "atif.unknown-member", f"tool call member {k!r} is not ATIF; kept", INFO, event_id=eid)
            cid = c.get("tool_call_id") if isinstance(c.get("tool_call_id"), str) else None
            name = c.get("function_name") if isinstance(c.get("function_name"), str) else None
            if cid is None or name is None:
                self.diag(session, "atif.missing-member", f"tool_calls[{j}] lacks tool_call_id or function_name (required)", WARNING, event_id=eid)
            args = c.get("arguments")
            if not isinstance(args, dict):
                self.diag(session, "atif.arguments-not-object",
                          f"tool_calls[{j}].arguments is {type(args).__name__}, not an object (Harbor rejects it); "
                          "read as {\"_arguments\": value}", WARNING, event_id=eid)
                args = {"_arguments": args}
            if cid is not None and cid in calls:
                self.diag(session, "atif.duplicate-call-id", f"tool_call_id {cid!r} is used by an earlier call too", WARNING, event_id=eid)
            tcs.append(ATIF_TOOLS.call(name or "tool", args, cid))
        kind = ACTION if tcs else MESSAGE
        ev = Event(eid, kind, "atif.agent", st, source="agent", role="assistant", timestamp=ts, text=text,
                   tool_calls=tcs, response_id=f"atif-step-{sid}", reasoning=reasoning, ref=ref, extra=extra)
        metrics = st.get("metrics")
        if metrics is not None and not isinstance(metrics, dict):
            self.diag(session, "atif.bad-metrics", "metrics is not an object; kept", WARNING, event_id=eid)
        elif isinstance(metrics, dict):
            for k in _unknown(metrics, METRICS_MEMBERS):
                self.diag(session, "atif.unknown-member", f"metrics member {k!r} is not ATIF; kept", INFO, event_id=eid)
            mx = metrics.get("extra") if isinstance(metrics.get("extra"), dict) else {}
            u = Usage(
                input=_int(metrics.get("prompt_tokens")),
                output=_int(metrics.get("completion_tokens")),
                cache_read=_int(metrics.get("cached_tokens")),
                cache_write=_int(mx.get("cache_creation_input_tokens")),
                reasoning=_int(mx.get("reasoning_tokens")),
                cost=_num(metrics.get("cost_usd")),
                source="atif metrics",
                model=step_model or model,
            )
            if u.input is not None and u.cache_read is not None and u.cache_read > u.input:
                self.diag(session, "atif.cached-over-prompt",
                          f"cached_tokens {u.cache_read} exceed prompt_tokens {u.input} (ATIF counts cached tokens inside prompt_tokens)",
                          INFO, event_id=eid)
            ev.usage = metrics
            ev.model_usage = u
            for k in ("prompt_token_ids", "completion_token_ids", "logprobs"):
                if isinstance(metrics.get(k), list):
                    ev.extra[k] = metrics[k]
        if st.get("llm_call_count") == 0 and ("metrics" in st or "reasoning_content" in st):
            self.diag(session, "atif.llm-call-count", "llm_call_count is 0 but the step has metrics or reasoning", WARNING, event_id=eid)
        session.events.append(ev)
        for tc in tcs:
            if tc.call_id:
                calls.setdefault(tc.call_id, ev)
                own[tc.call_id] = ev
        self.results(st, session, eid, ev, own, ts, calls)

    def results(self, st: dict[str, Any], session: Session, eid: str, ev: Event, own: dict[str, Event], ts: str | None,
                calls: dict[str, Event] | None = None) -> None:
        obs = st.get("observation")
        if obs is None:
            return
        if not isinstance(obs, dict) or not isinstance(obs.get("results"), list):
            self.diag(session, "atif.bad-observation", "observation is not an object with a results list; kept", ERROR, event_id=eid)
            return
        for j, r in enumerate(obs["results"]):
            rid = f"{eid}/result-{j}"
            rref = Ref(self.file, rid)
            if not isinstance(r, dict):
                self.diag(session, "atif.bad-observation", f"observation.results[{j}] is not an object; kept", ERROR, event_id=rid)
                session.events.append(Event(rid, OTHER, "atif.result", r, ref=rref))
                continue
            for k in _unknown(r, RESULT_MEMBERS):
                self.diag(session, "atif.unknown-member", f"result member {k!r} is not ATIF; kept", INFO, event_id=rid)
            text = content_text(r.get("content"))
            extra: dict[str, Any] = {}
            media = _media(r.get("content"))
            if media:
                extra["media"] = media
                self.check_media(session, media, rid)
            cid = r.get("source_call_id") if isinstance(r.get("source_call_id"), str) else None
            action = own.get(cid) if cid else None
            if cid and action is None:
                elsewhere = (calls or {}).get(cid)
                if elsewhere is not None:
                    self.diag(session, "atif.result-call-elsewhere",
                              f"result source_call_id {cid!r} names a call of another step (ATIF wants the same step); paired with it",
                              WARNING, event_id=rid)
                    action = elsewhere
                else:
                    self.diag(session, "atif.result-unknown-call", f"result source_call_id {cid!r} names no tool call", WARNING, event_id=rid)
            if cid and action is not None:
                oev = Event(rid, OBSERVATION, "atif.result", r, source="environment", role="tool", timestamp=ts, text=text or "",
                            call_id=cid, cause=action.id, ref=rref, extra=extra)
            else:
                # A result naming no call (a batch output, an environment note): kept, not a step.
                oev = Event(rid, OTHER, "atif.result", r, source="environment", timestamp=ts, text=text, ref=rref, extra=extra)
            session.events.append(oev)
            refs = r.get("subagent_trajectory_ref")
            if refs is not None:
                if not isinstance(refs, list):
                    refs = [refs]
                for ref in refs:
                    if isinstance(ref, dict):
                        self.refs.append((ref, action if action is not None else ev, cid, _int(st.get("step_id")) or 0))
                    else:
                        self.diag(session, "atif.bad-subagent-ref", "a subagent_trajectory_ref entry is not an object", WARNING, event_id=rid)

    def check_media(self, session: Session, media: list[dict[str, Any]], eid: str) -> None:
        base = self.path.parent
        for p in media:
            path = p["source"].get("path")
            if not isinstance(path, str) or re.match(r"^[a-z]+://", path):
                continue
            if not fs.exists(base / path):
                self.diag(session, "atif.media-missing", f"media file {path} (relative to the trajectory) is not there", INFO, event_id=eid)

    # ------------------------------------------------------------ sub-agents

    def subagents(self, doc: dict[str, Any], session: Session, depth: int) -> None:
        embedded = doc.get("subagent_trajectories")
        by_id: dict[str, tuple[int, Any]] = {}
        if embedded is not None and not isinstance(embedded, list):
            self.diag(session, "atif.bad-subagent", "subagent_trajectories is not a list; kept", ERROR)
            embedded = []
        for n, sub in enumerate(embedded or []):
            tid = sub.get("trajectory_id") if isinstance(sub, dict) else None
            if not isinstance(tid, str):
                self.diag(session, "atif.bad-subagent", f"subagent_trajectories[{n}] has no trajectory_id (required when embedded)", WARNING)
                tid = f"#{n}"
            if tid in by_id:
                self.diag(session, "atif.duplicate-trajectory-id", f"two embedded trajectories have trajectory_id {tid!r}", WARNING)
                tid = f"{tid}#{n}"
            by_id[tid] = (n, sub)
        linked: set[str] = set()
        children: dict[str, Session] = {}

        def child_of(tid: str) -> Session:
            if tid not in children:
                n, sub = by_id[tid]
                c = Session(format=NAME, source_path=f"{self.file}#subagent_trajectories[{n}]")
                c.id = tid
                if isinstance(sub, dict):
                    _Reader(self.b, self.path, f"{self.label}subagent {tid}: ").document(sub, c, depth + 1)
                    c.id = str(sub.get("trajectory_id") or tid)
                else:
                    c.diag("atif.bad-subagent", f"subagent_trajectories[{n}] is not an object", ERROR, file=self.file)
                children[tid] = c
            return children[tid]

        for ref, action, cid, step_id in self.refs:
            tid = ref.get("trajectory_id") if isinstance(ref.get("trajectory_id"), str) else None
            tpath = ref.get("trajectory_path") if isinstance(ref.get("trajectory_path"), str) else None
            child: Session | None = None
            method = ""
            if tid is not None and tid in by_id:
                child, method = child_of(tid), "atif subagent_trajectory_ref.trajectory_id (embedded)"
                linked.add(tid)
            elif tpath is not None:
                p = (self.path.parent / tpath)
                if depth < 8 and fs.isfile(p):
                    child = read_file(p, self.b, depth + 1)
                    method = "atif subagent_trajectory_ref.trajectory_path"
                else:
                    self.diag(session, "atif.subagent-missing", f"subagent trajectory {tpath} (relative to the trajectory) is not there", INFO,
                              event_id=action.id)
            else:
                self.diag(session, "atif.subagent-missing", f"subagent_trajectory_ref names trajectory_id {tid!r}, which is not embedded", INFO,
                          event_id=action.id)
            if child is not None:
                st = next((x for x in session.steps if x.action_event_id == action.id and x.extra.get("call_id") == cid), None)
                child.spawned_by = SpawnLink(child.id, st.step_id if st is not None else 0, action.id, method,
                                             f"the result of call {cid} names it" if cid else "")
                if st is not None and child not in st.children:
                    st.children.append(child)
                if child not in session.children:
                    session.children.append(child)
        for tid in by_id:
            if tid not in linked:
                c = child_of(tid)
                self.diag(session, "atif.subagent-unlinked",
                          f"embedded trajectory {tid!r} is named by no subagent_trajectory_ref; kept as a sub-session spawned by no call", INFO)
                session.children.append(c)


def read_file(path: Path, b: SessionBuilder, depth: int = 0) -> Session:
    """A referenced trajectory file as its own session (its file accounted by ``b``)."""
    s = Session(format=NAME, source_path=str(path))
    value, sf = b.read_json(path, "subagent")
    if value is MISSING:
        s.diag("atif.subagent-missing", f"subagent trajectory {path} could not be read", WARNING, file=str(path))
        return s
    if not isinstance(value, dict):
        s.diag("atif.not-a-trajectory", "the file is not a JSON object", ERROR, file=str(path))
        return s
    _Reader(b, path).document(value, s, depth)
    sf.event_ids = [e.id for e in s.events]
    return s


def build_steps(session: Session) -> list:
    """One step per tool call a result answers, in call order (``atif.md`` §8.4)."""
    return pair_by_call_id(session)


def read(root: Path, options: ReadOptions) -> Session:
    b = SessionBuilder(NAME, root, options, view="trajectory")
    session = b.session
    value, sf = b.read_json(root, "trajectory")
    if value is MISSING:
        return b.finish()
    if not isinstance(value, dict):
        b.diag("atif.not-a-trajectory", f"the file holds a JSON {type(value).__name__}, not an ATIF object", ERROR, file=root)
        return b.finish()
    _Reader(b, root).document(value, session)
    sf.event_ids = [e.id for e in session.events]
    if not options.steps:
        for s in session.walk():
            s.steps = []
    else:
        answered = {e.call_id for e in session.events if e.kind == OBSERVATION}
        session.metadata["actions_without_observation"] = [
            tc.call_id for e in session.events if e.kind == ACTION for tc in e.tool_calls if tc.call_id not in answered
        ]
    return b.finish()


__all__ = ["read", "content_text", "KNOWN_VERSIONS"]
