"""What the model saw: the chat messages the SDK sent on each agent LLM call,
rebuilt from the event log as the SDK builds them (``openhands-v1.md`` §5).

For a call, the history is the path from the root to the event before the
call's first event (so calls on abandoned branches rebuild too). On it:

1. the view: LLM-convertible events in order, with each ``Condensation``
   applied when met (forgotten events leave the view; the summary enters at
   its offset in the already-filtered list; SDK >= 1.10). Logs written by
   1.0-1.9 (recognised by the legacy Message flags) use the old global rule:
   the union of forgotten ids, and only the latest summary, and keep
   adjacent user messages apart (merging arrived in 1.26);
2. the view properties, repeated until stable: first observation per tool
   call id, batch atomicity, tool-call matching, tool-loop atomicity;
3. messages: consecutive actions of one ``llm_response_id`` are one
   assistant message, every other event its own message, adjacent plain user
   messages merged, observations formatted per kind, empty text parts dropped.

Not in the log, so not rebuilt: the ``tools`` array (schemas), prompt-cache
markers, reasoning content sent back to reasoning models, and message
rewriting for models without native tool calling.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...model import ReadOptions, Session, TrajkitError
from . import layout, tree
from .views import (
    ActionView,
    AgentErrorView,
    CondensationView,
    EventView,
    MessageView,
    ObservationView,
    SystemPromptView,
    UserRejectView,
    view,
)

_LLM_CONVERTIBLE = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation", "AgentErrorEvent"}
)
_OBS_LIKE = (ObservationView, UserRejectView, AgentErrorView)
_LEGACY_MESSAGE_FLAGS = ("cache_enabled", "vision_enabled", "function_calling_enabled", "force_string_serializer")


class ContextUnavailable(TrajkitError):
    """The conversation's model input cannot be rebuilt from its events."""


class _Summary:
    """The synthetic ``CondensationSummaryEvent`` a condensation inserts."""

    __slots__ = ("id", "summary")

    def __init__(self, id: str, summary: str):
        self.id = id
        self.summary = summary


def _sequential_view(path: list[EventView]) -> list[Any]:
    items: list[Any] = []
    for v in path:
        k = v.kind
        if k == "Condensation":
            c: CondensationView = v  # type: ignore[assignment]
            forgotten = set(c.forgotten_event_ids)
            if forgotten:
                items = [x for x in items if x.id not in forgotten]
            if c.summary is not None and c.summary_offset is not None:
                items.insert(min(c.summary_offset, len(items)), _Summary(f"{c.id}-summary", c.summary))
        elif k in _LLM_CONVERTIBLE:
            items.append(v)
    return items


def _global_view(path: list[EventView]) -> list[Any]:
    forgotten: set[str] = set()
    latest: CondensationView | None = None
    for v in path:
        if v.kind == "Condensation":
            forgotten.update(v.forgotten_event_ids)  # type: ignore[attr-defined]
            latest = v  # type: ignore[assignment]
    items: list[Any] = [v for v in path if v.kind in _LLM_CONVERTIBLE and v.id not in forgotten]
    if latest is not None and latest.summary is not None and latest.summary_offset is not None:
        items.insert(min(latest.summary_offset, len(items)), _Summary(f"{latest.id}-summary", latest.summary))
    return items


def _enforce(items: list[Any], path: list[EventView]) -> list[Any]:
    """Apply the view properties until nothing changes."""
    branch_batches: dict[str, list[str]] = {}
    for v in path:
        if isinstance(v, ActionView) and v.llm_response_id:
            branch_batches.setdefault(v.llm_response_id, []).append(v.id)
    loops = _tool_loops(path)
    while True:
        before = len(items)
        # ObservationUniqueness
        seen_calls: set[str] = set()
        kept = []
        for x in items:
            if isinstance(x, _OBS_LIKE) and x.tool_call_id:
                if x.tool_call_id in seen_calls:
                    continue
                seen_calls.add(x.tool_call_id)
            kept.append(x)
        items = kept
        # BatchAtomicity
        present = {x.id for x in items}
        broken = {
            rid for rid, ids in branch_batches.items() if any(i not in present for i in ids) and any(i in present for i in ids)
        }
        if broken:
            items = [x for x in items if not (isinstance(x, ActionView) and x.llm_response_id in broken)]
        # ToolCallMatching
        action_calls = {x.tool_call_id for x in items if isinstance(x, ActionView) and x.tool_call_id}
        answer_calls = {x.tool_call_id for x in items if isinstance(x, _OBS_LIKE) and x.tool_call_id}
        items = [
            x
            for x in items
            if not (isinstance(x, ActionView) and x.tool_call_id not in answer_calls)
            and not (isinstance(x, _OBS_LIKE) and x.tool_call_id not in action_calls)
        ]
        # ToolLoopAtomicity
        present = {x.id for x in items}
        drop: set[str] = set()
        for loop in loops:
            inside = [i in present for i in loop]
            if any(inside) and not all(inside):
                drop.update(loop)
        if drop:
            items = [x for x in items if x.id not in drop]
        if len(items) == before:
            return items


def _tool_loops(path: list[EventView]) -> list[list[str]]:
    """Runs of actions and observations starting at an action with thinking blocks."""
    loops: list[list[str]] = []
    conv = [v for v in path if v.kind in _LLM_CONVERTIBLE]
    i = 0
    while i < len(conv):
        v = conv[i]
        if isinstance(v, ActionView) and v.has_thinking_blocks:
            loop = [v.id]
            j = i + 1
            while j < len(conv) and isinstance(conv[j], (ActionView,) + _OBS_LIKE) and not (
                isinstance(conv[j], ActionView) and conv[j].has_thinking_blocks
            ):
                loop.append(conv[j].id)
                j += 1
            loops.append(loop)
            i = j
        else:
            i += 1
    return loops


def _parts(content: Any) -> list[dict]:
    """Chat content parts: text parts (empty ones dropped), images as image_url parts."""
    out: list[dict] = []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    for c in content if isinstance(content, list) else []:
        if not isinstance(c, dict):
            continue
        t = c.get("type", "text")
        if t == "text":
            text = c.get("text")
            if isinstance(text, str) and text:
                out.append({"type": "text", "text": text})
        elif t == "image":
            for url in c.get("image_urls") or []:
                if isinstance(url, str):
                    out.append({"type": "image_url", "image_url": {"url": url}})
        elif t == "image_url":
            out.append({k: v for k, v in c.items() if k != "cache_prompt"})
    return out


def _tool_call(tc: dict | None, v: ActionView) -> dict:
    tc = tc or {}
    args = tc.get("arguments")
    if not isinstance(args, str):
        args = v.arguments_text or "{}"
    return {
        "id": tc.get("id") if isinstance(tc.get("id"), str) else v.tool_call_id,
        "type": "function",
        "function": {"name": tc.get("name") if isinstance(tc.get("name"), str) else v.tool_name, "arguments": args},
    }


def _message(role: str, parts: list[dict], **extra: Any) -> dict:
    m: dict[str, Any] = {}
    if parts or role not in ("assistant",):
        m["content"] = parts
    m["role"] = role
    m.update(extra)
    return m


def _plain_user(m: dict) -> bool:
    return m.get("role") == "user" and not m.get("tool_calls") and not m.get("tool_call_id") and not m.get("name")


def events_to_messages(items: list[Any], merge_users: bool = True) -> list[dict]:
    """OpenAI chat messages for a view, as ``events_to_messages`` + ``to_chat_dict`` make them."""
    msgs: list[dict] = []
    i = 0
    n = len(items)
    while i < n:
        x = items[i]
        if isinstance(x, ActionView):
            batch = [x]
            rid = x.llm_response_id
            j = i + 1
            while rid and j < n and isinstance(items[j], ActionView) and items[j].llm_response_id == rid:
                batch.append(items[j])
                j += 1
            m = _message("assistant", _parts(x.thought), tool_calls=[_tool_call(a.tool_call, a) for a in batch])
            i = j
        else:
            i += 1
            if isinstance(x, _Summary):
                m = _message("user", _parts([{"type": "text", "text": x.summary}]))
            elif isinstance(x, SystemPromptView):
                m = _message("system", _parts(x.llm_content()))
            elif isinstance(x, MessageView):
                lm = x.llm_message
                role = x.role or ("assistant" if x.source == "agent" else "user")
                extra: dict[str, Any] = {}
                if isinstance(lm.get("tool_calls"), list) and lm["tool_calls"]:
                    extra["tool_calls"] = lm["tool_calls"]
                if isinstance(lm.get("tool_call_id"), str):
                    extra["tool_call_id"] = lm["tool_call_id"]
                if isinstance(lm.get("name"), str):
                    extra["name"] = lm["name"]
                m = _message(role, _parts(x.content + x.extended_content), **extra)
            elif isinstance(x, ObservationView):
                m = _message("tool", _parts(x.llm_content() + x.extended_content), tool_call_id=x.tool_call_id, name=x.tool_name)
            elif isinstance(x, (UserRejectView, AgentErrorView)):
                m = _message("tool", _parts(x.llm_content()), tool_call_id=x.tool_call_id, name=x.tool_name)
            else:
                continue
        if merge_users and msgs and _plain_user(m) and _plain_user(msgs[-1]):
            msgs[-1]["content"] = list(msgs[-1].get("content") or []) + list(m.get("content") or [])
            continue
        msgs.append(m)
    return msgs


def _path_to(views: list[EventView], parents: list[str | None], index: dict[str, int], start: int | None) -> list[EventView]:
    out: list[int] = []
    seen: set[int] = set()
    cur = start
    while cur is not None and cur not in seen:
        seen.add(cur)
        out.append(cur)
        pid = parents[cur]
        cur = index.get(pid) if pid is not None else None
    out.reverse()
    return [views[i] for i in out]


def _legacy_log(views: list[EventView]) -> bool:
    for v in views:
        if isinstance(v, MessageView) and any(f in v.llm_message for f in _LEGACY_MESSAGE_FLAGS):
            return True
    return False


def _session_of(session_or_path: Any) -> Session:
    if isinstance(session_or_path, Session):
        return session_or_path
    from .reader import read

    p = Path(os.fspath(session_or_path))
    root = layout.conversation_dir(p)
    if root is None:
        raise TrajkitError(f"{p}: not an OpenHands SDK conversation (no base_state.json or events/)")
    return read(root, ReadOptions(steps=False))


def _text_of(m: dict) -> list[str]:
    c = m.get("content")
    if isinstance(c, str):
        return [c] if c else []
    return [p.get("text", "") for p in c or [] if isinstance(p, dict) and p.get("type") == "text" and p.get("text")]


def _calls_of(m: dict) -> list[tuple[Any, Any, Any]]:
    out = []
    for c in m.get("tool_calls") or []:
        if isinstance(c, dict):
            f = c.get("function") if isinstance(c.get("function"), dict) else {}
            out.append((c.get("id"), f.get("name"), f.get("arguments")))
    return out


def compare_messages(rebuilt: list[dict], logged: list[dict]) -> list[str]:
    """Where two chat message lists differ in what the model reads: roles,
    text parts, tool call ids, names and arguments, and ``tool_call_id``
    (empty when they agree). Prompt-cache markers and part layout are ignored."""
    diffs: list[str] = []
    if len(rebuilt) != len(logged):
        diffs.append(f"{len(rebuilt)} messages rebuilt, {len(logged)} logged")
    for n, (a, b) in enumerate(zip(rebuilt, logged)):
        if not isinstance(b, dict):
            diffs.append(f"message {n}: logged message is not an object")
            continue
        if a.get("role") != b.get("role"):
            diffs.append(f"message {n}: role {a.get('role')!r} rebuilt, {b.get('role')!r} logged")
        if "".join(_text_of(a)) != "".join(_text_of(b)):
            diffs.append(f"message {n} ({a.get('role')}): text differs")
        if _calls_of(a) != _calls_of(b):
            diffs.append(f"message {n} ({a.get('role')}): tool calls differ")
        if a.get("tool_call_id") != b.get("tool_call_id"):
            diffs.append(f"message {n}: tool_call_id {a.get('tool_call_id')!r} rebuilt, {b.get('tool_call_id')!r} logged")
    return diffs


def logged_requests(session: Session) -> dict[str, dict[str, Any]]:
    """The requests an agent server logged as ``LLMCompletionLogEvent``s
    (``log_completions=True``), by response id: ``{"event_id", "messages"}``.
    Logs that do not decode, or name no response id, are left out."""
    from .views import LLMCompletionLogView

    out: dict[str, dict[str, Any]] = {}
    for e in session.events:
        if e.type != "LLMCompletionLogEvent" or not isinstance(e.raw, dict):
            continue
        data = LLMCompletionLogView(e.raw).log_data()
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            continue
        resp = data.get("response")
        rid = resp.get("id") if isinstance(resp, dict) else None
        if isinstance(rid, str) and rid:
            out.setdefault(rid, {"event_id": e.id, "messages": data["messages"]})
    return out


def rebuild_context(session_or_path: Any, at: Any = None, merge_users: bool | None = None) -> list[dict[str, Any]]:
    """The messages of every agent LLM call: ``[{"llm_response_id", "event_id", "messages"}]``.

    When the agent server logged the request (``LLMCompletionLogEvent``), the
    entry also has ``"logged": {"event_id", "differences"}`` comparing the
    rebuilt messages with the logged ones (:func:`compare_messages`).

    ``session_or_path`` is a Session read by this format or a path naming a
    conversation. With ``at`` (an event id) only one entry: the call that
    produced that event, or, for any other event, what a call made right
    after it would be sent (``llm_response_id`` None). Raises
    :class:`ContextUnavailable` for ACPAgent conversations (the model ran in
    an external ACP server) and :class:`TrajkitError` for an unknown ``at``.
    """
    s = _session_of(session_or_path)
    if s.metadata.get("agent_kind") == "ACPAgent":
        raise ContextUnavailable(
            f"{s.source_path}: an ACPAgent conversation; the model ran inside an external ACP server, "
            "so what it saw is not in the event log and cannot be rebuilt (its actions are observed only)"
        )
    views = [view(e.raw) for e in s.events]
    ids = [e.id for e in s.events]
    parents = tree.effective_parents(ids, [v.parent_id for v in views])
    for i, e in enumerate(s.events):  # links the reader bridged over unreadable files
        if "effective_parent_id" in e.extra:
            parents[i] = e.extra["effective_parent_id"]
    index: dict[str, int] = {}
    for i, eid in enumerate(ids):
        index.setdefault(eid, i)
    legacy = _legacy_log(views)
    if merge_users is None:
        merge_users = not legacy  # merging adjacent user messages arrived in 1.26
    build = _global_view if legacy else _sequential_view

    def messages_before(i: int | None, inclusive: bool) -> list[dict]:
        if i is None:
            return []
        start = i if inclusive else (index.get(parents[i]) if parents[i] is not None else None)
        path = _path_to(views, parents, index, start)
        return events_to_messages(_enforce(build(path), path), merge_users)

    calls: list[tuple[str, int]] = []
    seen: set[str] = set()
    for i, v in enumerate(views):
        rid = None
        if isinstance(v, ActionView):
            rid = v.llm_response_id
        elif isinstance(v, MessageView) and v.source == "agent":
            rid = v.llm_response_id
        if rid and rid not in seen:
            seen.add(rid)
            calls.append((rid, i))
    logged = logged_requests(s)

    def entry(rid: str | None, first: int, messages: list[dict]) -> dict[str, Any]:
        e: dict[str, Any] = {"llm_response_id": rid, "event_id": ids[first], "messages": messages}
        if rid in logged:
            e["logged"] = {"event_id": logged[rid]["event_id"], "differences": compare_messages(messages, logged[rid]["messages"])}
        return e

    if at is not None:
        if at not in index:
            raise TrajkitError(f"no event {at!r} in {s.source_path}")
        i = index[at]
        v = views[i]
        rid = getattr(v, "llm_response_id", None) if isinstance(v, (ActionView, MessageView)) else None
        for call_rid, first in calls:
            if rid == call_rid:
                return [entry(call_rid, first, messages_before(first, False))]
        return [entry(None, i, messages_before(i, True))]
    return [entry(rid, i, messages_before(i, False)) for rid, i in calls]
