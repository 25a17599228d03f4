"""One ``trajkit ls`` row from a read :class:`~trajkit.model.Session`, the
same keys and meanings for every format (``Format.summarize``): ``tokens`` is
the total of input and output tokens over every model call of the session and
its sub-sessions (None when no call recorded usage), ``cost`` the recorded
run cost, else the sum of the calls' costs (None when none is known), with
``cost_estimated`` true when any of those came from the price table
(:mod:`trajkit.pricing`; ``ls`` prints such a cost as ``~``)."""

from __future__ import annotations

from typing import Any

from ..diagnostics import INFO
from ..model import Session


def usage_totals(session: Session) -> tuple[int | None, float | None, bool]:
    """``(tokens, cost, estimated)`` over every model call of ``session`` and
    its sub-sessions, costs the record lacks estimated from the price table."""
    from ..pricing import estimate_session

    estimate_session(session)  # fills only what the record lacks (what registry.read does after a reader)
    usages = [e.model_usage for s in session.walk() for e in s.events if e.model_usage is not None]
    if not usages:
        return None, None, False
    tokens = sum((u.input or 0) + (u.output or 0) for u in usages)
    costs = [u for u in usages if u.cost is not None]
    cost = round(sum(u.cost for u in costs), 10) if costs else None
    return tokens, cost, any(u.cost_estimated for u in costs)


def session_row(session: Session, **fields: Any) -> dict[str, Any]:
    """The listing row of ``session``; ``fields`` override or add keys (a
    format's own title, status words, update time, path)."""
    tokens, call_cost, estimated = usage_totals(session)
    recorded = session.run.cost_usd
    task = (session.task or "").strip()
    row: dict[str, Any] = {
        "id": session.id,
        "path": session.source_path,
        "title": task.splitlines()[0][:100] if task else None,
        "status": session.outcome.status if session.outcome is not None else None,
        "events": len(session.events),
        "steps": len(session.steps),
        "model": session.run.models[0] if session.run.models else None,
        "tokens": tokens,
        "cost": recorded if recorded is not None else call_cost,
        "cost_estimated": recorded is None and call_cost is not None and estimated,
        "updated": session.run.ended_at,
        "subagents": sum(1 for _ in session.walk()) - 1,
        "diagnostics": [d.to_dict() for d in session.diagnostics if d.severity != INFO],
    }
    row.update(fields)
    return row
