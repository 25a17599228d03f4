"""What the model saw before each response, as far as the record allows.

Claude Code keeps the message history: each response on the active branch
was sent the user and assistant messages before it on that branch (the
rows of one assistant response merged into one message, tool results as
the user messages that carried them, injected rows such as ``isMeta``
included, as Claude Code sends them). After a compaction the history
restarts from the summary row.

What cannot be rebuilt: the system prompt, the tool declarations, the
``<system-reminder>`` blocks and attachments Claude Code adds to a request
without writing them as rows, and the cache breakpoints. Every entry says so
in ``missing``.
"""

from __future__ import annotations

from typing import Any

from ...model import ACTION, BRANCH_ACTIVE, CONDENSATION, MESSAGE, OBSERVATION, REASONING, Session, TrajkitError

MISSING_PARTS = ["system prompt", "tool declarations", "harness reminders and attachments not written as rows"]


def _session_of(x: Any) -> Session:
    if isinstance(x, Session):
        return x
    from ...model import ReadOptions
    from ...registry import read, root_for
    from .reader import NAME

    return read(root_for(x, NAME), format=NAME, options=ReadOptions(steps=False))


def _content(raw: Any) -> Any:
    if isinstance(raw, dict):
        msg = raw.get("message")
        if isinstance(msg, dict):
            return msg.get("content")
    return None


def rebuild_context(session_or_path: Any, at: Any = None) -> list[dict[str, Any]]:
    """``[{"llm_response_id", "event_id", "messages", "missing"}]``, one per
    response on the active branch; with ``at``, only the entry of the
    response that produced event ``at`` (or, for another event, what a call
    made right after it would be sent)."""
    s = _session_of(session_or_path)
    if at is not None and s.event_by_id(at) is None:
        raise TrajkitError(f"no event {at!r} in {s.source_path}")
    messages: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    current_id: Any = None
    seen_rows: set[int] = set()
    for e in s.events:
        if e.branch not in (None, BRANCH_ACTIVE) or e.extra.get("sidechain"):
            continue
        if e.kind == CONDENSATION:
            messages = []
            current, current_id = None, None
            continue
        if e.role == "assistant" and e.kind in (ACTION, MESSAGE, REASONING):
            if e.response_id != current_id or current is None:
                entry = {"llm_response_id": e.response_id, "event_id": e.id, "messages": [dict(m) for m in messages],
                         "missing": MISSING_PARTS}
                out.append(entry)
                current = {"role": "assistant", "content": []}
                current_id = e.response_id
                messages.append(current)
            c = _content(e.raw)
            if isinstance(c, list):
                current["content"].extend(c)
            elif isinstance(c, str):
                current["content"].append({"type": "text", "text": c})
            if at is not None and e.id == at:
                return [out[-1]]
            continue
        if e.kind in (MESSAGE, OBSERVATION) or e.type == "compact_summary":
            if id(e.raw) in seen_rows:
                continue
            raw = e.raw
            if isinstance(raw, dict) and raw.get("type") == "user":
                seen_rows.add(id(raw))
                current, current_id = None, None
                messages.append({"role": "user", "content": _content(raw)})
        if at is not None and e.id == at:
            return [{"llm_response_id": None, "event_id": e.id, "messages": [dict(m) for m in messages], "missing": MISSING_PARTS}]
    if at is not None:
        return [{"llm_response_id": None, "event_id": at, "messages": [dict(m) for m in messages], "missing": MISSING_PARTS}]
    return out
