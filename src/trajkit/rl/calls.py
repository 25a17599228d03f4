"""Captured model calls, normalized: what a training turn is made from.

A :class:`ModelCall` is one call an agent made to an OpenAI-compatible
server as a capture recorded it: the request (messages, tools), the answer
(message, tool calls, finish reason, usage), the generated token ids and
their logprobs, and the prompt token ids when the server returned them, each
with the member it was found in. :func:`parse_call` builds one from a
captured record without ever raising (odd members become ``problems``);
:func:`classify` marks which calls are the agent's own turns.

Formats that hold captured calls (:mod:`trajkit.formats.rollout_trace`)
parse them here; :mod:`trajkit.rl.turns` builds training turns from them and
:mod:`trajkit.rl.proxy` reads token ids with :func:`parse_token_id`. This
module imports nothing from ``trajkit.formats``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..diagnostics import ERROR, INFO, WARNING
from ..jsonio import MISSING, loads
from ..model import ToolCall

#: ``token_id:<n>`` as vLLM writes it with ``--return-tokens-as-token-ids``.
#: A strict prefix match: at least one fork appends more data after the number
#: (opencode.md §2.3).
TOKEN_ID_RE = re.compile(r"^token_id:(\d+)")


#: Call purposes. ``agent``: a turn of the task conversation (the anchor rule);
#: ``title`` / ``summary``: bookkeeping calls; ``other``: a tool-less or
#: differently-prompted call that is not recognised.
AGENT, TITLE, SUMMARY, OTHER_PURPOSE = "agent", "title", "summary", "other"


# ---------------------------------------------------------------- the call


@dataclass(slots=True)
class ModelCall:
    """One captured model call, normalized: what was asked (the request,
    its ``messages`` and ``tools``), what came back (the assistant
    ``message``, its text, reasoning and tool calls, ``finish_reason``,
    ``usage``), and the generated token ids and logprobs with where they
    were found.

    ``output_ids`` is None when the record carries no usable ids (they are
    never re-encoded from text); ``ids_source`` names the member they came
    from. ``logps`` is aligned with ``output_ids`` when ids come from logprob
    entries (a null logprob stays None); otherwise it is the recorded
    ``per_token_logps``. ``prompt_ids`` are the prompt tokens the server
    rendered, when the capture kept them.
    """

    index: int
    turn: Any
    request: dict[str, Any]
    messages: list[Any]
    tools: list[Any] | None
    system: Any
    response: dict[str, Any] | None
    message: dict[str, Any]
    content: str | None
    reasoning: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: dict[str, Any] | None
    response_id: str | None
    upstream_status: Any = None
    upstream_error: Any = None
    output_ids: list[int] | None = None
    ids_source: str | None = None
    logps: list[float | None] | None = None
    logps_source: str | None = None
    top_logprobs: list[Any] | None = None
    prompt_ids: list[int] | None = None
    prompt_ids_source: str | None = None
    purpose: str | None = None
    incomplete: bool = False
    problems: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """The upstream call failed: no choices came back."""
        return self.response is None or not (self.response.get("choices") or [])


def _as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def message_text(content: Any) -> str | None:
    """The text of a chat message's ``content`` (a string, or a list of parts)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                t = part.get("text")
                if isinstance(t, str):
                    out.append(t)
                elif part.get("type") not in (None, "text"):
                    out.append(f"[{part.get('type')}]")
        return "".join(out)
    return str(content)


def system_prompt(messages: list[Any]) -> Any:
    """The system prompt of a request: the content of its leading system
    message(s), as sent (a string, or a list when several)."""
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") in ("system", "developer"):
            out.append(m.get("content"))
        else:
            break
    if not out:
        return None
    return out[0] if len(out) == 1 else out


def first_system(messages: list[Any]) -> Any:
    """The content of a request's first system (or developer) message, None
    when it has none: what TRL's anchor rule compares. Later system messages
    (opencode sends each system part as its own message, and plugins append
    ones that change per call) do not count."""
    for m in messages:
        if isinstance(m, dict) and m.get("role") in ("system", "developer"):
            return m.get("content")
    return None


def _decode_args(arguments: Any) -> Any:
    if isinstance(arguments, str):
        value, d = loads(arguments)
        if value is not MISSING and d is None:
            return value
    return arguments


def tool_calls_of(message: dict[str, Any]) -> list[ToolCall]:
    """The tool calls of an assistant message (arguments decoded when they are JSON)."""
    out = []
    for tc in message.get("tool_calls") or []:
        if not isinstance(tc, dict):
            continue
        fn = _as_dict(tc.get("function"))
        name = fn.get("name") if isinstance(fn.get("name"), str) else str(fn.get("name") or "")
        out.append(ToolCall(name=name, arguments=_decode_args(fn.get("arguments")), call_id=tc.get("id")))
    return out


def parse_token_id(token: Any) -> int | None:
    """The id in a ``token_id:<n>`` token string, else None."""
    if isinstance(token, str):
        m = TOKEN_ID_RE.match(token)
        if m:
            try:
                return int(m.group(1))
            except ValueError:  # more digits than Python converts: not a token id
                return None
    return None


def _int_list(v: Any) -> list[int] | None:
    """``v`` when it is a non-empty list of non-negative ints (bools excluded)."""
    if isinstance(v, list) and v and set(map(type, v)) == {int} and min(v) >= 0:
        return list(v)
    return None


def _ids_from_tokens(tokens: list[Any]) -> list[int] | None:
    ids = [parse_token_id(t) for t in tokens]
    if ids and all(i is not None for i in ids):
        return ids  # type: ignore[return-value]
    return None


def _float_or_none(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
        return float(v)
    return None


def _align_entries(entries: list[Any], ids: list[int]) -> tuple[list[float | None], list[Any]] | None:
    """Logprobs placed on ``ids`` by matching each entry's ``token_id:N`` in
    order (entries may be missing, e.g. chunks a server dropped); None when
    the entries carry no ids or do not match in order."""
    logps: list[float | None] = [None] * len(ids)
    tops: list[Any] = [None] * len(ids)
    j = 0
    for e in entries:
        tid = parse_token_id(_as_dict(e).get("token"))
        if tid is None:
            return None
        while j < len(ids) and ids[j] != tid:
            j += 1
        if j == len(ids):
            return None
        logps[j] = _float_or_none(_as_dict(e).get("logprob"))
        tops[j] = _as_dict(e).get("top_logprobs")
        j += 1
    return logps, tops


def parse_call(record: dict[str, Any], index: int = 0) -> ModelCall:
    """Parse one captured call record (the OpenEnv ``TurnRecord`` shape a
    rollout trace holds: ``request``, ``response``, ``logprobs``,
    ``completion_tokens``, ``completion_token_ids``, ``per_token_logps``,
    ``finish_reason``, ...). Never raises; odd members become ``problems``
    (``(code, severity, message)``) for the caller to report.

    Token ids come from, in order: ``completion_token_ids``, the ``token_id:N``
    strings of ``completion_tokens``, the ``token`` of each ``logprobs`` entry,
    the response's ``choices[0].logprobs.content``, and ``choices[0].token_ids``
    (a server asked for ``return_token_ids``). Output text is never encoded.
    """
    request = _as_dict(record.get("request"))
    messages = request.get("messages") if isinstance(request.get("messages"), list) else []
    tools = request.get("tools") if isinstance(request.get("tools"), list) and request.get("tools") else None
    response = record.get("response") if isinstance(record.get("response"), dict) else None
    choices = (response or {}).get("choices")
    choice = _as_dict(choices[0]) if isinstance(choices, list) and choices else {}
    message = _as_dict(choice.get("message"))
    content = message_text(message.get("content"))
    reasoning = message.get("reasoning") if isinstance(message.get("reasoning"), str) else None
    if reasoning is None and isinstance(message.get("reasoning_content"), str):
        reasoning = message["reasoning_content"]
    finish = record.get("finish_reason", choice.get("finish_reason"))
    usage = (response or {}).get("usage")
    info = ModelCall(
        index=index,
        turn=record.get("turn"),
        request=request,
        messages=messages,
        tools=tools,
        system=system_prompt(messages),
        response=response,
        message=message,
        content=content,
        reasoning=reasoning,
        tool_calls=tool_calls_of(message),
        finish_reason=finish if isinstance(finish, str) else None,
        usage=usage if isinstance(usage, dict) else None,
        response_id=(response or {}).get("id") if isinstance((response or {}).get("id"), str) else None,
        upstream_status=(response or {}).get("upstream_status"),
        upstream_error=(response or {}).get("upstream_error"),
    )
    if response is None:
        info.problems.append(("rollout.no-response", ERROR, "the record has no response object"))
    elif response.get("stream_incomplete") and not info.failed:
        info.incomplete = True
        info.problems.append((
            "rollout.stream-incomplete",
            WARNING,
            "the streamed answer broke off before its end"
            + (f" ({response['upstream_error']})" if response.get("upstream_error") else "")
            + "; what arrived was kept",
        ))

    # --- output ids, in order of preference
    entries = record.get("logprobs")
    if not isinstance(entries, list):
        entries = None
    resp_entries = _as_dict(choice.get("logprobs")).get("content")
    if not isinstance(resp_entries, list):
        resp_entries = None
    ids = _int_list(record.get("completion_token_ids"))
    if ids is not None:
        info.output_ids, info.ids_source = ids, "completion_token_ids"
    if info.output_ids is None and isinstance(record.get("completion_tokens"), list):
        ids = _ids_from_tokens(record["completion_tokens"])
        if ids is not None:
            info.output_ids, info.ids_source = ids, "completion_tokens"
    for name, ents in (("logprobs", entries), ("response.logprobs", resp_entries)):
        if info.output_ids is None and ents:
            ids = _ids_from_tokens([_as_dict(e).get("token") for e in ents])
            if ids is not None:
                info.output_ids, info.ids_source = ids, name
    if info.output_ids is None:
        ids = _int_list(choice.get("token_ids"))
        if ids is not None:
            info.output_ids, info.ids_source = ids, "response.token_ids"
    if info.output_ids is None and not info.failed:
        toks = record.get("completion_tokens") or [(_as_dict(e)).get("token") for e in (entries or resp_entries or [])]
        if toks:
            info.problems.append((
                "rollout.token-ids-unparsed",
                WARNING,
                f"{len(toks)} output tokens are text, not token_id:N (first {str(toks[0])[:40]!r}); "
                "the server needs --return-tokens-as-token-ids; text is never re-encoded",
            ))
        else:
            info.problems.append(("rollout.no-token-ids", WARNING, "the record carries no output token ids or logprobs"))

    # --- logprobs aligned with the ids when they came from logprob entries
    ents = entries if entries else resp_entries
    aligned = _align_entries(ents, info.output_ids) if ents and info.output_ids is not None else None
    if ents and info.output_ids is not None and len(ents) == len(info.output_ids):
        info.logps = [_float_or_none(_as_dict(e).get("logprob")) for e in ents]
        info.logps_source = "logprobs" if entries else "response.logprobs"
        info.top_logprobs = [_as_dict(e).get("top_logprobs") for e in ents]
    elif aligned is not None:
        info.logps, info.top_logprobs = aligned
        info.logps_source = ("logprobs" if entries else "response.logprobs") + " (aligned by token id)"
    elif isinstance(record.get("per_token_logps"), list) and record["per_token_logps"]:
        info.logps = [_float_or_none(x) for x in record["per_token_logps"]]
        info.logps_source = "per_token_logps"
    elif ents:
        info.logps = [_float_or_none(_as_dict(e).get("logprob")) for e in ents]
        info.logps_source = "logprobs" if entries else "response.logprobs"

    # --- prompt ids, when the server returned them (vLLM return_token_ids)
    for name, v in (
        ("prompt_token_ids", record.get("prompt_token_ids")),
        ("prompt_ids", record.get("prompt_ids")),
        ("response.prompt_token_ids", (response or {}).get("prompt_token_ids")),
    ):
        ids = _int_list(v)
        if ids is not None:
            info.prompt_ids, info.prompt_ids_source = ids, name
            break
    purpose = record.get("purpose")
    if isinstance(purpose, str) and purpose:
        info.purpose = purpose
    return info


#: Codes ``trajkit proxy`` writes in a record's ``proxy_diagnostics`` (see docs/rl.md).
PROXY_CODES = frozenset({
    "proxy.upstream-malformed", "proxy.tool-call-index", "proxy.choice-index", "proxy.event-too-large",
    "proxy.request-not-edited", "proxy.bad-rollout", "proxy.rollout-unwritable", "proxy.internal-error",
})


def proxy_notes(record: dict[str, Any]) -> list[tuple[str, str, str]]:
    """What the capture proxy noted about a call (its ``proxy_diagnostics``)
    as ``(code, severity, message)``; a code it does not know becomes
    ``rollout.proxy-note``."""
    notes = record.get("proxy_diagnostics")
    out = []
    for n in notes if isinstance(notes, list) else []:
        if not isinstance(n, dict):
            continue
        code = n.get("code")
        sev = n.get("severity") if n.get("severity") in (ERROR, WARNING, INFO) else WARNING
        msg = str(n.get("message"))[:500]
        count = n.get("count")
        if isinstance(count, int) and not isinstance(count, bool) and count > 1:
            msg += f" ({count} times)"
        if code not in PROXY_CODES:
            msg, code = f"{str(code)[:80]}: {msg}", "rollout.proxy-note"
        out.append((code, sev, "the proxy noted: " + msg))
    return out


def classify(calls: list[ModelCall]) -> Any:
    """Set each call's purpose by TRL's anchor rule and return the anchor
    system prompt (None when no call has both messages and tools).

    An explicit ``purpose`` in the record wins. Otherwise a call is ``agent``
    when it has messages and tools and its first system message equals that
    of the first such call (TRL's ``_turns_from_trace`` seed rule: later
    system messages may change per call); ``title`` when its system prompt
    starts like opencode's title generator; ``summary`` when it asks to
    summarise; else ``other``.
    """
    anchor = MISSING
    for c in calls:
        if c.messages and c.tools:
            anchor = first_system(c.messages)
            break
    for c in calls:
        if c.purpose:
            continue
        sys_text = message_text(c.system) if not isinstance(c.system, list) else " ".join(
            message_text(x) or "" for x in c.system
        )
        low = (sys_text or "").lower()
        if anchor is not MISSING and c.messages and c.tools and first_system(c.messages) == anchor:
            c.purpose = AGENT
        elif "title generator" in low or (not c.tools and "title" in low[:200]):
            c.purpose = TITLE
        elif "summar" in low[:400] or "compact" in low[:400]:
            c.purpose = SUMMARY
        else:
            c.purpose = OTHER_PURPOSE
    return None if anchor is MISSING else anchor
