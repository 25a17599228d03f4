"""ASF hashing rules: JCS canonical bytes, content hash, entry id, ``ts``
spelling and I-JSON normalisation (``shared/formats/asf.md`` §3).

An entry's id is ``sha256(JCS({type, parent, ts, content: sha256(JCS(content))}))``
where content is the entry minus its envelope (:data:`ENVELOPE`). Nothing here
reads or writes files; :mod:`.entries` and :mod:`.context` build on it.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from datetime import datetime, timezone
from typing import Any

import orjson
import rfc8785


#: Envelope members: never part of the content hash.
ENVELOPE = ("id", "type", "parent", "parents", "ts")
_MAX_SAFE = (1 << 53) - 1
_TS_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:?\d{2})?$"
)

# --------------------------------------------------------------------------- hashing

def _safe_numbers(value: Any) -> Any:
    """``value`` with integers beyond binary64's exact range turned into floats,
    as JCS (which serialises every number as an IEEE double) reads them."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value) if abs(value) > _MAX_SAFE else value
    if isinstance(value, dict):
        return {k: _safe_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe_numbers(v) for v in value]
    return value


def _orjson_is_jcs(v: Any) -> bool:
    """Whether orjson's sorted compact output is exactly JCS for ``v``.

    It is when ``v`` holds no floats (JCS spells numbers the ECMAScript way),
    no integers beyond 2^53-1, and no object key with a character at or above
    U+E000 (JCS orders keys by UTF-16 code units, orjson by code points; the
    two differ only there). Strings are escaped identically.
    """
    t = type(v)
    if t is str or t is bool or v is None:
        return True
    if t is int:
        return -_MAX_SAFE <= v <= _MAX_SAFE
    if t is dict:
        for k, x in v.items():
            if type(k) is not str or (not k.isascii() and max(k) >= "\ue000"):
                return False
            if not _orjson_is_jcs(x):
                return False
        return True
    if t is list:
        for x in v:
            if not _orjson_is_jcs(x):
                return False
        return True
    return False


def _classify(v: Any) -> int:
    """0: I-JSON that orjson already spells as JCS; 1: I-JSON that needs the
    JCS encoder (floats, keys at U+E000 and above); 2: not I-JSON (lone
    surrogates, integers beyond 2^53, non-finite numbers, other types)."""
    t = type(v)
    if t is str:
        if v.isascii():
            return 0
        try:
            v.encode("utf-8")
            return 0
        except UnicodeEncodeError:
            return 2
    if t is bool or v is None:
        return 0
    if t is int:
        return 0 if -_MAX_SAFE <= v <= _MAX_SAFE else 2
    if t is float:
        return 1 if math.isfinite(v) else 2
    worst = 0
    if t is dict:
        for k, x in v.items():
            if type(k) is not str:
                return 2
            if not k.isascii():
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    return 2
                if max(k) >= "\ue000":
                    worst = 1
            c = _classify(x)
            if c == 2:
                return 2
            if c > worst:
                worst = c
        return worst
    if t is list:
        for x in v:
            c = _classify(x)
            if c == 2:
                return 2
            if c > worst:
                worst = c
        return worst
    return 2


def prepare(body: Any) -> tuple[Any, list[dict[str, Any]], bool]:
    """``body`` made I-JSON, its ``normalised`` records, and whether orjson's
    sorted output of it is already canonical (one walk instead of three)."""
    c = _classify(body)
    if c == 2:
        body, rec = normalise_ijson(body)
        return body, rec, _classify(body) == 0
    return body, [], c == 0


def canonical(value: Any, safe: bool = False) -> bytes:
    """RFC 8785 (JCS) canonical JSON bytes of ``value``.

    Integers beyond 2^53-1 are serialised as the double they round to (what JCS
    does with every number); lone surrogates are refused by the encoder, so
    callers normalise first (:func:`normalise_ijson`). Values orjson already
    spells canonically take the fast path (see :func:`_orjson_is_jcs`);
    ``safe`` says the caller already knows (:func:`prepare`).
    """
    if safe or _orjson_is_jcs(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (orjson.JSONEncodeError, TypeError):
            pass
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        return rfc8785.dumps(_safe_numbers(value))


def sha256_hex(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def text_hash(text: str) -> str:
    """``sha256:`` of a string's UTF-8 bytes (how instruction parts are named by hash)."""
    return sha256_hex(text.encode("utf-8", "surrogatepass"))


def content_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry minus its envelope members."""
    return {k: v for k, v in entry.items() if k not in ENVELOPE}


def content_hash(entry: dict[str, Any], safe: bool = False) -> str:
    """``sha256:`` of the canonical content (the body identity)."""
    return sha256_hex(canonical(content_of(entry), safe))


def entry_id(entry: dict[str, Any], safe: bool = False) -> str:
    """The content-addressed id an entry must carry (RFC 0001 §3.1)."""
    env: dict[str, Any] = {
        "type": entry.get("type"),
        "parent": entry.get("parent"),
        "ts": entry.get("ts"),
        "content": content_hash(entry, safe),
    }
    parents = entry.get("parents")
    if parents:
        env["parents"] = parents
    return sha256_hex(canonical(env))


def request_hash(request: dict[str, Any]) -> str:
    """``sha256:`` of the canonical request (what the model was sent; no ``ts``)."""
    return sha256_hex(canonical(request))


def normalize_ts(value: Any) -> str | None:
    """The one spelling of a timestamp ASF hashes, or None when it is not one.

    UTC, uppercase ``T`` and ``Z``, fractional seconds only when non-zero with
    no trailing zeros and at most 9 digits, second 60 written as 59. Accepts
    RFC 3339 / ISO 8601 text with any offset (naive text is read as UTC) and
    epoch numbers (seconds, or milliseconds when huge).
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            return None
        secs = float(value)
        if abs(secs) > 1e11:  # milliseconds
            secs /= 1000.0
        whole = math.floor(secs)
        frac_ns = int(round((secs - whole) * 1e9))
        if frac_ns >= 1_000_000_000:
            whole += 1
            frac_ns -= 1_000_000_000
        try:
            dt = datetime.fromtimestamp(whole, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
        return _spell(dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, frac_ns)
    if not isinstance(value, str):
        return None
    m = _TS_RE.match(value.strip())
    if not m:
        return None
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    tz = m.group(8)
    leap = s == 60
    if leap:
        s = 59
    digits = (frac + "000000000")[:9]
    ns = int(digits) if frac else 0
    try:
        dt = datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc)
    except ValueError:
        return None
    if tz and tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        hh, mm = int(tz[1:3]), int(tz[-2:])
        from datetime import timedelta

        dt = dt - sign * timedelta(hours=hh, minutes=mm)
    return _spell(dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, ns)


def _spell(y: int, mo: int, d: int, h: int, mi: int, s: int, ns: int) -> str:
    out = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}"
    if ns:
        out += "." + f"{ns:09d}".rstrip("0")
    return out + "Z"


def normalise_ijson(value: Any, at: str = "") -> tuple[Any, list[dict[str, Any]]]:
    """``value`` made I-JSON, and the ``normalised`` records of what changed.

    Lone surrogates become U+FFFD (recorded ``{at, was: <JSON text>}``);
    integers beyond 2^53-1 are rounded to binary64 (``{at, was}``). Bytes that
    are not valid UTF-8 become U+FFFD per maximal subpart (``{at, raw: base64}``).
    Non-finite floats cannot be written: they become None and are recorded with
    ``was`` so nothing is lost silently.
    """
    if _is_ijson(value):
        return value, []
    records: list[dict[str, Any]] = []
    out = _norm(value, at, records)
    records.sort(key=lambda r: r["at"])
    return out, records


def _is_ijson(v: Any) -> bool:
    """Whether ``v`` is already I-JSON (nothing for :func:`_norm` to change)."""
    t = type(v)
    if t is str:
        if v.isascii():
            return True
        try:
            v.encode("utf-8")
            return True
        except UnicodeEncodeError:
            return False
    if t is bool or v is None:
        return True
    if t is int:
        return -_MAX_SAFE <= v <= _MAX_SAFE
    if t is float:
        return math.isfinite(v)
    if t is dict:
        for k, x in v.items():
            if type(k) is not str or not _is_ijson(k) or not _is_ijson(x):
                return False
        return True
    if t is list:
        for x in v:
            if not _is_ijson(x):
                return False
        return True
    return False


def _ptr(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _norm(v: Any, at: str, rec: list[dict[str, Any]]) -> Any:
    if isinstance(v, str):
        try:
            v.encode("utf-8")
            return v
        except UnicodeEncodeError:
            fixed = re.sub("[\ud800-\udfff]", "\ufffd", v)
            rec.append({"at": at, "was": _json_text_of_surrogates(v)})
            return fixed
    if isinstance(v, (bytes, bytearray)):
        rec.append({"at": at, "raw": base64.b64encode(bytes(v)).decode()})
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        if abs(v) > _MAX_SAFE:
            rounded = float(v)
            if int(rounded) != v:
                rec.append({"at": at, "was": str(v)})
            return int(rounded)
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            rec.append({"at": at, "was": repr(v)})
            return None
        return v
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            k2 = k
            if isinstance(k, str):
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    k2 = re.sub("[\ud800-\udfff]", "\ufffd", k)
                    rec.append({"at": at + "/" + _ptr(k2), "was_key": _json_text_of_surrogates(k)})
            else:
                k2 = str(k)
            out[k2] = _norm(x, at + "/" + _ptr(k2), rec)
        return out
    if isinstance(v, (list, tuple)):
        return [_norm(x, f"{at}/{i}", rec) for i, x in enumerate(v)]
    return v


def _json_text_of_surrogates(s: str) -> str:
    """The JSON text a string was written as (ASCII-escaped, so lone surrogates survive)."""
    import json

    return json.dumps(s)
