"""Lenient JSON: fast decoding that turns bad input into diagnostics.

Every function here returns what it could read plus the diagnostics for what
it could not; none raises on bad data. Reading files is
:mod:`trajkit.reading.io`'s job (capped, regular files only); this module
decodes bytes and writes trajkit's own JSON. Decoding uses ``orjson``; input that
orjson refuses but that is still meaningful JSON-ish text (``NaN``,
``Infinity``, integers beyond 64 bits, a UTF-8 byte-order mark) is decoded by
the standard library and flagged, so nothing readable is lost.

orjson accepts some input silently that must not pass unflagged: an integer
beyond 64 bits is read as a float (``123456789012345678901234567890`` would
become ``1.2345678901234568e+29``), a key written twice in one object keeps
its last value, and a value nested deeper than orjson writes back (255 levels)
cannot be exported. :func:`loads` excludes each cheaply after the fast decode
(:func:`suspicious`) and only on suspicion decodes again with the standard
library, keeping integers exact and reporting duplicate keys and deep nesting.

Diagnostic codes emitted here (see ``docs/diagnostics.md``):
``file.empty``, ``json.not-utf8``, ``json.invalid``, ``json.nonstandard``,
``json.big-integer``, ``json.duplicate-key``, ``json.too-deep``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from .diagnostics import ERROR, INFO, WARNING, Diagnostic

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


#: The spellings of an integer orjson may have read as a float (it keeps
#: every integer from -2**63 to 2**64-1): 20 digits or more, or a minus and
#: 19 or more (-9223372036854775809 has 19 digits). Searched for in a copy
#: where every digit is ``0``, a dot and a minus stay and every other byte is
#: ``x`` (a translate and two finds, several times faster than a regex): the
#: digits after a dot are a fraction's, not an integer's.
_NUMBER_BYTES = bytes(0x30 if 0x30 <= i <= 0x39 else (i if i in (0x2E, 0x2D) else 0x78) for i in range(256))
_INTEGER_RUN = b"x" + b"0" * 20
_NEGATIVE_RUN = b"-" + b"0" * 19
_INT_MIN = -(1 << 63)
_UINT_MAX = (1 << 64) - 1
_INDENT_2 = orjson.OPT_INDENT_2
#: Containers nested deeper than this are kept as their JSON text (orjson
#: writes at most 254 levels; exporters wrap values a few levels deeper).
MAX_DEPTH = 200


def suspicious(data: bytes, value: Any) -> bool:
    """Whether orjson's decode of ``data`` may have lost or bent something.

    Cheap checks, each a scan in C. orjson writes the value back (as
    ``json.dump(indent=2)`` lays it out when ``data`` opens that way,
    compact otherwise): it refuses nesting of 255 levels and more. When the
    input is that output byte for byte (compact JSON as the SDK and orjson
    write it, or ASCII written with ``indent=2``: the common cases), nothing
    was lost and no other check runs.

    Otherwise the input and that output must hold as many colons: outside
    strings a colon follows each key, inside strings a colon is the same
    character on both sides, or ``\\u003a`` in the input (counted as one);
    so a key written twice in one object, whose first value the decode
    dropped, leaves the output short of at least one colon.

    An integer beyond 64 bits is read by orjson as a float of magnitude at
    least 2**63 (an infinite one is refused), and orjson writes every float
    of magnitude 1e16 or more with an exponent (``1.2345678901234568e+29``):
    an output without ``e+`` held no such float, so no integer was bent.
    When it has one (a float that large, or ``e+`` in a string), the input is
    searched for a run of 20 digits not after a dot (a fraction's digits are
    no integer) or of 19 after a minus. A scalar document is suspicious when
    it decoded to a float. False means none of these can be the case.
    """
    t = type(value)
    if t is dict or t is list:
        try:
            out = orjson.dumps(value, option=_INDENT_2 if data[1:4] == b"\n  " and data[4:5] != b" " else 0)
        except TypeError:
            return True
        return suspicious_reencoded(data, out)
    # a scalar: an integer beyond 64 bits is read as a float
    return t is float


def suspicious_reencoded(data: bytes, out: bytes) -> bool:
    """:func:`suspicious` for a container once orjson wrote it back as
    ``out`` (for a caller that writes it back anyway, as JSON Lines do)."""
    n = len(out)
    if data.startswith(out) and (len(data) == n or not data[n:].strip()):
        return False
    colons = data.count(b":")
    if b"\\" in data and b"\\u003" in data:  # a memchr first: many files hold no escape
        colons += data.count(b"\\u003a") + data.count(b"\\u003A")
    if colons != out.count(b":"):
        return True
    if _no_exponent(out):
        return False
    numbers = data.translate(_NUMBER_BYTES)
    return _INTEGER_RUN in numbers or _NEGATIVE_RUN in numbers


def _no_exponent(out: bytes) -> bool:
    """Whether ``out`` holds no ``e+``. ``e`` is common in text, which makes
    a search for ``e+`` slow; a ``+`` is rare, and a one-byte find is a
    ``memchr``: look at the byte before each of the first few ``+``."""
    find = out.find
    i = find(b"+")
    for _ in range(16):
        if i < 0:
            return True
        if out[i - 1 : i] == b"e":
            return False
        i = find(b"+", i + 1)
    return i < 0 or out.find(b"e+", i - 1) < 0


def _deep_text(value: Any) -> str:
    """Compact JSON text of ``value`` at any depth (iterative, so nesting deeper
    than the recursion limit is written too)."""
    enc = json.encoder.encode_basestring
    out: list[str] = []
    stack: list[tuple[Any, bool, bool]] = []  # (iterator, is_dict, first)

    def scalar(x: Any) -> str:
        if isinstance(x, str):
            return enc(x)
        if x is None:
            return "null"
        if x is True:
            return "true"
        if x is False:
            return "false"
        if isinstance(x, float):
            return float.__repr__(x) if x == x and x not in (float("inf"), float("-inf")) else ("NaN" if x != x else ("Infinity" if x > 0 else "-Infinity"))
        return int.__repr__(x) if isinstance(x, int) else enc(str(x))

    def open_(x: Any) -> None:
        if isinstance(x, dict):
            out.append("{")
            stack.append((iter(x.items()), True, True))
        elif isinstance(x, list):
            out.append("[")
            stack.append((iter(x), False, True))
        else:
            out.append(scalar(x))

    open_(value)
    while stack:
        it, is_dict, first = stack[-1]
        nxt = next(it, _END)
        if nxt is _END:
            stack.pop()
            out.append("}" if is_dict else "]")
            continue
        if not first:
            out.append(",")
        else:
            stack[-1] = (it, is_dict, False)
        if is_dict:
            out.append(enc(str(nxt[0])) + ":")
            open_(nxt[1])
        else:
            open_(nxt)
    return "".join(out)


_END = object()


def _clip(value: Any, depth: int, counter: list[int]) -> Any:
    """``value`` with every container at :data:`MAX_DEPTH` replaced by its JSON text."""
    if depth >= MAX_DEPTH and isinstance(value, (dict, list)):
        counter[0] += 1
        return _deep_text(value)
    if isinstance(value, dict):
        return {k: _clip(v, depth + 1, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v, depth + 1, counter) for v in value]
    return value


def _careful(data: bytes, value: Any, file: str | None) -> tuple[Any, Diagnostic | None]:
    """Decode ``data`` again with the standard library, after :func:`suspicious`:
    integers exact, duplicate keys found, deep nesting clipped. ``value`` is
    orjson's decode, kept when the standard library cannot go as deep."""
    dups: list[str] = []
    bigs: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(items)
        if len(d) != len(items):
            seen: set[str] = set()
            for k, _ in items:
                if k in seen and k not in dups:
                    dups.append(k)
                seen.add(k)
        return d

    def parse_int(text: str) -> int:
        v = int(text)
        if v < _INT_MIN or v > _UINT_MAX:
            bigs.append(text)
        return v

    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_int=parse_int)
    except (ValueError, RecursionError):
        pass  # deeper than the standard library goes: orjson's value, clipped below
    diags: list[Diagnostic] = []
    if bigs:
        diags.append(Diagnostic(
            "json.big-integer",
            f"{len(bigs)} integer(s) beyond 64 bits (e.g. {bigs[0][:40]}) kept exact, not rounded to a float",
            INFO, file=file,
        ))
    if dups:
        offset = _duplicate_offset(data)
        diags.append(Diagnostic(
            "json.duplicate-key",
            f"an object names {', '.join(repr(k) for k in dups[:5])} more than once; the last value was kept",
            WARNING, file=file, offset=offset,
        ))
    try:
        orjson.dumps(value)
    except TypeError as e:
        if "Recursion" in str(e):
            counter = [0]
            value = _clip(value, 0, counter)
            diags.append(Diagnostic(
                "json.too-deep",
                f"nested deeper than {MAX_DEPTH} levels; {counter[0]} value(s) below that depth are kept as their JSON text",
                WARNING, file=file,
            ))
    if not diags:
        return value, None
    first = max(diags, key=lambda d: (d.severity == WARNING, d.code == "json.too-deep"))
    others = [d.message for d in diags if d is not first]
    if others:
        first.message += "; also: " + "; ".join(others)
    return value, first


_KEY_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"(?:\s*:)?|[\[\]{}]')


def _duplicate_offset(data: bytes) -> int | None:
    """Byte offset of the first key written a second time in the same object."""
    stack: list[set[bytes] | None] = []
    for m in _KEY_TOKEN.finditer(data):
        t = m.group()
        c = t[:1]
        if c == b"{":
            stack.append(set())
        elif c == b"[":
            stack.append(None)
        elif c in (b"}", b"]"):
            if stack:
                stack.pop()
        elif t.endswith(b":") and stack and stack[-1] is not None:
            key = t.rstrip(b": \t\r\n")
            try:
                key = json.loads(key).encode("utf-8", "surrogatepass")  # one spelling per key
            except ValueError:
                pass
            if key in stack[-1]:
                return m.start()
            stack[-1].add(key)
    return None


def fast_loads(data: bytes) -> Any:
    """orjson's decode of ``data``, raising ``ValueError`` when it fails or is
    :func:`suspicious` (the caller then takes :func:`loads`, which reports)."""
    value = orjson.loads(data)
    if suspicious(data, value):
        raise ValueError("suspicious: decode again carefully")
    return value


def loads(data: bytes | str, file: str | None = None) -> tuple[Any, Diagnostic | None]:
    """Decode JSON leniently: the value (or MISSING) and a diagnostic if anything was odd."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        first_error = str(e)
    else:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
        if suspicious(raw, value):
            return _careful(raw, value, file)
        return value, None
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
        f"decoded with the tolerant decoder (NaN/Infinity, a byte-order mark or a lone surrogate): {first_error}",
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
    orjson_dumps = orjson.dumps

    def text_of(s: str) -> str:
        # orjson escapes a str exactly as encode_basestring does (``"``, ``\\``,
        # the short escapes and ``\u00XX`` for other control characters;
        # tests/test_jsonio_checks.py compares every code point) and, past
        # ~100 characters, several times faster; it refuses a lone surrogate
        if len(s) < 128:
            return encode_str(s)
        try:
            return orjson_dumps(s).decode()
        except TypeError:
            return encode_str(s)

    # '"<key>": ' of the keys met so far (arguments reuse a few names); bounded, so
    # that odd data cannot grow it without end. Only str keys are ever stored, and
    # no other key equals one of them.
    key_texts: dict[str, str] = {}

    def dumps_python(obj: Any, leave_out: str | None = None) -> str:
        """JSON text exactly as Python's ``json.dumps(obj, ensure_ascii=False)``
        writes it (default separators ``", "`` and ``": "``), for decoded JSON
        values (which hold no cycles).

        A mapping of text keys (a tool call's arguments, the common case) is
        written member by member, its long strings by orjson; any other
        value, and any member that is not a str, int, bool or None, by the
        standard library's C encoder.

        ``leave_out``: a key whose member a mapping is written without (as
        ``json.dumps`` writes the mapping minus that member; the step text
        leaves out an action's ``thought``), with no copy of the mapping."""
        t = type(obj)
        if t is str:
            return text_of(obj)
        if t is dict:
            parts = []
            for k, v in obj.items():
                kt = key_texts.get(k)
                if kt is None:
                    if type(k) is not str:  # keys json.dumps converts (ints, floats, None, bools)
                        if leave_out is not None:
                            obj = {k: v for k, v in obj.items() if k != leave_out}
                        return "".join(one_shot(obj, 0))
                    kt = encode_str(k) + ": "
                    if len(key_texts) < 1024:
                        key_texts[k] = kt
                if k == leave_out:
                    continue
                tv = type(v)
                if tv is str:
                    parts.append(kt + (encode_str(v) if len(v) < 128 else text_of(v)))
                elif tv is int:
                    parts.append(kt + int.__repr__(v))
                elif v is None:
                    parts.append(kt + "null")
                elif v is True:
                    parts.append(kt + "true")
                elif v is False:
                    parts.append(kt + "false")
                else:
                    parts.append(kt + "".join(one_shot(v, 0)))
            return "{" + ", ".join(parts) + "}"
        if leave_out is not None and isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k != leave_out}
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
        # Values orjson refuses (integers beyond 64 bits, lone surrogates such
        # as a non-UTF-8 file name's): fall back to the stdlib. A lone
        # surrogate is written as its JSON escape (``\udcff``), so the output
        # is valid UTF-8 and decodes back to the same string.
        text = json.dumps(obj, ensure_ascii=False, indent=2 if indent else None, sort_keys=sort_keys, default=_default)
        return text.encode("utf-8", "backslashreplace")


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
