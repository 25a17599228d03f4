"""The engine outcome per harness: the harness's own end signal projected
onto ``reached_end`` / ``external_error`` / ``budget_exhausted`` /
``human_abort`` (at most one of blocked and budget).

* OpenHands SDK (V1): ``execution_status`` plus the conversation error events
  after the last user message on the active branch (code first, then the
  classification, then the detail text).
* OpenHands V0 trials: the finish action, the last ``agent_state_changed``
  state and its reason, error observations, and the trial's terminal-bench
  ``results.json`` (``failure_mode``) or harbor ``result.json``
  (``exception_info``).
* Anything else: a finish / final answer as the end, no budget or block signal.

See ``formats/certification.md`` §6.1-6.3 for the mapping tables.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import ACTION, MESSAGE, OBSERVATION, Event, Session
from .states import EngineOutcome

BUDGET_CODES = {"MaxIterationsReached", "MaxBudgetReached", "ConversationIterationLimit", "IterationLimitReached",
                "LLMContextWindowExceedError", "ContextWindowExceeded", "MaxTokensReached"}
BUDGET_KINDS = {"ConversationIterationLimitEvent", "IterationLimitEvent", "MaxIterationsReachedEvent"}
BUDGET_CAUSES = {"run_limit", "quota", "budget", "iteration_limit"}
BLOCKED_CAUSES = {"authentication", "configuration", "provider_unavailable", "network", "rate_limit", "auth", "config", "transient", "internal", "cancelled"}
_BUDGET_TEXT = re.compile(r"maximum iteration|max(?:imum)?[ _-]?iterations|maximum budget|budget (?:has been )?(?:exceeded|reached)|iteration limit|context (?:window|length) (?:exceeded|limit)", re.I)

TB_BUDGET = {"agent_timeout", "context_length_exceeded", "output_length_exceeded"}
TB_BLOCKED = {"agent_installation_failed", "test_timeout", "parse_error", "unknown_agent_error", "fatal_llm_parse_error"}
TB_NONE = {"unset", "none", "unknown", "", None}

V0_BLOCKED_REASONS = ("STATUS$ERROR_LLM_AUTHENTICATION", "STATUS$ERROR_LLM_SERVICE_UNAVAILABLE", "STATUS$ERROR_LLM_INTERNAL_SERVER_ERROR",
                      "STATUS$ERROR_LLM_CONTENT_POLICY_VIOLATION", "STATUS$ERROR_RUNTIME_DISCONNECTED", "STATUS$GIT_PROVIDER_AUTHENTICATION_ERROR",
                      "STATUS$ERROR_MEMORY", "CHAT_INTERFACE$AGENT_RATE_LIMITED_STOPPED_MESSAGE", "STATUS$ERROR_LLM_OUT_OF_CREDITS")


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


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


def _find_dict_with(md: dict[str, Any], keys: tuple[str, ...], depth: int = 3) -> dict[str, Any] | None:
    level = [md]
    for _ in range(depth):
        nxt = []
        for m in level:
            if any(k in m for k in keys):
                return m
            nxt.extend(v for v in m.values() if isinstance(v, dict))
        level = nxt
    return None


def engine_outcome(session: Session) -> EngineOutcome:
    """The engine outcome of ``session``, chosen by its format / native shape."""
    fmt = (session.format or "").lower()
    raw0 = next((e.raw for e in session.events if isinstance(e.raw, dict)), {})
    if "sdk" in fmt or "v1" in fmt or (isinstance(raw0, dict) and "kind" in raw0 and "action" not in raw0) or _find(session.metadata or {}, "execution_status") is not None:
        return _openhands_v1(session)
    if "v0" in fmt or (isinstance(raw0, dict) and ("action" in raw0 or "observation" in raw0)) or _trial_results(session):
        return _openhands_v0(session)
    return _generic(session)


# ---------------------------------------------------------------- OpenHands SDK (V1)

def _active_ids(session: Session) -> set[Any] | None:
    ab = (session.metadata or {}).get("active_branch")
    if isinstance(ab, dict):
        ab = ab.get("ids") or ab.get("event_ids")
    if isinstance(ab, (list, tuple, set)) and ab:
        return set(ab)
    return None


def _status_v1(session: Session) -> tuple[str | None, str]:
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
            if raw.get("key") == "execution_status" and isinstance(raw.get("value"), str):
                return raw["value"], f"ConversationStateUpdateEvent {e.id}"
            if raw.get("key") == "full_state" and isinstance(_d(raw.get("value")).get("execution_status"), str):
                return raw["value"]["execution_status"], f"ConversationStateUpdateEvent {e.id}"
    return None, "no execution_status recorded"


def _is_user_message(e: Event) -> bool:
    raw = _d(e.raw)
    return e.kind == MESSAGE and (e.source == "user" or raw.get("source") == "user")


def _classify_v1_error(raw: dict[str, Any]) -> tuple[str, str]:
    """(``budget`` | ``blocked``, text) for one conversation error event."""
    code = str(raw.get("code") or "")
    detail = str(raw.get("detail") or raw.get("error") or "")
    kind = raw.get("kind")
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
    if _BUDGET_TEXT.search(detail) and ckind in ("", "agent_action", "quota", "unknown"):
        return "budget", text
    return "blocked", text


def _v1_errors_after_last_user(session: Session) -> list[Event]:
    active = _active_ids(session)
    events = session.events
    last_user = -1
    for i, e in enumerate(events):
        if _is_user_message(e) and (active is None or e.id in active):
            last_user = i
    out = []
    for e in events[last_user + 1 :]:
        raw = _d(e.raw)
        kind = raw.get("kind") or e.type
        if kind in ("ConversationErrorEvent", "ServerErrorEvent") or kind in BUDGET_KINDS:
            # a legacy-tail error hung off an abandoned branch is not this run's end
            parent = raw.get("parent_id", e.parent_id)
            if active is not None and parent not in (None, "__root__") and parent not in active:
                continue
            out.append(e)
    return out


def _v1_finish(session: Session) -> Event | None:
    for e in reversed(session.events):
        raw = _d(e.raw)
        if e.kind == ACTION and (_d(raw.get("action")).get("kind") == "FinishAction" or raw.get("tool_name") == "finish"):
            return e
    return None


def _openhands_v1(session: Session) -> EngineOutcome:
    status, where = _status_v1(session)
    errors = _v1_errors_after_last_user(session)
    ev = [{"source": where, "status": status}]
    finish = _v1_finish(session)
    if status is None:
        if errors:
            status = "error"
        elif finish is not None:
            return EngineOutcome(True, status=None, signal="finish action (no execution_status recorded)", claimed_success=True,
                                 evidence=ev + [{"event_id": finish.id, "what": "FinishAction"}])
        else:
            return EngineOutcome(False, status=None, signal="no execution_status and no finish action", evidence=ev)
    st = status.lower()
    if st == "finished":
        return EngineOutcome(True, status=status, signal="execution_status finished", claimed_success=True,
                             evidence=ev + ([{"event_id": finish.id, "what": "FinishAction"}] if finish else []))
    if st == "error":
        if not errors:
            return EngineOutcome(False, external_error="unclassified engine error (no readable error event after the last user message)",
                                 status=status, signal="execution_status error", evidence=ev)
        verdicts = [(_classify_v1_error(_d(e.raw)), e) for e in errors]
        # a budget stop anywhere in this run's tail decides over a later follow-on error
        budget = [(t, e) for (k, t), e in verdicts if k == "budget"]
        if budget:
            t, e = budget[0]
            return EngineOutcome(False, budget_exhausted=True, status=status, signal=t, evidence=ev + [{"event_id": e.id, "what": t}])
        (k, t), e = verdicts[-1]
        return EngineOutcome(False, external_error=t, status=status, signal=t, evidence=ev + [{"event_id": e.id, "what": t}])
    if st == "stuck":
        return EngineOutcome(False, budget_exhausted=True, status=status, signal="stuck detector stopped the run", evidence=ev)
    if st == "paused":
        return EngineOutcome(False, human_abort=True, status=status, signal="conversation paused by the operator", evidence=ev)
    if st == "waiting_for_confirmation":
        return EngineOutcome(False, status=status, signal="waiting for the operator's confirmation", approval_wait=True, evidence=ev)
    return EngineOutcome(False, status=status, signal=f"execution_status {status}: the engine did not reach its end", evidence=ev)


# ---------------------------------------------------------------- OpenHands V0 trials

def _trial_results(session: Session) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(terminal-bench results.json, harbor result.json) found in the session metadata."""
    md = session.metadata or {}
    tb = _find_dict_with(md, ("failure_mode", "is_resolved", "parser_results"))
    hb = _find_dict_with(md, ("exception_info", "verifier_result", "agent_result"))
    return (tb, hb) if (tb or hb) else None  # type: ignore[return-value]


def _openhands_v0(session: Session) -> EngineOutcome:
    ev: list[dict[str, Any]] = []
    state = None
    reason = ""
    state_event = None
    finish = None
    errors: list[Event] = []
    operator_stop = False
    for e in session.events:
        raw = _d(e.raw)
        if raw.get("observation") == "agent_state_changed":
            ex = _d(raw.get("extras"))
            state = ex.get("agent_state") or state
            reason = str(ex.get("reason") or "")
            state_event = e
        elif raw.get("action") == "finish" and (raw.get("source") or e.source) == "agent":
            finish = e
        elif raw.get("observation") == "error":
            errors.append(e)
        elif raw.get("action") in ("change_agent_state", "pause", "stop") and (raw.get("source") or e.source) == "user":
            operator_stop = True
    res = _trial_results(session)
    tb, hb = res if res else (None, None)
    if state_event is not None:
        ev.append({"event_id": state_event.id, "what": f"agent_state {state}" + (f" ({reason})" if reason else "")})
    if finish is not None:
        ev.append({"event_id": finish.id, "what": "finish action"})
    claimed = finish is not None or state == "finished"
    # harness signals first: they see what the stream cannot (timeouts, installs)
    if tb:
        fm = tb.get("failure_mode")
        ev.append({"source": "results.json", "failure_mode": fm, "is_resolved": tb.get("is_resolved")})
        if fm in TB_BUDGET:
            return EngineOutcome(False, budget_exhausted=True, status=str(fm), signal=f"terminal-bench failure_mode {fm}", claimed_success=claimed, evidence=ev)
        if fm in TB_BLOCKED:
            return EngineOutcome(False, external_error=f"terminal-bench failure_mode {fm}", status=str(fm), signal=f"failure_mode {fm}", claimed_success=claimed, evidence=ev)
    if hb:
        exc = _d(hb.get("exception_info"))
        if exc:
            et = str(exc.get("exception_type") or "")
            msg = str(exc.get("exception_message") or "")[:300]
            ev.append({"source": "result.json", "exception_type": et})
            if "timeout" in et.lower() or "timeout" in msg.lower()[:80]:
                return EngineOutcome(False, budget_exhausted=True, status=et, signal=f"harbor exception {et}", claimed_success=claimed, evidence=ev)
            return EngineOutcome(False, external_error=f"harbor exception {et}: {msg}".strip(), status=et, signal=f"harbor exception {et}", claimed_success=claimed, evidence=ev)
    if state == "error" or (state is None and errors and finish is None):
        text = reason or (errors[-1].text if errors else "") or ""
        if "Agent reached maximum" in text or _BUDGET_TEXT.search(text):
            return EngineOutcome(False, budget_exhausted=True, status=state or "error", signal=text[:300], claimed_success=claimed, evidence=ev)
        if "OUT_OF_CREDITS" in text:
            return EngineOutcome(False, external_error=f"provider credits exhausted ({text[:200]})", status="error", signal=text[:300], claimed_success=claimed, evidence=ev)
        return EngineOutcome(False, external_error=(text[:300] or "unclassified agent error"), status=state or "error", signal="agent_state error", claimed_success=claimed, evidence=ev)
    if state == "rate_limited":
        return EngineOutcome(False, external_error="rate limited by the LLM provider", status=state, signal="agent_state rate_limited", claimed_success=claimed, evidence=ev)
    if state in ("stopped", "paused", "user_rejected"):
        if operator_stop or state in ("paused", "user_rejected"):
            return EngineOutcome(False, human_abort=True, status=state, signal=f"agent_state {state} after an operator action", claimed_success=claimed, evidence=ev)
        return EngineOutcome(False, status=state, signal=f"agent_state {state} without an operator action", claimed_success=claimed, evidence=ev)
    if state == "rejected":
        return EngineOutcome(False, external_error=f"the agent rejected the task{': ' + reason if reason else ''}", status=state, signal="agent_state rejected", claimed_success=False, evidence=ev)
    if state == "finished" or (finish is not None and state in (None, "awaiting_user_input", "running")):
        return EngineOutcome(True, status=state or "finish", signal="finish action" if finish is not None else "agent_state finished", claimed_success=True, evidence=ev)
    if state == "awaiting_user_confirmation":
        return EngineOutcome(False, status=state, signal="waiting for the operator's confirmation", approval_wait=True, evidence=ev)
    return EngineOutcome(False, status=state, signal=f"no finish (last agent_state {state or 'none'}): the run ended without its own end signal", evidence=ev)


# ---------------------------------------------------------------- other harnesses

def _generic(session: Session) -> EngineOutcome:
    md = session.metadata or {}
    exit_status = _find(md, "exit_status")
    if isinstance(exit_status, str):
        s = exit_status.lower()
        if "submitted" in s and not any(x in s for x in ("cost", "context", "limit", "format", "error")):
            return EngineOutcome(True, status=exit_status, signal=f"exit_status {exit_status}", claimed_success=True)
        if any(x in s for x in ("cost", "context", "limit", "turn", "step")):
            return EngineOutcome(False, budget_exhausted=True, status=exit_status, signal=f"exit_status {exit_status}", claimed_success="submitted" in s)
        return EngineOutcome(False, external_error=f"exit_status {exit_status}", status=exit_status, signal=f"exit_status {exit_status}")
    for e in reversed(session.events):
        if e.kind == ACTION and any((c.name or "").lower() in ("finish", "submit", "attempt_completion", "task_complete") for c in e.tool_calls):
            return EngineOutcome(True, status="finish", signal="finish / submit tool call", claimed_success=True, evidence=[{"event_id": e.id}])
        if e.kind == MESSAGE and (e.role == "assistant" or (e.source or "") in ("agent", "assistant")) and not e.tool_calls:
            # a chat agent ends its turn with a final answer that calls no tool
            return EngineOutcome(True, status="final-answer", signal="final assistant message without tool calls", claimed_success=True,
                                 evidence=[{"event_id": e.id}])
        if e.kind in (ACTION, OBSERVATION, MESSAGE):
            break
    return EngineOutcome(False, status=None, signal=f"no end signal known for format {session.format}")
