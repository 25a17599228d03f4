"""The engine outcome: the harness's own end signal projected onto
``reached_end`` / ``external_error`` / ``budget_exhausted`` /
``human_abort`` (at most one of blocked and budget).

The reader of each format knows its harness's end signal and sets
:attr:`Session.outcome <trajkit.model.Session.outcome>` (OpenHands SDK:
``execution_status`` and the conversation errors; OpenHands V0: the finish
action, the agent state and the trial's results files). This module only
copies it, and judges a run whose format records no end signal from its
normalized events: a finish / final answer as the end, no budget or block
signal.

See ``formats/certification.md`` §6.1-6.3 for the mapping tables.
"""

from __future__ import annotations

from ..model import ACTION, FINISH_OP, MESSAGE, OBSERVATION, Session
from .states import EngineOutcome


def engine_outcome(session: Session) -> EngineOutcome:
    """The engine outcome of ``session``: its recorded end signal, else one judged from its events."""
    o = session.outcome
    if o is not None:
        return EngineOutcome(o.reached_end, external_error=o.external_error, budget_exhausted=o.budget_exhausted,
                             human_abort=o.human_abort, status=o.status, signal=o.signal, claimed_success=o.claimed_success,
                             approval_wait=o.approval_wait, evidence=list(o.evidence))
    return _from_events(session)


def _from_events(session: Session) -> EngineOutcome:
    for e in reversed(session.events):
        if e.kind == ACTION and any(c.op == FINISH_OP for c in e.tool_calls):
            return EngineOutcome(True, status="finish", signal="finish / submit tool call", claimed_success=True, evidence=[{"event_id": e.id}])
        if e.kind == MESSAGE and (e.role == "assistant" or (e.source or "") in ("agent", "assistant")) and not e.tool_calls:
            # a chat agent ends its turn with a final answer that calls no tool
            return EngineOutcome(True, status="final-answer", signal="final assistant message without tool calls", claimed_success=True,
                                 evidence=[{"event_id": e.id}])
        if e.kind in (ACTION, OBSERVATION, MESSAGE):
            break
    return EngineOutcome(False, status=None, signal=f"no end signal known for format {session.format}")
