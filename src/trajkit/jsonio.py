"""Lenient JSON: fast decoding that turns bad input into diagnostics.

Every function here returns what it could read plus the diagnostics for what
it could not; none raises on bad data. Reading files is
:mod:`trajkit.reading.io`'s job (capped, regular files only); this module
decodes bytes and writes trajkit's own JSON. Decoding uses ``orjson``; input that
orjson refuses but that is still meaningful JSON-ish text (``NaN``,
``Infinity``, integers beyond 64 bits, a UTF-8 byte-order mark) is decoded by
the standard library and flagged, so nothing readable is lost.

Diagnostic codes emitted here (see ``docs/diagnostics.md``):
``file.empty``, ``json.not-utf8``, ``json.invalid``, ``json.nonstandard``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from .diagnostics import ERROR, INFO, Diagnostic

DEFAULT_MAX_FILE_BYTES = 1 << 30


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: Returned when nothing could be decoded (distinct from a decoded ``null``).
MISSING: Any = _Missing()


def _nonstandard(data: bytes | str) -> Any:
    text = data if isinstance(data, str) else data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    return json.loads(text)


def loads(data: bytes | str, file: str | None = None) -> tuple[Any, Diagnostic | None]:
    """Decode JSON leniently: the value (or MISSING) and a diagnostic if anything was odd."""
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError as e:
        first_error = str(e)
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if not raw.strip():
            return MISSING, Diagnostic("file.empty", "empty file, no JSON value", ERROR, file=file)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return MISSING, Diagnostic(
                "json.not-utf8", f"not UTF-8 at byte {e.start}: {e.reason}", ERROR, file=file, offset=e.start
            )
    elif not data.strip():
        return MISSING, Diagnostic("file.empty", "empty file, no JSON value", ERROR, file=file)
    try:
        value = _nonstandard(data)
    except (ValueError, RecursionError) as e:
        pos = getattr(e, "pos", None)
        return MISSING, Diagnostic("json.invalid", f"not valid JSON: {getattr(e, 'msg', first_error)}", ERROR, file=file, offset=pos)
    return value, Diagnostic(
        "json.nonstandard",
        f"decoded with the tolerant decoder (NaN/Infinity, a byte-order mark or a huge integer): {first_error}",
        INFO,
        file=file,
    )


def _make_dumps_python():
    make = getattr(json.encoder, "c_make_encoder", None)
    plain = json.JSONEncoder(ensure_ascii=False)
    if make is None:  # pragma: no cover - no C accelerator
        return plain.encode
    # The C encoder json.dumps builds on every call, built once with the same
    # settings; no cycle markers (decoded JSON holds no cycles).
    one_shot = make(None, plain.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    encode_str = json.encoder.encode_basestring

    def dumps_python(obj: Any) -> str:
        """JSON text exactly as Python's ``json.dumps(obj, ensure_ascii=False)``
        writes it (default separators ``", "`` and ``": "``), for decoded JSON
        values (which hold no cycles)."""
        if isinstance(obj, str):
            return encode_str(obj)
        return "".join(one_shot(obj, 0))

    return dumps_python


dumps_python = _make_dumps_python()


def dumps(obj: Any, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """Fast compact (or 2-space indented) JSON bytes for trajkit's own output."""
    opt = orjson.OPT_NON_STR_KEYS
    if indent:
        opt |= orjson.OPT_INDENT_2
    if sort_keys:
        opt |= orjson.OPT_SORT_KEYS
    try:
        return orjson.dumps(obj, option=opt, default=_default)
    except TypeError:
        # Values orjson refuses (integers beyond 64 bits): fall back to the stdlib.
        return json.dumps(obj, ensure_ascii=False, indent=2 if indent else None, sort_keys=sort_keys, default=_default).encode()


def _default(obj: Any) -> Any:
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def tolerant_int(value: Any, limit: int = 1 << 53) -> tuple[int, bool]:
    """An integer count read leniently: ``(value, flagged)``.

    Absent, negative, fractional, non-numeric or absurd (``> limit``) values
    read as 0 and are flagged; an integral float such as ``12.0`` reads as 12,
    flagged because it was not written as an integer.
    """
    if isinstance(value, bool) or value is None:
        return 0, value is not None
    if isinstance(value, int):
        if value < 0 or value > limit:
            return 0, True
        return value, False
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value < 0 or value > limit:
            return 0, True
        if value.is_integer():
            return int(value), True
        return 0, True
    return 0, True


def list_element_lines(data: bytes, n: int) -> list[tuple[int, int]] | None:
    """1-based (first, last) line of each top-level element of a JSON list.

    Fast path for ``json.dump(..., indent=N)`` files, where every top-level
    element opens on a line that is exactly ``<indent>{`` and closes on one
    that starts ``<indent>}``; a tokenizing scan otherwise.
    """
    if n == 0:
        return []
    i = data.find(b"[")
    j = data.find(b"{", i + 1)
    if i < 0 or j < 0:
        return None
    nl = data.rfind(b"\n", i, j)
    if nl < 0 or data[nl + 1 : j].strip():
        return _scan_element_lines(data, n)
    indent = data[nl + 1 : j]
    open_pat = b"\n" + indent + b"{"
    close_pat = b"\n" + indent + b"}"
    out: list[tuple[int, int]] = []
    pos = nl
    line = 1 + data.count(b"\n", 0, nl)
    find, count = data.find, data.count
    while True:
        a = find(open_pat, pos)
        if a < 0:
            break
        line += count(b"\n", pos, a)
        start_line = line + 1
        b = find(close_pat, a + 1)
        if b < 0:
            return _scan_element_lines(data, n)
        line += count(b"\n", a, b)
        out.append((start_line, line + 1))
        pos = b
    if len(out) != n:
        return _scan_element_lines(data, n)
    return out


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}\n]')


def _scan_element_lines(data: bytes, n: int) -> list[tuple[int, int]] | None:
    out: list[tuple[int, int]] = []
    depth = 0
    line = 1
    start = 0
    for m in _TOKEN.finditer(data):
        t = m.group()
        c = t[:1]
        if c == b'"':
            continue
        if c == b"\n":
            line += 1
        elif c in (b"[", b"{"):
            depth += 1
            if depth == 2:
                start = line
        else:
            if depth == 2:
                out.append((start, line))
            depth -= 1
    return out if len(out) == n else None
