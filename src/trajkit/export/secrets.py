"""Credentials in exported text: found by pattern, reported by kind and
place (never by value), and replaced on request.

One compiled alternation covers every kind, in a text form (for the decoded
strings of an output) and a bytes form (a quick first pass over a whole
output file: only a file that matches is walked string by string to locate
what matched). Every branch starts at a fixed literal and its repeats are
possessive or bounded, so a search runs in time linear in the text (no
catastrophic backtracking on hostile input).

Kinds: ``openai-api-key`` (``sk-proj-…``, ``sk-svcacct-…``, ``sk-admin-…``,
legacy ``sk-`` + 32 or more letters and digits), ``anthropic-api-key``
(``sk-ant-…``), ``aws-access-key-id`` (``AKIA…``/``ASIA…``),
``github-token`` (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``,
``github_pat_``), ``bearer-token`` (the value after ``Authorization: Bearer``,
or after ``Bearer`` when it holds a digit), ``private-key`` (a PEM
``-----BEGIN … PRIVATE KEY-----`` block).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import orjson

#: group name -> kind reported. A kind whose group is empty (a marker at the
#: end of its branch) covers the whole match; the bearer groups hold just the
#: token (``Authorization: Bearer`` stays readable).
KINDS: dict[str, str] = {
    "anthropic": "anthropic-api-key",
    "openai": "openai-api-key",
    "openai_legacy": "openai-api-key",
    "aws": "aws-access-key-id",
    "github": "github-token",
    "bearer": "bearer-token",
    "bearer_lc": "bearer-token",
    "bearer2": "bearer-token",
    "pem": "private-key",
}
_TOKEN_GROUPS = frozenset({"bearer", "bearer_lc", "bearer2"})

# Every branch opens with a literal character and checks what comes before
# it with a fixed-width lookbehind after that literal; repeats are possessive
# or bounded.
_SOURCE = (
    # Anthropic before OpenAI: both start with sk-.
    r"sk-(?<![A-Za-z0-9_-]sk-)(?:ant-[A-Za-z0-9]{2,20}-[A-Za-z0-9_-]{20,}+(?P<anthropic>)"
    r"|(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}+(?P<openai>)"
    r"|[A-Za-z0-9]{32,}+(?![_-])(?P<openai_legacy>))"
    r"|A(?<![A-Za-z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])(?P<aws>)"
    r"|g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,}+|ithub_pat_[A-Za-z0-9_]{22,}+)(?P<github>)"
    # Authorization: Bearer X (also "authorization":"Bearer X" in serialized JSON)
    r"|A(?i:uthorization)[\s\"'\\]{0,3}[:=][\s\"'\\]{0,3}(?i:bearer)[ \t]++(?P<bearer>[A-Za-z0-9._~+/=-]{8,}+)"
    r"|a(?i:uthorization)[\s\"'\\]{0,3}[:=][\s\"'\\]{0,3}(?i:bearer)[ \t]++(?P<bearer_lc>[A-Za-z0-9._~+/=-]{8,}+)"
    # a bare Bearer X, when X looks like a token (holds a digit) rather than a word
    r"|B(?<![A-Za-z]B)earer[ \t]++(?=[A-Za-z._~+/=-]{0,512}[0-9])(?P<bearer2>[A-Za-z0-9._~+/=-]{16,}+)"
    # PEM private key: the body stops at the next "-----", so it is scanned once
    # (a \n escape counts as a line break: keys inside serialized JSON text)
    r"|-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY-----(?:[A-Za-z0-9+/=\s:,.()]|\\[nrt]|-(?!----))*+"
    r"(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY-----)?(?P<pem>)"
)

SECRET_RE = re.compile(_SOURCE)
SECRET_RE_BYTES = re.compile(_SOURCE.encode())

#: Fixed strings one of which every match holds: a text holding none of them
#: is skipped with a few substring searches (much faster than the regex).
ANCHORS = ("sk-", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "earer", "EARER", "-----BEGIN")
_ANCHORS_B = tuple(a.encode() for a in ANCHORS)


def maybe(text: str) -> bool:
    """False when ``text`` certainly holds no secret."""
    return any(a in text for a in ANCHORS)


def maybe_bytes(data: bytes) -> bool:
    return any(a in data for a in _ANCHORS_B)


#: a mapping key whose string value is an authorization header value
_AUTH_KEY = re.compile(r"(?i)^(?:proxy-)?authorization$")
_AUTH_VALUE = re.compile(r"(?i)^\s*bearer[ \t]++(?P<bearer>[A-Za-z0-9._~+/=-]{8,}+)")

REPLACEMENT = "[REDACTED:{kind}]"


def _kind(m: re.Match) -> tuple[str, int, int]:
    name = m.lastgroup or ""
    if name in _TOKEN_GROUPS:
        return KINDS[name], m.start(name), m.end(name)
    return KINDS.get(name, "secret"), m.start(), m.end()


def find(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of every secret in ``text``."""
    if maybe(text):
        for m in SECRET_RE.finditer(text):
            yield _kind(m)


def find_bytes(data: bytes) -> Iterator[tuple[str, int, int]]:
    """:func:`find` over bytes (a serialized file)."""
    if maybe_bytes(data):
        for m in SECRET_RE_BYTES.finditer(data):
            yield _kind(m)


def redact(text: str, auth_value: bool = False) -> tuple[str, int]:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``, and how
    many were replaced. ``auth_value``: ``text`` is the value of an
    ``Authorization`` member (``Bearer X``)."""
    count = 0
    if not maybe(text):
        if not auth_value:
            return text, 0

    def sub(m: re.Match) -> str:
        nonlocal count
        kind, start, end = _kind(m)
        count += 1
        s, e = m.span()
        whole = m.group(0)
        return whole[: start - s] + REPLACEMENT.format(kind=kind) + whole[end - s:]

    out = SECRET_RE.sub(sub, text)
    if auth_value:
        m = _AUTH_VALUE.match(out)
        if m and not m.group("bearer").startswith("[REDACTED"):
            out = out[: m.start("bearer")] + REPLACEMENT.format(kind="bearer-token") + out[m.end("bearer"):]
            count += 1
    return out, count


def is_auth_key(key: Any) -> bool:
    return isinstance(key, str) and _AUTH_KEY.match(key) is not None


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def scan_value(obj: Any, pointer: str = "") -> list[dict[str, Any]]:
    """Secrets in the strings of a JSON value: ``[{kind, pointer}]`` with an
    RFC 6901 pointer to the string that holds each one (keys are checked too)."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[Any, str, bool]] = [(obj, pointer, False)]
    while stack:
        v, ptr, auth = stack.pop()
        if isinstance(v, str):
            kinds = [k for k, _, _ in find(v)]
            if auth and not kinds and _AUTH_VALUE.match(v):
                kinds = ["bearer-token"]
            found.extend({"kind": k, "pointer": ptr} for k in kinds)
        elif isinstance(v, dict):
            items = list(v.items())
            for k, x in reversed(items):
                sub = f"{ptr}/{_escape(str(k))}"
                if isinstance(k, str):
                    found.extend({"kind": kk, "pointer": sub, "in": "key"} for kk, _, _ in find(k))
                stack.append((x, sub, is_auth_key(k)))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{ptr}/{i}", False))
    return found


def scan_json_bytes(data: bytes, obj: Any = None) -> list[dict[str, Any]]:
    """Secrets in a serialized JSON document: nothing when the quick pass over
    the bytes finds none; else each located by pointer (``obj`` is the
    document, parsed again when not given). A match the string walk cannot
    place (one spanning JSON syntax) is reported with its byte offset."""
    hits = list(find_bytes(data))
    if not hits:
        return []
    if obj is None:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return [{"kind": k, "offset": s} for k, s, _ in hits]
    found = scan_value(obj)
    if not found:
        found = [{"kind": k, "offset": s} for k, s, _ in hits]
    return found


def scan_jsonl_bytes(data: bytes) -> list[dict[str, Any]]:
    """Secrets in JSON Lines: each with its ``line`` (1-based) and pointer."""
    if not maybe_bytes(data) or SECRET_RE_BYTES.search(data) is None:
        return []
    found: list[dict[str, Any]] = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line or not maybe_bytes(line) or SECRET_RE_BYTES.search(line) is None:
            continue
        for f in scan_json_bytes(line):
            found.append({"line": n, **f})
    return found


def scan_text_bytes(data: bytes) -> list[dict[str, Any]]:
    """Secrets in plain text: each with its ``line`` (1-based)."""
    found: list[dict[str, Any]] = []
    for k, s, _ in find_bytes(data):
        found.append({"kind": k, "line": data.count(b"\n", 0, s) + 1})
    return found
