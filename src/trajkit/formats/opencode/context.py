"""What the model saw at each model call of an opencode session, as far as the record allows.

opencode rebuilds each request from the stored parts (``toModelMessages``):
a user message is its text parts (``ignored`` ones left out), an assistant
message its text, reasoning and tool calls, and every tool part that ran
answers its call with ``state.output`` or ``state.error`` (an output opencode
compacted is sent as ``[Old tool result content cleared]``). After a
compaction, the history before the summary is no longer sent.

Cannot be rebuilt from the record: the **system prompt** (opencode builds it
from the model id, the agent and the project's instruction files at request
time), the **tool declarations**, and any title-generation or summarisation
call (they leave no message). So the messages here start at the first user
message, and the ASF export does not claim a ``request_hash``.
"""

from __future__ import annotations

import json
from typing import Any

from ...model import ACTION, MESSAGE, OBSERVATION, REASONING, STATE, Session, TrajkitError

CLEARED = "[Old tool result content cleared]"


def _session_of(x: Any) -> Session:
    if isinstance(x, Session):
        return x
    from ...registry import read

    return read(x, format="opencode")


def _args(a: Any) -> str:
    if isinstance(a, str):
        return a
    try:
        return json.dumps(a if a is not None else {}, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(str(a))


def rebuild_context(session_or_path: Any, at: Any = None) -> list[dict[str, Any]]:
    """``[{"llm_response_id", "event_id", "messages"}]``, one per model call;
    with ``at`` (an event id) only the call that produced it."""
    s = _session_of(session_or_path)
    history: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the assistant message being built (one model call)
    pending: list[dict[str, Any]] = []  # tool results of the current call
    seen_calls: set[str] = set()
    compaction_at: int | None = None  # where the history is cut once the summary call has run
    summary_done = False

    def flush() -> None:
        nonlocal current
        if current is not None:
            history.append(current)
            history.extend(pending)
            pending.clear()
            current = None

    for e in s.events:
        if e.kind == STATE and e.type == "part.compaction":
            flush()
            compaction_at, summary_done = len(history), False
            continue
        rid = e.response_id
        is_output = e.kind in (ACTION, REASONING) or (e.kind == MESSAGE and e.role == "assistant")
        if is_output and rid is not None and rid not in seen_calls:
            flush()
            if compaction_at is not None:
                if summary_done:  # the summary is written: what came before it is no longer sent
                    history[:] = history[compaction_at:]
                    compaction_at = None
                else:
                    summary_done = True  # this call writes the summary, seeing everything
            seen_calls.add(rid)
            out.append({"llm_response_id": rid, "event_id": e.id, "messages": [dict(m) for m in history]})
            current = {"role": "assistant", "content": ""}
        if e.kind == MESSAGE and e.role == "user":
            flush()
            history.append({"role": "user", "content": e.text or ""})
        elif is_output and current is not None:
            if e.kind == MESSAGE:
                current["content"] = (current["content"] + "\n" if current["content"] else "") + (e.text or "")
            elif e.kind == REASONING:
                current["reasoning_content"] = (current.get("reasoning_content", "") + (e.reasoning or ""))
            elif e.kind == ACTION:
                for tc in e.tool_calls:
                    current.setdefault("tool_calls", []).append(
                        {"id": tc.call_id, "type": "function", "function": {"name": tc.name, "arguments": _args(tc.arguments)}})
        elif e.kind == OBSERVATION:
            text = CLEARED if e.extra.get("compacted") else (e.text or "")
            msg = {"role": "tool", "tool_call_id": e.call_id, "content": text}
            (pending if current is not None else history).append(msg)
        elif e.kind == MESSAGE and e.role == "assistant" and current is None:
            history.append({"role": "assistant", "content": e.text or ""})
    flush()
    if at is None:
        return out
    for entry in out:
        if entry["event_id"] == at or entry["llm_response_id"] == at:
            return [entry]
    ev = s.event_by_id(at)
    if ev is None:
        raise TrajkitError(f"no event {at!r} in {s.source_path}")
    if ev.response_id is not None:
        for entry in out:
            if entry["llm_response_id"] == ev.response_id:
                return [entry]
    return [{"llm_response_id": None, "event_id": at, "messages": []}]
