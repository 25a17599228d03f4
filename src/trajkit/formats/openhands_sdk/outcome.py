"""The SDK conversation's run facts (``Session.run``) and its own end signal
(``Session.outcome``): ``execution_status`` plus the conversation error events
after the last user message on the active branch (code first, then the
classification, then the detail text). See ``formats/certification.md`` §6.1.
"""

from __future__ import annotations

from typing import Any

from ...model import ACTION, MESSAGE, Event, Outcome, Session
from ...vocab.openhands import BLOCKED_CAUSES, BUDGET_CAUSES, BUDGET_CODES, BUDGET_KINDS, BUDGET_TEXT
from ...vocab.trials import find_verifier_dir


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def run_facts(session: Session, name: str, root: Any = None, probe: Any = None) -> None:
    """Fill ``session.run`` from the facts the reader put in ``metadata``.
    ``root``: the session's folder as a Path (``source_path`` otherwise);
    ``probe``: answers the verifier look-up from listings the reader holds
    (see :func:`~trajkit.vocab.trials.find_verifier_dir`)."""
    md = session.metadata
    run = session.run
    run.harness = name
    agent = md.get("agent_kind")
    run.agent = agent if isinstance(agent, str) else None
    if isinstance(md.get("model"), str):
        run.models = [md["model"]]
    effort = md.get("reasoning_effort")
    run.reasoning_effort = effort if isinstance(effort, str) else None
    wd = md.get("working_dir")
    run.workspace = wd if isinstance(wd, str) else None
    cost = md.get("accumulated_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        run.cost_usd = float(cost)
    for attr, key in (("started_at", "created_at"), ("ended_at", "updated_at")):
        v = md.get(key)
        if isinstance(v, str):
            setattr(run, attr, v)
    run.verifier_dir = find_verifier_dir(root if root is not None else session.source_path, probe)


def _find(md: dict[str, Any], key: str, depth: int = 3) -> Any:
    """The first value under ``key`` in ``md`` or its nested dicts (breadth first)."""
    level = [md]
    for _ in range(depth):
        nxt = []
        for m in level:
            if key in m and m[key] is not None:
                return m[key]
            nxt.extend(v for v in m.values() if isinstance(v, dict))
        level = nxt
    return None


def _active_ids(session: Session) -> set[Any] | None:
    ab = (session.metadata or {}).get("active_branch")
    if isinstance(ab, dict):
        ab = ab.get("ids") or ab.get("event_ids")
    if isinstance(ab, (list, tuple, set)) and ab:
        return set(ab)
    return None


def _status(session: Session) -> tuple[str | None, str]:
    md = session.metadata or {}
    st = md.get("execution_status")
    if isinstance(st, str):
        return st, "metadata.execution_status"
    for key in ("base_state", "state", "conversation_state"):
        v = _d(md.get(key)).get("execution_status")
        if isinstance(v, str):
            return v, f"metadata.{key}.execution_status"
    v = _find(md, "execution_status")
    if isinstance(v, str):
        return v, "metadata (nested) execution_status"
    # agent-server logs: the last ConversationStateUpdateEvent for execution_status
    for e in reversed(session.events):
        raw = _d(e.raw)
        if raw.get("kind") == "ConversationStateUpdateEvent":
            if raw.get("key") in ("execution_status", "agent_status") and isinstance(raw.get("value"), str):  # agent_status: SDK <= 1.0
                return raw["value"], f"ConversationStateUpdateEvent {e.id}"
            full = _d(raw.get("value")) if raw.get("key") == "full_state" else {}
            for k in ("execution_status", "agent_status"):
                if isinstance(full.get(k), str):
                    return full[k], f"ConversationStateUpdateEvent {e.id}"
    return None, "no execution_status recorded"


def _classify_error(raw: dict[str, Any]) -> tuple[str, str]:
    """(``budget`` | ``blocked``, text) for one conversation error event."""
    code = str(raw.get("code") or "")
    detail = str(raw.get("detail") or raw.get("error") or "")
    kind = raw.get("kind")
    kind = kind if isinstance(kind, str) else None
    cls = _d(raw.get("classification"))
    text = f"{code}: {detail}" if code else (detail or str(kind))
    if kind in BUDGET_KINDS or code in BUDGET_CODES:
        return "budget", text
    cause = str(cls.get("cause") or "").lower()
    if cause in BUDGET_CAUSES:
        return "budget", text
    if cause in BLOCKED_CAUSES:
        return "blocked", text
    ckind = str(cls.get("kind") or "").lower()
    if ckind and ckind not in ("quota", "agent_action", "unknown"):
        return "blocked", text
    if BUDGET_TEXT.search(detail) and ckind in ("", "agent_action", "quota", "unknown"):
        return "budget", text
    return "blocked", text


def _errors_after_last_user(session: Session) -> list[Event]:
    active = _active_ids(session)
    events = session.events
    last_user = -1
    for i, e in enumerate(events):
        # _is_user_message(e), inline: one pass over every event of every read
        if e.kind == MESSAGE and (e.source == "user" or _d(e.raw).get("source") == "user") and (active is None or e.id in active):
            last_user = i
    out = []
    for e in events[last_user + 1 :]:
        kind = e.type  # the native kind, as the reader read it
        if kind in ("ConversationErrorEvent", "ServerErrorEvent") or kind in BUDGET_KINDS:
            raw = _d(e.raw)
            # a legacy-tail error hung off an abandoned branch is not this run's end
            parent = raw.get("parent_id", e.parent_id)
            if not isinstance(parent, (str, int)):
                parent = e.parent_id  # a parent written as anything else names no event
            if active is not None and parent not in (None, "__root__") and parent not in active:
                continue
            out.append(e)
    return out


def _finish(session: Session) -> Event | None:
    for e in reversed(session.events):
        if e.kind == ACTION:
            raw = _d(e.raw)
            if _d(raw.get("action")).get("kind") == "FinishAction" or raw.get("tool_name") == "finish":
                return e
    return None


def outcome(session: Session) -> Outcome:
    """The conversation's own end signal."""
    status, where = _status(session)
    errors = _errors_after_last_user(session)
    ev: list[dict[str, Any]] = [{"source": where, "status": status}]
    finish = _finish(session)
    if status is None:
        if errors:
            status = "error"
        elif finish is not None:
            return Outcome(True, status=None, signal="finish action (no execution_status recorded)", claimed_success=True,
                           evidence=ev + [{"event_id": finish.id, "what": "FinishAction"}])
        else:
            return Outcome(False, status=None, signal="no execution_status and no finish action", evidence=ev)
    st = status.lower()
    if st == "finished":
        return Outcome(True, status=status, signal="execution_status finished", claimed_success=True,
                       evidence=ev + ([{"event_id": finish.id, "what": "FinishAction"}] if finish else []))
    if st == "error":
        if not errors:
            return Outcome(False, external_error="unclassified engine error (no readable error event after the last user message)",
                           status=status, signal="execution_status error", evidence=ev)
        verdicts = [(_classify_error(_d(e.raw)), e) for e in errors]
        # a budget stop anywhere in this run's tail decides over a later follow-on error
        budget = [(t, e) for (k, t), e in verdicts if k == "budget"]
        if budget:
            t, e = budget[0]
            return Outcome(False, budget_exhausted=True, status=status, signal=t, evidence=ev + [{"event_id": e.id, "what": t}])
        (k, t), e = verdicts[-1]
        return Outcome(False, external_error=t, status=status, signal=t, evidence=ev + [{"event_id": e.id, "what": t}])
    if st == "stuck":
        return Outcome(False, budget_exhausted=True, status=status, signal="stuck detector stopped the run", evidence=ev)
    if st == "paused":
        return Outcome(False, human_abort=True, status=status, signal="conversation paused by the operator", evidence=ev)
    if st == "waiting_for_confirmation":
        return Outcome(False, status=status, signal="waiting for the operator's confirmation", approval_wait=True, evidence=ev)
    return Outcome(False, status=status, signal=f"execution_status {status}: the engine did not reach its end", evidence=ev)
