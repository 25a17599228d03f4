"""Recognising the format's files (imported by detection; kept free of the reader)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from ...reading.probe import HeadLines, Probe, has_u_escape
from ...registry import STRONG, WEAK, Match, Reject

NAME = "gemini-cli"
_HEAD = 1 << 16
#: Message types that are UI notices, not conversation turns.
NOTICES = frozenset({"info", "warning", "error"})
#: The start of a user message the CLI injects (context, not the prompt).
INJECTED_PREFIXES = ("<session_context>", "<environment_context>", "This is the Gemini CLI. We are setting up the context")
MAX_SUBAGENT_DEPTH = 4


# ---------------------------------------------------------------- detection


def _decoded(lines: HeadLines, i: int) -> Any:
    """``orjson.loads(lines.parts[i])`` when that gives a dict, else None, from
    the probe's shared decoding of the stripped line: the two differ only for
    a line holding \\x0b or \\x0c (stripped, but no JSON whitespace: the raw
    line does not decode)."""
    raw = lines.parts[i]
    if b"\x0b" in raw or b"\x0c" in raw:
        return None
    v = lines.value(i)
    return v if isinstance(v, dict) else None


def _own(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


#: A top-level ``"type": "user"`` member, as JSON writes it (any spacing).
_USER_TYPE = re.compile(rb'"type"\s*:\s*"user"')
#: What ``\s`` matches in a bytes pattern.
_WS = b" \t\n\r\x0b\x0c"


def _has_user_type(head: bytes) -> bool:
    """``_USER_TYPE.search(head) is not None``, found from the ``"user"``
    strings (a few per head) looking back over the spacing for ``"type" :``,
    instead of the regex trying every ``"type"`` (a dozen per line of most
    JSON): a fifth of the instructions on other harnesses' heads. Spacing
    longer than the 32 bytes looked back at goes to the regex."""
    find = head.find
    i = find(b'"user"')
    while i >= 0:
        lo = i - 32 if i > 32 else 0
        before = head[lo:i].rstrip(_WS)
        if before[-1:] == b":":
            before = before[:-1].rstrip(_WS)
            if before.endswith(b'"type"'):
                return True
            if lo and len(before) < 6:
                return _USER_TYPE.search(head) is not None  # the window ends inside the spacing or the key
        elif lo and not before:
            return _USER_TYPE.search(head) is not None
        i = find(b'"user"', i + 1)
    return False


def _may_match(head: bytes) -> bool:
    """False when :func:`sniff` certainly finds nothing in ``head``: every
    match needs ``sessionId`` with ``projectHash``, a ``"gemini"`` type, or a
    ``"type": "user"`` line with ``content`` (unless keys are spelled with
    ``\\u`` escapes). A few searches instead of cutting and decoding the lines
    of another harness's file."""
    return ((b"projectHash" in head and b"sessionId" in head) or b'"gemini"' in head
            or (b'"content"' in head and _has_user_type(head)) or has_u_escape(head))


#: The sniff's constant answers (immutable: made once, not per file asked about).
_NOT_FILE = Reject("a Gemini CLI session is one file, not a directory")
_NOT_OBJECT = Reject("does not start with a JSON object")
_NOT_GEMINI = Reject("no sessionId + projectHash, no gemini messages")


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    p = str(candidate)  # the probe's key, made once (each probe call would make it again from the Path)
    if not probe.is_file(p):
        return _NOT_FILE
    head = probe.head(p, _HEAD)
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body.startswith(b"{"):
        return _NOT_OBJECT
    if not _may_match(head):
        return _NOT_GEMINI
    # the head's lines as other formats' sniffs decoded them (Probe.lines), unless a BOM or blank lines came
    # first (lstrip made a copy: the lines are counted from the body)
    shared = probe.lines(p, _HEAD) if body is head else None
    lines = shared.parts if shared is not None else body.split(b"\n", 40)
    first = lines[0]
    v = None
    if b"projectHash" in first or b"\\u" in first:  # the test below needs the key (unless written with \u escapes)
        v = _decoded(shared, 0) if shared is not None else _own(first)
    if isinstance(v, dict) and isinstance(v.get("sessionId"), str) and isinstance(v.get("projectHash"), str):
        if isinstance(v.get("messages"), list) and b"\n" not in body.rstrip():
            return Match(candidate, fingerprint, STRONG, "one JSON session object with sessionId, projectHash and messages")
        return Match(candidate, fingerprint, STRONG, "first line is Gemini CLI session metadata (sessionId, projectHash)")
    # a JSONL log whose first line is damaged: the metadata or a message further on (lines 1..39)
    for i in range(1, min(len(lines), 40)):
        raw = lines[i]
        if raw[:1] != b"{" and raw.lstrip()[:1] != b"{":
            continue  # no object starts the line, so it decodes to no dict (a pretty-printed session's lines)
        if b"projectHash" not in raw and b'"id"' not in raw and b"\\u" not in raw:
            continue  # neither test below can pass on this line (keys written plainly)
        x = _decoded(shared, i) if shared is not None else _own(raw)
        if isinstance(x, dict) and isinstance(x.get("sessionId"), str) and isinstance(x.get("projectHash"), str):
            return Match(candidate, fingerprint, STRONG, "a line holds Gemini CLI session metadata (sessionId, projectHash)")
        if isinstance(x, dict) and isinstance(x.get("id"), str) and x.get("type") in ("user", "gemini") and "content" in x:
            return Match(candidate, fingerprint, WEAK, "lines are Gemini CLI message records (id, type user/gemini, content)")
    if b'"sessionId"' in head and b'"projectHash"' in head and b'"messages"' in head:
        return Match(candidate, fingerprint, STRONG, "a JSON session with sessionId, projectHash and messages")
    if b'"messages"' in head and (b'"type": "gemini"' in head or b'"type":"gemini"' in head):
        return Match(candidate, fingerprint, WEAK, "a JSON object whose messages include type gemini")
    return _NOT_GEMINI
