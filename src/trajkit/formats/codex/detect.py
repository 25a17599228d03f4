"""Recognising the format's files (imported by detection; kept free of the reader)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...reading.probe import HEAD_LINES, NOT_DECODED, HeadLines, Probe, has_u_escape
from ...registry import STRONG, WEAK, Match, Reject

NAME = "codex"

#: Rollout line types (``type`` of a ``{timestamp, type, payload}`` line).
ROLLOUT_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted",
                           "world_state", "inter_agent_communication", "inter_agent_communication_metadata"})
#: ``response_item`` payload types that are model output.
_MODEL_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                          "tool_search_call", "image_generation_call"})
_CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"})
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output",
                           "local_shell_call_output"})
#: exec ``item`` types that are one action step each.
_EXEC_ACTIONS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"})
#: The start of user messages the harness injects (context, not the user's prompt).
INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "<permissions instructions>", "# AGENTS.md",
                     "<INSTRUCTIONS>", "<developer_instructions>", "<turn_aborted>", "<skill")
#: How deep sub-agent threads are followed.
MAX_SUBAGENT_DEPTH = 4
_HEAD = 1 << 16
assert HEAD_LINES >= 40  # the probe's shared lines hold every line shape_of looks at
_DAY_DIR = re.compile(r"^\d{4}$|^\d{2}$")


# ---------------------------------------------------------------- detection


def _classify_line(v: Any) -> str | None:
    """``rollout``, ``exec``, ``exec-legacy`` or None for one decoded line."""
    if not isinstance(v, dict):
        return None
    t = v.get("type")
    if isinstance(t, str):
        if t in ROLLOUT_TYPES and "payload" in v:
            return "rollout"
        if "." in t and (t.startswith(("thread.", "turn.", "item.")) or t == "error"):
            return "exec"
        if t == "error" and "message" in v:
            return "exec"
    if isinstance(v.get("msg"), dict) and "id" in v and isinstance(v["msg"].get("type"), str):
        return "exec-legacy"
    if v.get("record_type") == "state":
        return "rollout"
    return None


#: What a line needs for :func:`_classify_line` to give a shape, as JSON writes
#: it: a ``type`` member whose value is a rollout type, an exec type's prefix or
#: ``error`` (one search for all of them), else a ``msg`` or ``record_type`` member.
_SHAPE_TYPE = re.compile(rb'"type"\s*:\s*"(?:' + b"|".join(re.escape(t.encode()) for t in sorted(ROLLOUT_TYPES))
                         + rb'|error|thread\.|turn\.|item\.)')


#: :data:`_SHAPE_TYPE` without its first quote: the regex engine looks for a
#: pattern's first byte, and ``t`` is rarer in JSON than ``"``.
_SHAPE_TYPE_TAIL = re.compile(_SHAPE_TYPE.pattern[1:])


def _has_shape_type(data: bytes) -> bool:
    """``_SHAPE_TYPE.search(data) is not None``: a match of the pattern
    without its first quote, preceded by one. A tenth fewer instructions on
    the heads of other harnesses' JSON Lines than the full pattern's search."""
    search = _SHAPE_TYPE_TAIL.search
    m = search(data)
    while m is not None:
        i = m.start()
        if i and data[i - 1] == 0x22:  # '"'
            return True
        m = search(data, i + 1)
    return False


def may_have_shape(data: bytes) -> bool:
    """False when :func:`shape_of` of a head holding ``data`` is certainly None:
    none of its lines can hold what a shape needs (:data:`_SHAPE_TYPE`, ``"msg"``,
    ``"record_type"``), nor any key or value spelled with ``\\u`` escapes (the
    one other way to write them). Three searches instead of decoding up to 40
    lines: most ``.jsonl`` files detection meets are another harness's."""
    return (_has_shape_type(data) or b'"msg"' in data or b'"record_type"' in data
            or has_u_escape(data))


def shape_of(head: HeadLines) -> str | None:
    """The record shape the first complete lines of a head show (``rollout``,
    ``exec``, ``exec-legacy``), or None. Lines that do not decode are skipped
    (a bad first line must not hide a session). ``head``: the file's first
    :data:`_HEAD` bytes as the probe's shared lines (:meth:`Probe.lines`)."""
    full = len(head.data) >= _HEAD
    value = head.value
    span = head.span
    for i in range(40):
        got = span(i)
        if got is None:
            break
        if got[2] and i and full:
            break  # the last one may be cut by the head
        v = value(i)
        if v is NOT_DECODED:
            continue
        got = _classify_line(v)
        if got is not None:
            return got
        if isinstance(v, dict) and ("sessionId" in v or "uuid" in v or "request" in v):
            return None  # another harness's lines
    return None


#: The sniff's constant answers (immutable: made once, not per file asked about).
_NOT_FILE = Reject("a Codex record is one file (a rollout or an exec stream), not a directory")
_NO_SHAPE = Reject("no Codex rollout line or exec event in the first lines")


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    p = str(candidate)  # the probe's key, made once (each probe call would make it again from the Path)
    if not probe.is_file(p):
        return _NOT_FILE
    name = candidate.name
    if name.endswith(".jsonl.zst"):
        if name.startswith("rollout-"):
            return Match(candidate, fingerprint, WEAK, "a compressed Codex rollout (rollout-*.jsonl.zst)")
        return Reject("a .zst file not named rollout-*")
    if name.endswith(".json") and name.startswith("rollout-"):
        head = probe.head(p, _HEAD).lstrip()
        if head.startswith(b"{") and b'"items"' in head and b'"session"' in head:
            return Match(candidate, fingerprint, STRONG, "a TypeScript-era Codex session: {session, items}")
        return Reject("not a {session, items} document")
    if not may_have_shape(probe.head(p, _HEAD)):
        return _NO_SHAPE
    shape = shape_of(probe.lines(p, _HEAD))
    if shape == "rollout":
        return Match(candidate, fingerprint, STRONG, "lines of {timestamp, type, payload} with Codex rollout types")
    if shape == "exec":
        return Match(candidate, fingerprint, STRONG, "codex exec --json events (thread./turn./item.)")
    if shape == "exec-legacy":
        return Match(candidate, fingerprint, WEAK, "{id, msg} lines: codex exec --json before 2025-09-30")
    return _NO_SHAPE
