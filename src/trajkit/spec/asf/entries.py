"""ASF files and entries: :class:`Entry`, :class:`AsfFile`, the lenient reader
(:func:`read_asf`), legacy (pre-0.5) migration and the writer.

The reader keeps every line's bytes (so writing back is byte-identical),
preserves unknown entry types and members, reports a cut-off final line and
still reads the prefix, and migrates pre-0.5 files in memory through
``legacy_id``. Nothing here raises on bad data: problems become
:class:`~trajkit.diagnostics.Diagnostic` values with stable ``asf.*`` codes.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...diagnostics import ERROR, INFO, WARNING, Diagnostic
from .codec import ENVELOPE, canonical, entry_id, normalize_ts

FORMAT = "agentsession/0.11"
FORMAT_MINOR = 11
PAYLOAD = "openresponses/2026-04-24"
#: Entry types that build context (``response`` contributes nothing but is one).
CONTEXT_TYPES = frozenset({"item", "response", "config", "compaction", "branch_summary"})
#: Record entry types of 0.11 (never in context).
RECORD_TYPES = frozenset({"run", "dispatch", "decision", "queued", "label", "info", "env", "outcome", "link", "custom"})
#: Record types a 0.12 file may add; read and preserved, never interpreted.
FUTURE_RECORD_TYPES = frozenset({"withdraw"})
CORE_TYPES = CONTEXT_TYPES | RECORD_TYPES
#: Members of an entry that name other entries (rewritten by legacy migration).
ENTRY_NAMING = ("target", "first_kept", "from", "queued_from")
_FORMAT_RE = re.compile(r"^agentsession/(\d+)\.(\d+)$")

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
            if chunk.count(b"[") + chunk.count(b"{") >= _DEEP and _too_deep(value):
                # Nesting this deep cannot be hashed or walked (recursion):
                # the line is kept as written and reported, never interpreted.
                diags.append(Diagnostic(
                    "asf.too-deep",
                    f"the line nests {_DEEP} levels or more; the entry is not read",
                    ERROR, file=path, line=lineno, offset=start,
                ))
                if not header_seen:
                    header_seen = True
                    f.header_text = chunk
                else:
                    f.entries.append(Entry(raw={"_unparsed": True}, line=lineno, offset=start, text=chunk))
                continue
        except orjson.JSONDecodeError:
            value, nonfinite = _tolerant_loads(chunk)
            if nonfinite is not None and isinstance(value, dict):
                # I-JSON has no NaN or Infinity, and nothing can hash it: the
                # line is kept as written and reported, never interpreted.
                diags.append(Diagnostic(
                    "asf.non-finite-number",
                    f"the line holds {nonfinite}, a number outside binary64 (NaN or Infinity); the entry is not read",
                    ERROR, file=path, line=lineno, offset=start,
                ))
                if not header_seen:
                    header_seen = True
                    f.header_text = chunk
                else:
                    f.entries.append(Entry(raw={"_unparsed": True}, line=lineno, offset=start, text=chunk))
                continue
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


#: Lines nesting this deep are refused (orjson writes at most 254 levels back).
_DEEP = 255


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests :data:`_DEEP` levels or more (orjson refuses to write it)."""
    try:
        orjson.dumps(value)
    except TypeError as e:
        return "Recursion" in str(e)
    return False


def _tolerant_loads(chunk: bytes) -> tuple[Any, str | None]:
    """The standard library's decode of a line orjson refused (None when it
    fails too), and the first non-finite number in it as written, if any
    (``1e999999``, ``NaN``, ``-Infinity``)."""
    import json

    nonfinite: list[str] = []

    def parse_float(text: str) -> float:
        v = float(text)
        if not math.isfinite(v):
            nonfinite.append(text)
        return v

    def parse_constant(text: str) -> float:
        nonfinite.append(text)
        return float(text)

    try:
        value = json.loads(chunk.decode("utf-8", "surrogatepass"), parse_float=parse_float, parse_constant=parse_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, None
    return value, (nonfinite[0][:40] if nonfinite else None)


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
