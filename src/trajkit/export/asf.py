"""The Agent Session Format (ASF, RFC 0001 draft 0.11): ids, files, context, verification.

An ASF file is JSONL: a header line, then one entry per line. Entries are
content-addressed (0.5+): ``id = sha256(JCS({type, parent, ts, content:
sha256(JCS(content))}))`` where content is the entry minus its envelope
(see ``shared/formats/asf.md`` §3). This module holds everything trajkit needs
to read, write and check such files:

- :func:`canonical`, :func:`content_hash`, :func:`entry_id`, :func:`normalize_ts`,
  :func:`normalise_ijson` — the hashing rules;
- :class:`AsfFile` / :func:`read_asf` — a lenient reader that keeps every line's
  bytes (so writing back is byte-identical), preserves unknown entry types and
  members, reports a cut-off final line and still reads the prefix, and
  migrates pre-0.5 files in memory through ``legacy_id``;
- :func:`build_context` / :func:`request_context` / :func:`request_hash` — the
  normative context algorithm (§5) and the request a response was sent;
- :func:`verify` — every check a reader can make: ids, parents, ``parents``,
  ``base``, ``ts`` spelling, ``first_kept``, instruction parts, omitted lists,
  ``omit``, call-id uniqueness, promised records, run ``source``, request hashes.

Nothing here raises on bad data: problems become :class:`Diagnostic` values with
stable ``asf.*`` codes (documented in ``docs/export.md``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson
import rfc8785

from ..diagnostics import ERROR, INFO, WARNING, Diagnostic

FORMAT = "agentsession/0.11"
FORMAT_MINOR = 11
PAYLOAD = "openresponses/2026-04-24"

#: Envelope members: never part of the content hash.
ENVELOPE = ("id", "type", "parent", "parents", "ts")
#: Entry types that build context (``response`` contributes nothing but is one).
CONTEXT_TYPES = frozenset({"item", "response", "config", "compaction", "branch_summary"})
#: Record entry types of 0.11 (never in context).
RECORD_TYPES = frozenset({"run", "dispatch", "decision", "queued", "label", "info", "env", "outcome", "link", "custom"})
#: Record types a 0.12 file may add; read and preserved, never interpreted.
FUTURE_RECORD_TYPES = frozenset({"withdraw"})
CORE_TYPES = CONTEXT_TYPES | RECORD_TYPES
#: Members of an entry that name other entries (rewritten by legacy migration).
ENTRY_NAMING = ("target", "first_kept", "from", "queued_from")

_MAX_SAFE = (1 << 53) - 1
_FORMAT_RE = re.compile(r"^agentsession/(\d+)\.(\d+)$")
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


# --------------------------------------------------------------------------- file model

@dataclass(slots=True)
class Entry:
    """One entry line: the decoded object (``raw``), where it is, and the bytes
    it was read from (None for entries built in memory). ``data`` is the
    object the context algorithm reads: ``raw`` itself, or its in-memory
    migration for a pre-0.5 file."""

    raw: dict[str, Any]
    line: int = 0
    offset: int = 0
    text: bytes | None = None
    data: dict[str, Any] | None = None
    safe: bool = False  # orjson's sorted output of it is canonical

    @property
    def obj(self) -> dict[str, Any]:
        return self.data if self.data is not None else self.raw

    @property
    def id(self) -> Any:
        return self.obj.get("id")

    @property
    def type(self) -> Any:
        return self.obj.get("type")

    @property
    def parent(self) -> Any:
        return self.obj.get("parent")


@dataclass
class AsfFile:
    """A read (or built) ASF session: header, entries in file order, the
    trailing bytes of an unparseable final line, and the diagnostics of reading."""

    header: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)
    header_text: bytes | None = None
    trailing: bytes | None = None
    gaps: dict[int, list[bytes]] = field(default_factory=dict)
    final_newline: bool = True
    path: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    version: tuple[int, int] | None = None
    migrated: bool = False
    _by_id: dict[Any, Entry] | None = field(default=None, repr=False)

    # -- lookups
    @property
    def by_id(self) -> dict[Any, Entry]:
        if self._by_id is None or len(self._by_id) != len(self.entries):
            idx: dict[Any, Entry] = {}
            for e in self.entries:
                i = e.id
                if isinstance(i, str) and i not in idx:
                    idx[i] = e
            self._by_id = idx
        return self._by_id

    def legacy_index(self) -> dict[str, Entry]:
        """Entries by their ``legacy_id`` (expected outputs keyed by old ids)."""
        return {e.obj["legacy_id"]: e for e in self.entries if isinstance(e.obj.get("legacy_id"), str)}

    def path_to(self, leaf: Any) -> list[Entry]:
        """The entries from the root to ``leaf`` (following ``parent`` alone)."""
        out: list[Entry] = []
        seen: set[Any] = set()
        cur = self.by_id.get(leaf)
        while cur is not None and cur.id not in seen:
            seen.add(cur.id)
            out.append(cur)
            p = cur.parent
            cur = self.by_id.get(p) if p is not None else None
        out.reverse()
        return out

    def leaves(self) -> list[str]:
        """Entry ids no other entry names as parent, in file order."""
        parents = {e.parent for e in self.entries}
        return [e.id for e in self.entries if e.id not in parents and isinstance(e.id, str)]

    def main_leaf(self) -> str | None:
        """The live leaf: the last ``label leaf`` target when one exists, else the last entry."""
        live = None
        for e in self.entries:
            o = e.obj
            if o.get("type") == "label" and o.get("label") == "leaf" and isinstance(o.get("target"), str):
                live = o["target"]
        if live is None and self.entries:
            live = self.entries[-1].id
        return live

    def append(self, entry: dict[str, Any], text: bytes | None = None, safe: bool = False) -> Entry:
        """Append an entry built in memory (its id must already be set);
        ``text`` is its line when already serialised."""
        e = Entry(raw=entry, line=len(self.entries) + 2, text=text, safe=safe)
        self.entries.append(e)
        self._by_id = None
        return e


def parse_format(value: Any) -> tuple[int, int] | None:
    if not isinstance(value, str):
        return None
    m = _FORMAT_RE.match(value)
    return (int(m.group(1)), int(m.group(2))) if m else None


def read_asf(source: str | os.PathLike | bytes, path: str | None = None, migrate: bool = True) -> AsfFile:
    """Read an ASF file leniently (never raises).

    ``source`` is a path or the file's bytes. A final line that does not parse
    is reported (``asf.truncated-final-line``) and the lines before it are
    read; any other unparseable line is ``asf.corrupt-line``. Files older than
    0.5 are migrated in memory (``asf.legacy-migrated``); the original lines
    stay as read so writing back is byte-identical.
    """
    diags: list[Diagnostic] = []
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        path = path or os.fspath(source)
        try:
            with open(source, "rb") as fh:
                data = fh.read()
        except OSError as e:
            f = AsfFile(header={}, path=path)
            f.diagnostics.append(Diagnostic("asf.unreadable", f"cannot read file: {e.strerror or e}", ERROR, file=path))
            return f
    f = AsfFile(header={}, path=path)
    pos = 0
    lineno = 0
    n = len(data)
    header_seen = False
    while pos < n:
        end = data.find(b"\n", pos)
        last = end < 0
        if last:
            end = n
        lineno += 1
        chunk = data[pos:end]
        start = pos
        pos = end + 1
        if not chunk.strip():
            if not last:
                diags.append(Diagnostic("asf.blank-line", "blank line in the session file", WARNING, file=path, line=lineno, offset=start))
                f.gaps.setdefault(len(f.entries) + (1 if header_seen else 0), []).append(chunk)
            else:
                f.trailing = chunk
            continue
        try:
            value = orjson.loads(chunk)
        except orjson.JSONDecodeError:
            value = _tolerant_loads(chunk)
        if value is None or not isinstance(value, dict):
            if last or not data[pos:].strip():
                f.trailing = data[start:]
                diags.append(Diagnostic(
                    "asf.truncated-final-line",
                    "the final line does not parse (a cut-off write); the entries before it were read",
                    ERROR, file=path, line=lineno, offset=start,
                ))
                break
            else:
                diags.append(Diagnostic(
                    "asf.corrupt-line",
                    "a line in the middle of the file does not parse as a JSON object",
                    ERROR, file=path, line=lineno, offset=start,
                ))
                f.entries.append(Entry(raw={"_unparsed": True}, line=lineno, offset=start, text=chunk))
            continue
        if not header_seen:
            header_seen = True
            f.header = value
            f.header_text = chunk
            continue
        f.entries.append(Entry(raw=value, line=lineno, offset=start, text=chunk))
    if data and not data.endswith(b"\n") and f.trailing is None:
        f.final_newline = False
    f.diagnostics = diags
    _check_header(f)
    if migrate and f.version is not None and f.version[0] == 0 and f.version[1] < 5:
        migrate_legacy(f)
    return f


def _tolerant_loads(chunk: bytes) -> Any:
    import json

    try:
        return json.loads(chunk.decode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _check_header(f: AsfFile) -> None:
    h = f.header
    path = f.path
    if not h:
        f.diagnostics.append(Diagnostic("asf.header-invalid", "no header line", ERROR, file=path, line=1))
        return
    if h.get("type") != "session":
        f.diagnostics.append(Diagnostic("asf.header-invalid", f"header type is {h.get('type')!r}, not 'session'", ERROR, file=path, line=1))
    ver = parse_format(h.get("format"))
    if ver is None:
        f.diagnostics.append(Diagnostic("asf.header-invalid", f"header format {h.get('format')!r} is not agentsession/<major>.<minor>", ERROR, file=path, line=1))
    elif ver[0] != 0 or ver[1] > FORMAT_MINOR:
        f.diagnostics.append(Diagnostic(
            "asf.unsupported-format",
            f"{h.get('format')} is newer than this reader (reads agentsession/0.x up to 0.{FORMAT_MINOR})",
            ERROR, file=path, line=1,
        ))
    f.version = ver
    for member in ("id", "created_at", "payload"):
        if member not in h:
            f.diagnostics.append(Diagnostic("asf.header-invalid", f"header has no {member!r}", ERROR, file=path, line=1))


def migrate_legacy(f: AsfFile) -> None:
    """Give a pre-0.5 file content-addressed ids, in memory (RFC 0001 §3.3).

    Each entry gets ``legacy_id`` (its old id) as a content member, a
    normalised ``ts``, and its ``parent``/``parents``/``target``/``first_kept``/
    ``from``/``queued_from`` rewritten to the new ids, in file order. An
    item's ``response`` (a provider id) is left alone.
    """
    mapping: dict[Any, str] = {}
    for e in f.entries:
        o = e.raw
        if o.get("_unparsed"):
            continue
        d = dict(o)
        old = d.get("id")
        if old is None:
            continue  # reported by verify (asf.missing-member)
        if "legacy_id" not in d:
            d["legacy_id"] = old
        ts = normalize_ts(d.get("ts"))
        if ts is not None:
            d["ts"] = ts
        if d.get("parent") is not None:
            d["parent"] = mapping.get(d["parent"], d["parent"])
        if isinstance(d.get("parents"), list):
            d["parents"] = sorted(
                (
                    {**p, "entry": mapping.get(p.get("entry"), p.get("entry"))} if isinstance(p, dict) and "session" not in p else p
                    for p in d["parents"]
                ),
                key=_parents_key,
            )
        for k in ENTRY_NAMING:
            if isinstance(d.get(k), str) and d[k] in mapping:
                d[k] = mapping[d[k]]
        d.pop("id", None)
        new = entry_id(d)
        d["id"] = new
        mapping[old] = new
        e.data = d
    f.migrated = True
    f._by_id = None
    f.diagnostics.append(Diagnostic(
        "asf.legacy-migrated",
        f"{f.header.get('format')} predates content addressing; ids were recomputed in memory with legacy_id",
        INFO, file=f.path,
    ))


def _parents_key(p: Any) -> tuple:
    if not isinstance(p, dict):
        return (2, "", str(p))
    s = p.get("session")
    return (0 if s is None else 1, s or "", str(p.get("entry")))


# --------------------------------------------------------------------------- writing

def entry_line(entry: dict[str, Any]) -> bytes:
    """The line trajkit writes for an entry or header: canonical JSON."""
    return canonical(entry)


def write_asf(f: AsfFile) -> bytes:
    """The file's bytes: lines read from disk are written back exactly as
    read; entries built in memory are written in canonical form."""
    out = bytearray()
    if f.header_text is None and not f.header and not f.entries:
        return f.trailing or b""
    for blank in f.gaps.get(0, ()):
        out += blank + b"\n"
    out += f.header_text if f.header_text is not None else entry_line(f.header)
    out += b"\n"
    for i, e in enumerate(f.entries):
        for blank in f.gaps.get(i + 1, ()):
            out += blank + b"\n"
        out += e.text if e.text is not None else entry_line(e.raw)
        out += b"\n"
    for blank in f.gaps.get(len(f.entries) + 1, ()):
        out += blank + b"\n"
    if not f.final_newline and out.endswith(b"\n"):
        del out[-1]
    if f.trailing is not None:
        out += f.trailing
    return bytes(out)


def make_entry(type_: str, parent: str | None, ts: str, body: dict[str, Any], parents: list[dict] | None = None,
               safe: bool = False) -> dict[str, Any]:
    """A new entry with its content-addressed id, members in canonical order.
    ``safe``: the body is known to serialise canonically with orjson (:func:`prepare`)."""
    e: dict[str, Any] = {"type": type_, "parent": parent, "ts": ts}
    if parents:
        e["parents"] = sorted(parents, key=_parents_key)
    for k, v in body.items():
        if k in ENVELOPE or k == "content":
            raise ValueError(f"reserved member name {k!r} in an entry body")
        e[k] = v
    e["id"] = entry_id(e, safe)
    return e


# --------------------------------------------------------------------------- context

@dataclass
class Settings:
    """The request settings in force at a point on a path (RFC 0001 §5 step 2)."""

    model: Any = None
    instructions: Any = None
    parts: list[dict[str, Any]] | None = None
    omitted: list[Any] | None = None
    reasoning: Any = None
    text: Any = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    omit: dict[str, Any] = field(default_factory=dict)
    has: set[str] = field(default_factory=set)
    part_history: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    part_texts: dict[str, str] = field(default_factory=dict)
    omitted_lists: dict[str, list[Any]] = field(default_factory=dict)

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.model is not None:
            d["model"] = self.model
        if self.instructions is not None:
            d["instructions"] = self.instructions
        if self.parts:
            d["instructions_parts"] = self.parts
        if self.omitted:
            d["instructions_omitted"] = self.omitted
        if "reasoning" in self.has and self.reasoning is not None:
            d["reasoning"] = self.reasoning
        if "text" in self.has and self.text is not None:
            d["text"] = self.text
        if self.tools:
            d["tools"] = self.tools
        if self.extra:
            d["extra"] = self.extra
        if self.omit:
            d["omit"] = self.omit
        return d


@dataclass
class Context:
    """The context built at a leaf: settings, items, the entries that make up
    the (possibly compacted) path, the entry each item came from, the items
    ``omit`` left out, and anything that could not be resolved."""

    leaf: str
    settings: dict[str, Any]
    items: list[Any]
    entries: list[str]
    item_entries: list[str]
    omitted: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (code, entry id, message)
    compaction: str | None = None
    model_at: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"settings": self.settings, "items": self.items, "entries": self.entries, "item_entries": self.item_entries}
        if self.omitted:
            d["omitted"] = self.omitted
        return d

    def request(self) -> dict[str, Any]:
        """The canonical Open Responses request (RFC 0001 §5 step 5)."""
        return request_of(self.settings, self.items)


def request_of(settings: dict[str, Any], items: list[Any]) -> dict[str, Any]:
    """Settings + items as the request whose hash a response carries.

    Checked against the corpus: ``model``, ``instructions`` (parts joined),
    ``tools`` when non-empty, ``reasoning`` / ``text`` when set, the ``extra``
    passthrough keys at top level, ``input``, ``store: false``.
    """
    req: dict[str, Any] = {}
    if settings.get("model") is not None:
        req["model"] = settings["model"]
    if settings.get("instructions") is not None:
        req["instructions"] = settings["instructions"]
    if settings.get("tools"):
        req["tools"] = settings["tools"]
    if settings.get("reasoning") is not None:
        req["reasoning"] = settings["reasoning"]
    if settings.get("text") is not None:
        req["text"] = settings["text"]
    for k, v in (settings.get("extra") or {}).items():
        if k not in req and k not in ("input", "store", "previous_response_id"):
            req[k] = v
    req["input"] = list(items)
    req["store"] = False
    return req


def _apply_checkpoint(s: Settings, cfg: Any) -> None:
    s.reset()
    if not isinstance(cfg, dict):
        return
    s.model = cfg.get("model")
    s.instructions = cfg.get("instructions")
    if isinstance(cfg.get("instructions_parts"), list):
        s.parts = [dict(p) for p in cfg["instructions_parts"] if isinstance(p, dict)]
        for p in s.parts:
            if isinstance(p.get("id"), str) and isinstance(p.get("text"), str):
                s.part_history.setdefault(p["id"], {})[text_hash(p["text"])] = p
                s.part_texts[text_hash(p["text"])] = p["text"]
        if s.instructions is None and s.parts:
            s.instructions = "\n\n".join(p.get("text", "") for p in s.parts)
    if isinstance(cfg.get("instructions_omitted"), list):
        s.omitted = list(cfg["instructions_omitted"])
    for k in ("reasoning", "text"):
        if k in cfg:
            setattr(s, k, cfg[k])
            s.has.add(k)
    if isinstance(cfg.get("tools"), list):
        s.tools = list(cfg["tools"])
    if isinstance(cfg.get("extra"), dict):
        s.extra = {k: v for k, v in cfg["extra"].items() if v is not None}
    if isinstance(cfg.get("omit"), dict):
        s.omit = _merge_omit({}, cfg["omit"])


def _merge_omit(cur: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    if not delta:
        return {}
    out = dict(cur)
    if "reasoning" in delta:
        if delta["reasoning"] is None:
            out.pop("reasoning", None)
        else:
            out["reasoning"] = delta["reasoning"]
    if isinstance(delta.get("items"), list):
        items = list(out.get("items", []))
        for i in delta["items"]:
            if i not in items:
                items.append(i)
        out["items"] = items
    return out


def _apply_config(s: Settings, e: Entry, problems: list[tuple[str, str, str]]) -> None:
    o = e.obj
    eid = e.id
    if o.get("replace") is True:
        s.reset()
    if "model" in o:
        s.model = o["model"]
    for k in ("reasoning", "text"):
        if k in o:
            setattr(s, k, o[k])
            s.has.add(k)
    if "instructions_parts" in o:
        resolved = _resolve_parts(s, o["instructions_parts"], eid, problems)
        if resolved is not None:
            s.parts = resolved
            joined = "\n\n".join(p["text"] for p in resolved)
            if isinstance(o.get("instructions"), str) and o["instructions"] != joined:
                problems.append(("asf.bad-instructions", eid, "instructions does not equal the parts joined with a blank line"))
                s.instructions = o["instructions"]
            else:
                s.instructions = joined
            for p in resolved:
                s.part_history.setdefault(p["id"], {})[text_hash(p["text"])] = p
                s.part_texts[text_hash(p["text"])] = p["text"]
        else:
            # Parts that cannot be resolved: fall back to the instructions string.
            s.parts = None
            if "instructions" in o:
                s.instructions = o["instructions"]
    elif "instructions" in o:
        s.instructions = o["instructions"]
        s.parts = None
    if "instructions_omitted" in o:
        s.omitted = _resolve_omitted(s, o["instructions_omitted"], eid, problems)
        if isinstance(eid, str):
            s.omitted_lists[eid] = s.omitted
    if isinstance(o.get("tools_added"), list):
        for t in o["tools_added"]:
            name = t.get("name") if isinstance(t, dict) else None
            if name is not None:
                s.tools = [x for x in s.tools if not (isinstance(x, dict) and x.get("name") == name)]
            s.tools.append(t)
    if isinstance(o.get("tools_removed"), list):
        gone = set(x for x in o["tools_removed"] if isinstance(x, str))
        s.tools = [x for x in s.tools if not (isinstance(x, dict) and x.get("name") in gone)]
    if isinstance(o.get("extra"), dict):
        for k, v in o["extra"].items():
            if v is None:
                s.extra.pop(k, None)
            else:
                s.extra[k] = v
    if "omit" in o:
        om = o["omit"]
        if not isinstance(om, dict):
            problems.append(("asf.bad-omit", eid, "omit is not an object"))
        else:
            r = om.get("reasoning")
            if r is not None and r != "other_models":
                problems.append(("asf.bad-omit", eid, f"omit.reasoning {r!r} is not a known value (other_models)"))
            s.omit = _merge_omit(s.omit, om)


def _resolve_parts(s: Settings, parts: Any, eid: str, problems: list) -> list[dict[str, Any]] | None:
    if not isinstance(parts, list):
        problems.append(("asf.bad-instructions", eid, "instructions_parts is not a list"))
        return None
    in_force = s.parts or []
    by_id = {p.get("id"): (i, p) for i, p in enumerate(in_force)}
    cursor = 0
    out: list[dict[str, Any]] = []
    ok = True
    for el in parts:
        if not isinstance(el, dict):
            ok = False
            continue
        if "keep" in el and "id" not in el:
            n = el.get("keep")
            if not isinstance(n, int) or n < 0 or cursor + n > len(in_force):
                problems.append(("asf.bad-instructions", eid, f"{{keep:{n}}} runs past the parts in force"))
                ok = False
                continue
            out.extend(dict(p) for p in in_force[cursor:cursor + n])
            cursor += n
            continue
        pid = el.get("id")
        if pid in by_id:
            cursor = by_id[pid][0] + 1
        if isinstance(el.get("text"), str):
            p = {"id": pid, "text": el["text"]}
            if "source" in el:
                p["source"] = el["source"]
            elif pid in by_id and "source" in by_id[pid][1]:
                p["source"] = by_id[pid][1]["source"]
            out.append(p)
            continue
        h = el.get("hash")
        text = None
        known: dict[str, Any] | None = None
        if pid in by_id and isinstance(by_id[pid][1].get("text"), str) and text_hash(by_id[pid][1]["text"]) == h:
            known = by_id[pid][1]
        else:
            # 0.11: a hash may name a part out of force whose text the path holds.
            known = s.part_history.get(pid, {}).get(h)
        if known is not None:
            text = known["text"]
        if text is None:
            problems.append(("asf.bad-instructions", eid, f"part {pid!r} names hash {h} that no text on the path has"))
            ok = False
            continue
        p = {"id": pid, "text": text}
        if "source" in el:
            p["source"] = el["source"]
        elif known is not None and "source" in known:
            p["source"] = known["source"]
        out.append(p)
    return out if ok else None


def _resolve_omitted(s: Settings, lst: Any, eid: str, problems: list) -> list[Any] | None:
    if not isinstance(lst, list):
        problems.append(("asf.bad-omitted", eid, "instructions_omitted is not a list"))
        return s.omitted
    in_force = s.omitted or []
    cursors: dict[Any, int] = {None: 0}
    lists: dict[Any, list] = {None: in_force}
    out: list[Any] = []
    for el in lst:
        if isinstance(el, dict) and "keep" in el and "id" not in el:
            n = el.get("keep")
            src = el.get("of")
            if src is not None:
                if src not in s.omitted_lists or not isinstance(s.omitted_lists[src], list):
                    problems.append(("asf.unresolved-omitted", eid, f"keep/of names {src}, not a config with an omitted list earlier on this path since the last checkpoint"))
                    out.append(el)
                    continue
                lists.setdefault(src, s.omitted_lists[src])
                cursors.setdefault(src, 0)
            base = lists[src]
            c = cursors[src]
            if not isinstance(n, int) or n < 0 or c + n > len(base):
                problems.append(("asf.unresolved-omitted", eid, f"keep {n} runs past the omitted list it counts over"))
                out.append(el)
                continue
            out.extend(base[c:c + n])
            cursors[src] = c + n
            continue
        if isinstance(el, dict) and "id" in el:
            for key, base in lists.items():
                for i, x in enumerate(base):
                    if isinstance(x, dict) and x.get("id") == el["id"]:
                        cursors[key] = i + 1
                        break
        out.append(el)
    return out


def build_context(f: AsfFile, leaf: str, path: list[Entry] | None = None) -> Context:
    """The context at ``leaf`` (RFC 0001 §5): settings, items and provenance."""
    if path is None:
        path = f.path_to(leaf)
    problems: list[tuple[str, str, str]] = []
    comp_idx = None
    for i, e in enumerate(path):
        if e.type == "compaction":
            comp_idx = i
    s = Settings()
    model_at: dict[str, Any] = {}
    # Settings: replay every config (or from the last compaction's checkpoint).
    start = 0
    if comp_idx is not None:
        _apply_checkpoint(s, path[comp_idx].obj.get("config"))
        start = comp_idx + 1
        # model in force before the checkpoint still attributes earlier items
        pre = Settings()
        for e in path[:comp_idx]:
            if e.type == "config":
                _apply_config(pre, e, [])
            model_at[e.id] = pre.model
    for e in path[start:]:
        if e.type == "config":
            _apply_config(s, e, problems)
        model_at[e.id] = s.model
    if comp_idx is not None:
        model_at[path[comp_idx].id] = s.model
    # Items.
    items: list[Any] = []
    item_entries: list[str] = []
    entries: list[str] = []
    if comp_idx is not None:
        comp = path[comp_idx]
        co = comp.obj
        fk = co.get("first_kept")
        fk_idx = next((i for i, e in enumerate(path[:comp_idx]) if e.id == fk), None)
        if fk_idx is None:
            problems.append(("asf.bad-first-kept", comp.id, f"first_kept {fk!r} is not an entry on the path before the compaction"))
            fk_idx = comp_idx
        entries.append(comp.id)
        if "summary" in co:
            items.append(co["summary"])
            item_entries.append(comp.id)
        for p in co.get("pinned") or []:
            items.append(p)
            item_entries.append(comp.id)
        seq = path[fk_idx:comp_idx] + path[comp_idx + 1:]
    else:
        seq = path
    candidates: list[tuple[Entry, Any]] = []
    for e in seq:
        entries.append(e.id)
        t = e.type
        if t == "item" and "item" in e.obj:
            candidates.append((e, e.obj["item"]))
        elif t == "branch_summary" and "summary" in e.obj:
            candidates.append((e, e.obj["summary"]))
    # The omit in force at the end of the path decides every item on it.
    omit = s.omit
    omitted: list[dict[str, Any]] = []
    req_model = s.model
    omit_items = set(omit.get("items") or [])
    for e, it in candidates:
        reason = None
        if (
            omit.get("reasoning") == "other_models"
            and e.type == "item"
            and isinstance(it, dict)
            and it.get("type") == "reasoning"
            and e.obj.get("response") is not None
            and req_model
            and model_at.get(e.id)
            and model_at.get(e.id) != req_model
        ):
            reason = "other_models"
        elif e.id in omit_items:
            reason = "items"
        if reason:
            omitted.append({"entry": e.id, "reason": reason})
            continue
        items.append(it)
        item_entries.append(e.id)
    return Context(
        leaf=leaf,
        settings=s.to_dict(),
        items=items,
        entries=entries,
        item_entries=item_entries,
        omitted=omitted,
        problems=problems,
        compaction=path[comp_idx].id if comp_idx is not None else None,
        model_at=model_at,
    )


def request_leaf(f: AsfFile, response: Entry, path: list[Entry] | None = None) -> tuple[str | None, list[Entry]]:
    """The entry a response's request context ends at: the path to the
    response minus its own output items (matched by ``response``)."""
    if path is None:
        path = f.path_to(response.id)
    rid = response.obj.get("response_id")
    idx = len(path) - 1  # the response itself
    cut = idx
    j = idx - 1
    while j >= 0:
        e = path[j]
        if e.type != "item":
            j -= 1
            continue
        r = e.obj.get("response")
        if rid is not None and r == rid:
            cut = j
            j -= 1
            continue
        break
    prefix = path[:cut]
    if not prefix:
        return None, []
    return prefix[-1].id, prefix


def request_context(f: AsfFile, response: Entry) -> Context | None:
    """The context the model saw for ``response``, or None at an empty path."""
    leaf, prefix = request_leaf(f, response)
    if leaf is None:
        return None
    return build_context(f, leaf, prefix)


class RequestWalker:
    """Request hashes along one path, fed entry by entry in path order.

    Equivalent to ``request_hash(request_context(f, response).request())``
    but linear in the path instead of quadratic: the canonical bytes of each
    item are computed once, and a request is the join of the items before the
    response's own outputs. :meth:`hash_for` returns None whenever the fast
    rules do not apply (an ``omit`` in force, a config written between a
    response's outputs, non-ASCII passthrough keys); callers then build the
    context the normative way.
    """

    def __init__(self) -> None:
        self.settings = Settings()
        self.version = 0  # bumps on every settings change
        self.items: list[bytes] = []
        self.item_resp: list[Any] = []
        self.item_version: list[int] = []
        self.path: list[Entry] = []
        self._cache: tuple[int, bytes, bytes] | None = None

    def feed(self, e: Entry) -> None:
        self.path.append(e)
        t = e.type
        o = e.obj
        if t == "config":
            _apply_config(self.settings, e, [])
            self.version += 1
        elif t == "compaction":
            _apply_checkpoint(self.settings, o.get("config"))
            self.version += 1
            fk = o.get("first_kept")
            idx = next((i for i, x in enumerate(self.path[:-1]) if x.id == fk), len(self.path) - 1)
            self.items, self.item_resp, self.item_version = [], [], []
            if "summary" in o:
                self._push(o["summary"], None)
            for pin in o.get("pinned") or []:
                self._push(pin, None)
            for x in self.path[idx:-1]:
                if x.type == "item" and "item" in x.obj:
                    self._push(x.obj["item"], x.obj.get("response"))
                elif x.type == "branch_summary" and "summary" in x.obj:
                    self._push(x.obj["summary"], None)
        elif t == "item" and "item" in o:
            self._push(o["item"], o.get("response"), e.safe)
        elif t == "branch_summary" and "summary" in o:
            self._push(o["summary"], None, e.safe)

    def _push(self, item: Any, response: Any, safe: bool = False) -> None:
        self.items.append(canonical(item, safe))
        self.item_resp.append(response)
        self.item_version.append(self.version)

    def hash_for(self, response_id: Any) -> str | None:
        """The request hash of a response with ``response_id`` appended now."""
        if self.settings.omit:
            return None
        k = len(self.items)
        if response_id is not None:
            while k > 0 and self.item_resp[k - 1] == response_id:
                k -= 1
        if k < len(self.items) and self.item_version[k] != self.version:
            return None  # settings changed after the first output: the slow way
        if self._cache is None or self._cache[0] != self.version:
            req = request_of(self.settings.to_dict(), [])
            del req["input"]
            if not all(isinstance(x, str) and x.isascii() for x in req):
                return None
            before = {a: b for a, b in req.items() if a < "input"}
            after = {a: b for a, b in req.items() if a > "input"}
            head = canonical(before)[:-1] if before else b"{"
            head += b"," if before else b""
            tail = canonical(after)[1:] if after else b"}"
            tail = (b"," + tail) if after else tail
            self._cache = (self.version, head + b'"input":[', b"]" + tail)
        _, head, tail = self._cache
        h = hashlib.sha256(head)
        h.update(b",".join(self.items[:k]))
        h.update(tail)
        return "sha256:" + h.hexdigest()


# --------------------------------------------------------------------------- verification

def verify(f: AsfFile, check_requests: bool = True) -> list[Diagnostic]:
    """Every problem a reader can find in ``f`` (plus the reading diagnostics).

    Errors mean the file does not conform; warnings and infos do not.
    """
    out = list(f.diagnostics)
    path = f.path
    ver = f.version
    if ver is not None and (ver[0] != 0 or ver[1] > FORMAT_MINOR):
        return out  # a newer format is refused, not checked
    hashed = ver is not None and ver[1] >= 5 or f.migrated

    def err(code: str, e: Entry | None, msg: str, sev: str = ERROR) -> None:
        out.append(Diagnostic(code, msg, sev, file=path, event_id=e.id if e is not None else None, line=e.line if e is not None else None))

    seen: dict[Any, Entry] = {}
    roots: list[Entry] = []
    base = f.header.get("base")
    call_ids: dict[str, Entry] = {}
    for idx, e in enumerate(f.entries):
        o = e.obj
        if o.get("_unparsed"):
            continue
        missing = [m for m in ("id", "type", "parent", "ts") if m not in o]
        if missing:
            err("asf.missing-member", e, f"entry lacks {', '.join(missing)}")
            if "id" in missing:
                continue
        eid = o.get("id")
        if not isinstance(eid, str) or not eid:
            err("asf.missing-member", e, "entry id is not a non-empty string")
            continue
        if eid in seen:
            err("asf.duplicate-id", e, f"id {eid} already appears on line {seen[eid].line}")
            continue
        t = o.get("type")
        if isinstance(t, str) and t not in CORE_TYPES and t not in FUTURE_RECORD_TYPES and ":" not in t:
            err("asf.unknown-entry-type", e, f"entry type {t!r} is neither core nor namespaced; preserved", WARNING)
        for reserved in ("content",):
            if reserved in o:
                err("asf.reserved-member", e, f"body member {reserved!r} is reserved")
        if hashed:
            if "ts" in o and normalize_ts(o["ts"]) != o["ts"]:
                err("asf.bad-ts", e, f"ts {o['ts']!r} is not in the one hashed spelling ({normalize_ts(o['ts'])!r})")
            want = entry_id(o)
            if want != eid:
                err("asf.bad-id", e, f"id does not match its content (recomputed {want})")
        p = o.get("parent")
        if p is None:
            roots.append(e)
        elif p not in seen:
            if p in (x.id for x in f.entries[idx + 1:]):
                err("asf.bad-parent", e, f"parent {p} appears later in the file")
            else:
                err("asf.bad-parent", e, f"parent {p} is not in the file")
        parents = o.get("parents")
        if parents is not None:
            if not isinstance(parents, list):
                err("asf.bad-parents", e, "parents is not a list")
            else:
                names = []
                for ref in parents:
                    if not isinstance(ref, dict) or not isinstance(ref.get("entry"), str):
                        err("asf.bad-parents", e, "a parents reference does not name an entry")
                        continue
                    names.append((ref.get("session"), ref["entry"]))
                    if ref.get("session") is None and ref["entry"] not in seen:
                        err("asf.bad-parents", e, f"parents names {ref['entry']}, which is not earlier in the file")
                    if ref.get("session") is None and ref["entry"] == p:
                        err("asf.bad-parents", e, "parents repeats the parent")
                if len(set(names)) != len(names):
                    err("asf.bad-parents", e, "parents names the same entry twice")
                if hashed and parents != sorted(parents, key=_parents_key):
                    err("asf.bad-parents", e, "parents is not sorted by session then entry")
        if t == "item" and isinstance(o.get("item"), dict) and o["item"].get("type") == "function_call":
            cid = o["item"].get("call_id")
            if not isinstance(cid, str) or not cid:
                err("asf.bad-call-id", e, "function_call has no call_id")
            elif cid in call_ids:
                err("asf.duplicate-call-id", e, f"call_id {cid} is already used on line {call_ids[cid].line}")
            else:
                call_ids[cid] = e
        if t == "item" and isinstance(o.get("item"), dict) and o["item"].get("type") == "item_reference":
            err("asf.item-reference", e, "item_reference is accepted but writers must not emit it", INFO)
        seen[eid] = e
    # base: the file opens with the prefix path to base, then the session's own entries.
    if base is not None:
        _verify_base(f, base, roots, err)
    # Structure per entry that names other entries.
    for e in f.entries:
        o = e.obj
        if o.get("_unparsed") or not isinstance(o.get("id"), str):
            continue
        if o.get("type") == "compaction":
            fk = o.get("first_kept")
            anc = {x.id for x in f.path_to(e.id)[:-1]}
            if fk not in anc:
                err("asf.bad-first-kept", e, f"first_kept {fk!r} is not an entry on this compaction's path")
        if o.get("type") in ("dispatch", "decision") and o.get("target") not in seen:
            err("asf.bad-target", e, f"target {o.get('target')!r} is not an entry in the file")
    # Context checks at every leaf, request hashes at every response.
    leaves = f.leaves()
    reported: set[tuple[str, str]] = set()
    for leaf in leaves:
        ctx = build_context(f, leaf)
        for code, eid, msg in ctx.problems:
            if code == "asf.bad-first-kept":
                continue  # reported above
            if (code, eid) not in reported:
                reported.add((code, eid))
                out.append(Diagnostic(code, msg, ERROR, file=path, event_id=eid, line=_line_of(f, eid)))
    if check_requests:
        checked: set[str] = set()
        for leaf in leaves:
            lpath = f.path_to(leaf)
            if lpath and lpath[0].parent is not None:
                continue  # a broken path: reported as asf.bad-parent already
            walker = RequestWalker()
            for e in lpath:
                o = e.obj
                if o.get("type") == "response" and isinstance(o.get("request_hash"), str) and e.id not in checked:
                    checked.add(e.id)
                    got = walker.hash_for(o.get("response_id")) if walker.path else None
                    if got is None:
                        ctx = request_context(f, e)
                        if ctx is None:
                            err("asf.bad-request-hash", e, "request_hash on a response with no path before it")
                            walker.feed(e)
                            continue
                        got = request_hash(ctx.request())
                    if got != o["request_hash"]:
                        err("asf.bad-request-hash", e, f"request_hash {o['request_hash']} does not match the request rebuilt from the path ({got})")
                walker.feed(e)
    _verify_records(f, err)
    return out


def _line_of(f: AsfFile, eid: Any) -> int | None:
    e = f.by_id.get(eid)
    return e.line if e is not None else None


def _verify_base(f: AsfFile, base: Any, roots: list[Entry], err) -> None:
    ids = [e.id for e in f.entries]
    if base not in ids:
        err("asf.bad-base", None, f"base {base} is not in the file (the file must open with the path to it)")
        return
    k = ids.index(base)
    prefix = f.entries[: k + 1]
    want = [e.id for e in f.path_to(base)]
    if [e.id for e in prefix] != want:
        err("asf.bad-base", prefix[-1], "the entries before base are not exactly the path to it")
    if len(roots) > 1:
        for r in roots[1:]:
            err("asf.bad-base", r, "a second root in a file with base")
    prefix_ids = set(want)
    for e in f.entries[k + 1:]:
        p = e.parent
        if p in prefix_ids and p != base:
            err("asf.bad-base", e, f"parent {p} is in the base prefix but is not base")


def _verify_records(f: AsfFile, err) -> None:
    """Promised records and run shapes (RFC 0001 §7), per path."""
    records = f.header.get("records") or []
    if not isinstance(records, list):
        return
    promised = set(x for x in records if isinstance(x, str))
    leaves = f.leaves()
    done: set[tuple[str, Any]] = set()
    for leaf in leaves:
        path = f.path_to(leaf)
        calls: dict[str, Entry] = {}
        dispatched: set[str] = set()
        for e in path:
            o = e.obj
            t = o.get("type")
            it = o.get("item") if t == "item" else None
            if isinstance(it, dict) and it.get("type") == "function_call" and isinstance(it.get("call_id"), str):
                calls[it["call_id"]] = e
            if t == "dispatch" and isinstance(o.get("call_id"), str):
                dispatched.add(o["call_id"])
            if isinstance(it, dict) and it.get("type") == "function_call_output" and "dispatch" in promised:
                cid = it.get("call_id")
                decided = _has_decision(path, cid, e)
                if cid in calls and cid not in dispatched and not decided and ("rec", e.id) not in done:
                    done.add(("rec", e.id))
                    err("asf.bad-records", e, f"the header promises dispatch records but call {cid} has an output and no dispatch")
        if "run" in promised:
            for problem in _run_problems(path):
                key = ("run", problem[0].id)
                if key not in done:
                    done.add(key)
                    err("asf.bad-run", problem[0], problem[1])


def _has_decision(path: list[Entry], cid: Any, before: Entry) -> bool:
    """A call answered without dispatch: rejected or answered by a decision."""
    for e in path:
        if e is before:
            break
        o = e.obj
        if o.get("type") == "decision" and o.get("call_id") == cid and o.get("verdict") in ("reject", "answer"):
            return True
    return False


def _run_problems(path: list[Entry]) -> list[tuple[Entry, str]]:
    """Run starts whose written ``source`` the segment contradicts."""
    out: list[tuple[Entry, str]] = []
    open_calls: set[str] = set()
    i = 0
    n = len(path)
    while i < n:
        e = path[i]
        o = e.obj
        if o.get("type") == "run" and o.get("phase") == "start":
            pending_at_start = set(open_calls)
            run_id = o.get("run_id")
            j = i + 1
            first_takeup = None
            adds = False
            while j < n:
                x = path[j].obj
                if x.get("type") == "run" and x.get("run_id") == run_id and x.get("phase") == "end":
                    break
                t = x.get("type")
                it = x.get("item") if t == "item" else None
                if first_takeup is None:
                    if t in ("decision", "dispatch") or (isinstance(it, dict) and it.get("type") == "function_call_output"):
                        cid = x.get("call_id") if t != "item" else it.get("call_id")
                        first_takeup = cid in pending_at_start
                if t in ("item", "response"):
                    adds = True
                j += 1
            computed = "resume" if first_takeup else "input"
            written = o.get("source")
            if written not in ("input", "resume"):
                out.append((e, f"run {run_id} start has source {written!r}, not input or resume"))
            elif written != computed:
                empty = not adds and first_takeup is None
                if not (written == "resume" and empty):
                    out.append((e, f"run {run_id} is written source={written} but its segment shows {computed}"))
        t = o.get("type")
        it = o.get("item") if t == "item" else None
        if isinstance(it, dict):
            if it.get("type") == "function_call" and isinstance(it.get("call_id"), str):
                open_calls.add(it["call_id"])
            elif it.get("type") == "function_call_output":
                open_calls.discard(it.get("call_id"))
        i += 1
    return out
