"""Facts read straight from one decoded SDK event object: message texts,
reasoning, an action's tool call and kind, an answer's text, a response id.

Both the reader (:mod:`.reader`, which normalizes events) and the step
builder (:mod:`.stepping`, which renders them) use these, so neither imports
the other's internals.
"""

from __future__ import annotations

from typing import Any

import orjson

from ...model import Usage
from .views import LEGACY_KIND_ALIASES, AgentErrorView, UserRejectView, reasoning_of

#: Event kinds that carry an ``llm_response_id``.
RESPONSE_KINDS = frozenset({"ActionEvent", "MessageEvent", "Condensation"})


def texts(content: Any, sep: str) -> str:
    """The text parts of a message ``content`` (a list of parts or a string), joined by ``sep``."""
    if type(content) is list and len(content) == 1:
        c = content[0]
        if type(c) is dict:
            t = c.get("text")
            if type(t) is str and c.get("type", "text") == "text":
                return t
        return ""
    if type(content) is list:
        return sep.join([c["text"] for c in content if type(c) is dict and type(c.get("text")) is str and c.get("type", "text") == "text"])
    if type(content) is str:
        return content
    return ""


def reasoning(raw: dict) -> str | None:
    """The reasoning text of an LLM message or action (``reasoning_content``, thinking blocks, a responses reasoning item)."""
    rc = raw.get("reasoning_content")
    if type(rc) is str and rc.strip():
        return rc
    if raw.get("thinking_blocks") or raw.get("responses_reasoning_item"):
        return reasoning_of(raw)
    return None


def action_call(raw: dict) -> tuple[str, Any, bool]:
    """An ActionEvent's tool name, arguments (decoded when they are JSON) and
    whether they decoded (the facts of its ``tool_calls[0]``)."""
    g = raw.get
    tc = g("tool_call")
    name = None
    args: Any = None
    decoded = True
    if type(tc) is dict:
        name = tc.get("name")
        a = tc.get("arguments")
        if type(a) is str:
            try:
                args = orjson.loads(a)
            except orjson.JSONDecodeError:
                args, decoded = a, False
        else:
            args = a
    elif tc is None:
        act = g("action")
        if type(act) is dict:
            args = {k: v for k, v in act.items() if k != "kind"}
    if type(name) is not str:
        tool_name = g("tool_name")
        name = tool_name if type(tool_name) is str else "?"
    return name, args, decoded


def action_kind(raw: dict) -> str | None:
    """An ActionEvent's action kind (legacy names mapped), as ``extra["action_kind"]`` says."""
    act = raw.get("action")
    if type(act) is dict:
        ak = act.get("kind")
        return LEGACY_KIND_ALIASES.get(ak, ak) if type(ak) is str else None
    return None


def action_reasoning(raw: dict) -> str | None:
    """An ActionEvent's reasoning text (its ``reasoning`` field)."""
    g = raw.get
    if g("reasoning_content") or g("thinking_blocks") or g("responses_reasoning_item"):
        return reasoning(raw)
    return None


def observation_text(obs: Any) -> str:
    """The text of an ObservationEvent's ``observation`` member."""
    return texts(obs.get("content"), "") if type(obs) is dict else ""


def answer_text(raw: dict, kind: str) -> str | None:
    """The ``text`` of an answer (ObservationEvent, UserRejectObservation, AgentErrorEvent)."""
    if kind == "ObservationEvent":
        return observation_text(raw.get("observation"))
    if kind == "UserRejectObservation":
        return UserRejectView(raw).text
    return AgentErrorView(raw).error


def response_id_of(raw: dict, kind: str) -> str | None:
    """An event's ``response_id`` (ActionEvent, MessageEvent and Condensation have one)."""
    if kind in RESPONSE_KINDS:
        rid = raw.get("llm_response_id")
        return rid if type(rid) is str else None
    return None


#: The members of a per-response usage entry as the reader builds it
#: (``reader.read_stats``): the SDK's count names, and what the join adds.
_USAGE_ENTRY_KEYS = frozenset({
    "prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "context_window", "per_turn_token", "model", "response_id", "usage_id", "latency", "cost", "cost_join",
})


#: What a count the reader built may be: an integer, or None when not recorded.
_COUNT_TYPES = frozenset({int, type(None)})


def usage_of(u: dict[str, Any], source: str) -> Usage | None:
    """``Usage.from_counts(u, source)`` for a per-response usage entry the
    reader built: its counts are already integers under the SDK's names, so
    they are taken as they are, without looking up the other namings.
    Anything else goes to ``Usage.from_counts``."""
    if type(u) is not dict or not u.keys() <= _USAGE_ENTRY_KEYS:
        return Usage.from_counts(u, source)
    g = u.get
    vals = [g("prompt_tokens"), g("completion_tokens"), g("cache_read_tokens"), g("cache_write_tokens"), g("reasoning_tokens")]
    if not set(map(type, vals)) <= _COUNT_TYPES:
        return Usage.from_counts(u, source)
    cost = g("cost")
    model = g("model")
    # positional (input, output, cache_read, cache_write, reasoning, total, cost, source, model): one made per model call
    return Usage(
        vals[0],
        vals[1],
        vals[2],
        vals[3],
        vals[4],
        None,
        float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
        source,
        model if isinstance(model, str) else None,
    )
