"""Typed views of OpenHands SDK (V1) events, state and metadata.

A view wraps the decoded JSON object (``raw``) without copying it and decodes
the members of its kind on demand. Nothing is ever written into ``raw``, so
members a view does not declare (fields of newer or older SDKs, custom
events) ride along untouched and :func:`encode` gives the same JSON value back
(byte-identical for the SDK's compact files, whose serializer orjson matches).

A view never raises on odd data: an accessor whose member is missing or of
the wrong type returns None (or an empty list), and :meth:`EventView.misfits`
names the members that do not fit the kind.
"""

from __future__ import annotations

from typing import Any

import orjson

#: Kinds the SDK persists (``openhands-v1.md`` §2.2), plus the 1.0-1.2 names.
KNOWN_KINDS = frozenset(
    {
        "SystemPromptEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "UserRejectObservation",
        "AgentErrorEvent",
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
        "PauseEvent",
        "InterruptEvent",
        "ConversationStateUpdateEvent",
        "ConversationErrorEvent",
        "ServerErrorEvent",
        "TokenEvent",
        "LLMCompletionLogEvent",
        "ACPToolCallEvent",
        "HookExecutionEvent",
        "SecurityAnalysisEvent",
        "StreamingDeltaEvent",
    }
)

#: Action / observation kinds renamed in SDK 1.3 (read as the terminal tool).
LEGACY_KIND_ALIASES = {
    "ExecuteBashAction": "TerminalAction",
    "ExecuteBashObservation": "TerminalObservation",
}

ERROR_MESSAGE_HEADER = "[An error occurred during execution.]\n"
#: ``maybe_truncate`` notice and limits of the SDK's observation formatters.
TRUNCATE_NOTICE = (
    "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"
)
MAX_TERMINAL_OUTPUT = 30_000
MAX_BROWSER_TEXT = 50_000


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _dict(v: Any) -> dict | None:
    return v if isinstance(v, dict) else None


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def encode(obj: Any) -> bytes:
    """The JSON bytes of a view (or raw value) as the SDK writes them: compact, UTF-8 unescaped."""
    raw = obj.raw if isinstance(obj, (EventView, ObjectView)) else obj
    return orjson.dumps(raw)


def text_parts(content: Any) -> list[str]:
    """The texts of a content list (TextContent items), or of a bare string."""
    if isinstance(content, str):
        return [content]
    out = []
    for c in _list(content):
        if isinstance(c, dict) and c.get("type", "text") == "text" and isinstance(c.get("text"), str):
            out.append(c["text"])
    return out


def content_text(content: Any, sep: str = "\n") -> str:
    """The text parts of a content list joined with ``sep``."""
    return sep.join(text_parts(content))


def maybe_truncate(content: str, limit: int, notice: str = TRUNCATE_NOTICE) -> str:
    """Middle-truncate ``content`` to ``limit`` characters as the SDK does
    (head gets the odd character; the notice sits between head and tail)."""
    if not limit or limit < 0 or len(content) <= limit:
        return content
    if len(notice) >= limit:
        return notice[:limit]
    available = limit - len(notice)
    head = available // 2 + available % 2
    tail = max(0, limit - len(notice) - head)
    return content[:head] + notice + (content[-tail:] if tail else content)


class ObjectView:
    """A view of one JSON object (state, metadata); ``raw`` is untouched."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any):
        self.raw = raw

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default) if isinstance(self.raw, dict) else default


class EventView:
    """The envelope every SDK event has: kind, id, timestamp, source, parent.

    ``parent_present`` says whether ``parent_id`` was written at all (SDK
    1.31+ writes it; earlier logs are linear chains).
    """

    __slots__ = ("raw",)
    #: members this kind requires, with the type each must have
    REQUIRED: dict[str, type | tuple[type, ...]] = {}

    def __init__(self, raw: dict):
        self.raw = raw

    @property
    def kind(self) -> str | None:
        return _str(self.raw.get("kind"))

    @property
    def id(self) -> str | None:
        v = self.raw.get("id")
        return v if isinstance(v, str) else (str(v) if isinstance(v, int) and not isinstance(v, bool) else None)

    @property
    def timestamp(self) -> str | None:
        return _str(self.raw.get("timestamp"))

    @property
    def source(self) -> str | None:
        return _str(self.raw.get("source"))

    @property
    def parent_present(self) -> bool:
        return "parent_id" in self.raw

    @property
    def parent_id(self) -> str | None:
        return _str(self.raw.get("parent_id"))

    @property
    def known(self) -> bool:
        return self.kind in KNOWN_KINDS

    def misfits(self) -> list[str]:
        """Members required by the kind that are missing or of the wrong type."""
        out = []
        for name, typ in self.REQUIRED.items():
            v = self.raw.get(name)
            if not isinstance(v, typ) or isinstance(v, bool) and typ is not bool:
                out.append(name)
        return out


class SystemPromptView(EventView):
    """``SystemPromptEvent``: the system prompt, tool declarations and dynamic context."""

    __slots__ = ()
    REQUIRED = {"system_prompt": dict}

    @property
    def system_prompt(self) -> dict | None:
        return _dict(self.raw.get("system_prompt"))

    @property
    def text(self) -> str:
        sp = self.system_prompt
        return sp.get("text", "") if sp and isinstance(sp.get("text"), str) else ""

    @property
    def dynamic_context(self) -> dict | None:
        return _dict(self.raw.get("dynamic_context"))

    @property
    def tools(self) -> list:
        return _list(self.raw.get("tools"))

    def llm_content(self) -> list[dict]:
        out = []
        for part in (self.system_prompt, self.dynamic_context):
            if part is not None:
                out.append(part)
        return out


class MessageView(EventView):
    """``MessageEvent``: one chat message (``llm_message``) plus extended content."""

    __slots__ = ()
    REQUIRED = {"llm_message": dict}

    @property
    def llm_message(self) -> dict:
        return _dict(self.raw.get("llm_message")) or {}

    @property
    def role(self) -> str | None:
        return _str(self.llm_message.get("role"))

    @property
    def content(self) -> list:
        c = self.llm_message.get("content")
        if isinstance(c, str):
            return [{"type": "text", "text": c}]
        return _list(c)

    @property
    def extended_content(self) -> list:
        return _list(self.raw.get("extended_content"))

    @property
    def text(self) -> str:
        return content_text(self.content)

    @property
    def llm_response_id(self) -> str | None:
        return _str(self.raw.get("llm_response_id"))

    @property
    def reasoning(self) -> str | None:
        return reasoning_of(self.llm_message)

    @property
    def sender(self) -> str | None:
        return _str(self.raw.get("sender"))


def reasoning_of(obj: dict) -> str | None:
    """Reasoning text of an action or message: reasoning_content, else the
    thinking blocks, else the Responses reasoning item's summary."""
    rc = obj.get("reasoning_content")
    if isinstance(rc, str) and rc.strip():
        return rc
    blocks = [b.get("thinking") for b in _list(obj.get("thinking_blocks")) if isinstance(b, dict)]
    blocks = [b for b in blocks if isinstance(b, str) and b.strip()]
    if blocks:
        return "\n".join(blocks)
    item = _dict(obj.get("responses_reasoning_item"))
    if item:
        summ = [s for s in _list(item.get("summary")) if isinstance(s, str) and s.strip()]
        if summ:
            return "\n".join(summ)
    return None


class ActionView(EventView):
    """``ActionEvent``: one tool call of an LLM response (``action`` absent
    when the call could not be executed)."""

    __slots__ = ()
    REQUIRED = {"tool_name": str, "tool_call_id": str}

    @property
    def thought(self) -> list:
        return _list(self.raw.get("thought"))

    @property
    def thought_text(self) -> str:
        return content_text(self.thought)

    @property
    def action(self) -> dict | None:
        return _dict(self.raw.get("action"))

    @property
    def action_kind(self) -> str | None:
        a = self.action
        k = _str(a.get("kind")) if a else None
        return LEGACY_KIND_ALIASES.get(k, k) if k else None

    @property
    def tool_name(self) -> str | None:
        return _str(self.raw.get("tool_name"))

    @property
    def tool_call_id(self) -> str | None:
        return _str(self.raw.get("tool_call_id"))

    @property
    def tool_call(self) -> dict | None:
        return _dict(self.raw.get("tool_call"))

    @property
    def call_name(self) -> str | None:
        tc = self.tool_call
        return (_str(tc.get("name")) if tc else None) or self.tool_name

    @property
    def arguments_text(self) -> str | None:
        tc = self.tool_call
        if tc is None:
            return None
        a = tc.get("arguments")
        if isinstance(a, str):
            return a
        if a is None:
            return None
        return orjson.dumps(a).decode()

    def arguments(self) -> tuple[Any, bool]:
        """The tool call arguments decoded (``(value, True)``), or the string
        as written when it is not JSON (``(text, False)``). Without a
        tool_call, the action's fields (less ``kind``)."""
        tc = self.tool_call
        if tc is not None:
            a = tc.get("arguments")
            if isinstance(a, str):
                try:
                    return orjson.loads(a), True
                except orjson.JSONDecodeError:
                    return a, False
            return a, True
        act = self.action
        if act is not None:
            return {k: v for k, v in act.items() if k != "kind"}, True
        return None, True

    @property
    def llm_response_id(self) -> str | None:
        return _str(self.raw.get("llm_response_id"))

    @property
    def reasoning(self) -> str | None:
        return reasoning_of(self.raw)

    @property
    def security_risk(self) -> str | None:
        return _str(self.raw.get("security_risk"))

    @property
    def summary(self) -> str | None:
        return _str(self.raw.get("summary"))

    @property
    def has_thinking_blocks(self) -> bool:
        return bool(_list(self.raw.get("thinking_blocks")))


class ObservationView(EventView):
    """``ObservationEvent``: a tool's result for one action."""

    __slots__ = ()
    REQUIRED = {"tool_name": str, "tool_call_id": str, "observation": dict}

    @property
    def tool_name(self) -> str | None:
        return _str(self.raw.get("tool_name"))

    @property
    def tool_call_id(self) -> str | None:
        return _str(self.raw.get("tool_call_id"))

    @property
    def action_id(self) -> str | None:
        return _str(self.raw.get("action_id"))

    @property
    def observation(self) -> dict:
        return _dict(self.raw.get("observation")) or {}

    @property
    def observation_kind(self) -> str | None:
        k = _str(self.observation.get("kind"))
        return LEGACY_KIND_ALIASES.get(k, k) if k else None

    @property
    def is_error(self) -> bool:
        return self.observation.get("is_error") is True

    @property
    def content(self) -> list:
        c = self.observation.get("content")
        if isinstance(c, str):
            return [{"type": "text", "text": c}] if c else []
        return _list(c)

    @property
    def text(self) -> str:
        return content_text(self.content, "")

    @property
    def extended_content(self) -> list:
        return _list(self.raw.get("extended_content"))

    def llm_content(self) -> list[dict]:
        """The content parts the model is sent for this observation, formatted
        per observation kind as the SDK's ``to_llm_content`` does."""
        obs = self.observation
        kind = self.observation_kind
        out: list[dict] = []
        if kind == "TerminalObservation":
            if self.is_error:
                out.append({"type": "text", "text": ERROR_MESSAGE_HEADER})
            md = _dict(obs.get("metadata")) or {}
            ret = f"{md.get('prefix') or ''}{self.text}{md.get('suffix') or ''}"
            if md.get("working_dir"):
                ret += f"\n[Current working directory: {md['working_dir']}]"
            if md.get("py_interpreter_path"):
                ret += f"\n[Python interpreter: {md['py_interpreter_path']}]"
            exit_code = md.get("exit_code", -1)
            if exit_code != -1:
                ret += f"\n[Command finished with exit code {exit_code}]"
            out.append({"type": "text", "text": maybe_truncate(ret, MAX_TERMINAL_OUTPUT)})
            return out
        if kind == "TaskObservation":
            out.append(
                {
                    "type": "text",
                    "text": f"Task ID: {obs.get('task_id')}\nSubagent: {obs.get('subagent')}\nStatus: {obs.get('status')}",
                }
            )
        if self.is_error:
            out.append({"type": "text", "text": ERROR_MESSAGE_HEADER})
        if kind == "BrowserObservation":
            text = maybe_truncate(self.text, MAX_BROWSER_TEXT)
            if text:
                out.append({"type": "text", "text": text})
            shot = obs.get("screenshot_data")
            if isinstance(shot, str) and shot:
                url = shot if shot.startswith("data:") else f"data:image/png;base64,{shot}"
                out.append({"type": "image", "image_urls": [url]})
            return out
        out.extend(c for c in self.content if isinstance(c, dict))
        return out


class UserRejectView(EventView):
    """``UserRejectObservation``: the user (or a hook) refused an action."""

    __slots__ = ()
    REQUIRED = {"tool_name": str, "tool_call_id": str}

    @property
    def tool_name(self) -> str | None:
        return _str(self.raw.get("tool_name"))

    @property
    def tool_call_id(self) -> str | None:
        return _str(self.raw.get("tool_call_id"))

    @property
    def action_id(self) -> str | None:
        return _str(self.raw.get("action_id"))

    @property
    def rejection_reason(self) -> str:
        return _str(self.raw.get("rejection_reason")) or "User rejected the action"

    @property
    def rejection_source(self) -> str | None:
        return _str(self.raw.get("rejection_source"))

    @property
    def text(self) -> str:
        return f"Action rejected: {self.rejection_reason}"

    def llm_content(self) -> list[dict]:
        return [{"type": "text", "text": self.text}]


class AgentErrorView(EventView):
    """``AgentErrorEvent``: an error the agent reports back to the model as a tool result."""

    __slots__ = ()
    REQUIRED = {"error": str}

    @property
    def tool_name(self) -> str | None:
        return _str(self.raw.get("tool_name"))

    @property
    def tool_call_id(self) -> str | None:
        return _str(self.raw.get("tool_call_id"))

    @property
    def action_id(self) -> str | None:
        return None

    @property
    def error(self) -> str:
        return _str(self.raw.get("error")) or ""

    @property
    def text(self) -> str:
        return self.error

    @property
    def classification(self) -> dict | None:
        return _dict(self.raw.get("classification"))

    def llm_content(self) -> list[dict]:
        return [{"type": "text", "text": self.error}]


class CondensationView(EventView):
    """``Condensation``: events forgotten from the view and a summary inserted at an offset."""

    __slots__ = ()
    REQUIRED = {"forgotten_event_ids": list}

    @property
    def forgotten_event_ids(self) -> list[str]:
        return [x for x in _list(self.raw.get("forgotten_event_ids")) if isinstance(x, str)]

    @property
    def summary(self) -> str | None:
        return _str(self.raw.get("summary"))

    @property
    def summary_offset(self) -> int | None:
        v = self.raw.get("summary_offset")
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

    @property
    def llm_response_id(self) -> str | None:
        return _str(self.raw.get("llm_response_id"))


class ConversationErrorView(EventView):
    """``ConversationErrorEvent`` / ``ServerErrorEvent``: an error that ended or interrupted the run."""

    __slots__ = ()
    REQUIRED = {"code": str}

    @property
    def code(self) -> str | None:
        return _str(self.raw.get("code"))

    @property
    def detail(self) -> str | None:
        return _str(self.raw.get("detail"))

    @property
    def classification(self) -> dict | None:
        return _dict(self.raw.get("classification"))


class StateUpdateView(EventView):
    """``ConversationStateUpdateEvent``: one state field's new value (an artifact, never the head)."""

    __slots__ = ()
    REQUIRED = {"key": str}

    @property
    def key(self) -> str | None:
        return _str(self.raw.get("key"))

    @property
    def value(self) -> Any:
        return self.raw.get("value")


class SecurityAnalysisView(EventView):
    """``SecurityAnalysisEvent``: the analyzer's risk per action of a batch."""

    __slots__ = ()
    REQUIRED = {"risks": dict}

    @property
    def risks(self) -> dict:
        return _dict(self.raw.get("risks")) or {}

    @property
    def analyzer(self) -> str | None:
        return _str(self.raw.get("analyzer"))

    @property
    def policy(self) -> str | None:
        return _str(self.raw.get("policy"))


class HookExecutionView(EventView):
    """``HookExecutionEvent``: one hook command run and its outcome."""

    __slots__ = ()
    REQUIRED = {"hook_event_type": str}

    @property
    def hook_event_type(self) -> str | None:
        return _str(self.raw.get("hook_event_type"))

    @property
    def blocked(self) -> bool:
        return self.raw.get("blocked") is True

    @property
    def action_id(self) -> str | None:
        return _str(self.raw.get("action_id"))


class ACPToolCallView(EventView):
    """``ACPToolCallEvent``: a tool call made inside an external ACP agent."""

    __slots__ = ()
    REQUIRED = {"tool_call_id": str}

    @property
    def tool_call_id(self) -> str | None:
        return _str(self.raw.get("tool_call_id"))

    @property
    def title(self) -> str | None:
        return _str(self.raw.get("title"))

    @property
    def tool_kind(self) -> str | None:
        return _str(self.raw.get("tool_kind"))

    @property
    def status(self) -> str | None:
        return _str(self.raw.get("status"))

    @property
    def raw_input(self) -> Any:
        return self.raw.get("raw_input")

    @property
    def raw_output(self) -> Any:
        return self.raw.get("raw_output")

    @property
    def is_error(self) -> bool:
        return self.raw.get("is_error") is True

    @property
    def output_text(self) -> str:
        out = self.raw_output
        if isinstance(out, str):
            return out
        parts = []
        for block in _list(self.raw.get("content")):
            if isinstance(block, dict):
                inner = block.get("content")
                if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                    parts.append(inner["text"])
                elif isinstance(block.get("text"), str):
                    parts.append(block["text"])
        if parts:
            return "\n".join(parts)
        if out is None:
            return ""
        return orjson.dumps(out).decode()


class LLMCompletionLogView(EventView):
    """``LLMCompletionLogEvent``: a logged completion (``log_data`` is a JSON string)."""

    __slots__ = ()
    REQUIRED = {"log_data": str}

    def log_data(self) -> Any:
        v = self.raw.get("log_data")
        if isinstance(v, str):
            try:
                return orjson.loads(v)
            except orjson.JSONDecodeError:
                return None
        return v


_VIEW_BY_KIND: dict[str, type[EventView]] = {
    "SystemPromptEvent": SystemPromptView,
    "MessageEvent": MessageView,
    "ActionEvent": ActionView,
    "ObservationEvent": ObservationView,
    "UserRejectObservation": UserRejectView,
    "AgentErrorEvent": AgentErrorView,
    "Condensation": CondensationView,
    "ConversationErrorEvent": ConversationErrorView,
    "ServerErrorEvent": ConversationErrorView,
    "ConversationStateUpdateEvent": StateUpdateView,
    "SecurityAnalysisEvent": SecurityAnalysisView,
    "HookExecutionEvent": HookExecutionView,
    "ACPToolCallEvent": ACPToolCallView,
    "LLMCompletionLogEvent": LLMCompletionLogView,
}


def view(raw: dict) -> EventView:
    """The typed view for an event object (the plain envelope for unknown kinds)."""
    k = raw.get("kind")
    cls = _VIEW_BY_KIND.get(k, EventView) if isinstance(k, str) else EventView
    return cls(raw)


class StateView(ObjectView):
    """``base_state.json`` (ConversationState): agent, workspace, status, tree head, stats."""

    __slots__ = ()

    @property
    def agent(self) -> dict:
        return _dict(self.get("agent")) or {}

    @property
    def agent_kind(self) -> str | None:
        return _str(self.agent.get("kind"))

    @property
    def llm(self) -> dict:
        return _dict(self.agent.get("llm")) or {}

    @property
    def model(self) -> str | None:
        return _str(self.llm.get("model"))

    @property
    def usage_id(self) -> str | None:
        return _str(self.llm.get("usage_id"))

    @property
    def reasoning_effort(self) -> str | None:
        return _str(self.llm.get("reasoning_effort"))

    @property
    def working_dir(self) -> str | None:
        ws = _dict(self.get("workspace")) or {}
        return _str(ws.get("working_dir"))

    @property
    def usage_to_metrics(self) -> dict:
        stats = _dict(self.get("stats")) or {}
        return _dict(stats.get("usage_to_metrics")) or {}
