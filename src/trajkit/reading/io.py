"""File input for readers: one capped whole-file read, one head read, JSON
and JSON Lines loading with located diagnostics.

Everything a reader takes from disk goes through :func:`read_capped` (the
whole file), :func:`read_range` (one record of a file holding many) or
:func:`head` (its first bytes), so the rules hold for every
format at once:

- only regular files are read. The file is opened non-blocking and checked
  with ``fstat`` on the opened descriptor, so a FIFO, a socket, a character
  device (``/dev/zero``, ``/dev/urandom``) or a symlink to one is refused
  without blocking and without reading a byte (``file.unreadable``);
- the size is checked before reading: a file over the cap is refused without
  reading it (``file.too-large``), so a 2 GB sparse file costs one ``fstat``;
- a file that grows while it is read is cut at the cap and refused.

The files are the operating system's, or a run archive's members held in
memory while one of its groups is read (:mod:`.fs`): the same rules, the
same refusals, no system call.

:func:`read_capped` is the measured fast path (one ``open``, one ``fstat``,
one ``read``, one ``close`` for a file that does not change); it returns a
short problem code instead of a :class:`~trajkit.model.Diagnostic` so hot
loops (one file per event) can word their own diagnostic.
:func:`read_bytes`, :func:`load_json` and :func:`load_jsonl` wrap it with
diagnostics.

Diagnostic codes emitted here (see ``docs/diagnostics.md``):
``file.unreadable``, ``file.too-large``, plus the JSON codes of
:mod:`trajkit.jsonio` (``file.empty``, ``json.not-utf8``, ``json.invalid``,
``json.nonstandard``) and ``jsonl.invalid-line``, ``jsonl.truncated-line``.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Iterator

import orjson

from ..jsonio import DEFAULT_MAX_FILE_BYTES, MISSING, loads, suspicious_reencoded
from .._records import Record
from ..diagnostics import ERROR, WARNING, Diagnostic
from .fs import current as _mounted

#: Problem codes of :func:`read_capped`.
TOO_LARGE = "file.too-large"
UNREADABLE = "file.unreadable"

_O_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 16

_KIND_NAMES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _kind(mode: int) -> str:
    for test, name in _KIND_NAMES:
        if test(mode):
            return name
    return "not a regular file"


class Refusal(Record):
    """Why :func:`read_capped` returned no bytes: ``code`` (``file.too-large``
    or ``file.unreadable``), the size when known, and a reason for people."""

    __slots__ = __match_args__ = ("code", "size", "reason")
    code: str
    size: int | None
    reason: str

    def __init__(self, code: str, size: int | None, reason: str) -> None:
        self.code = code
        self.size = size
        self.reason = reason

    def diagnostic(self, path: str, cap: int) -> Diagnostic:
        if self.code == TOO_LARGE:
            if self.size is not None and self.size > cap:
                msg = f"file is {self.size} bytes, over the size cap of {cap} bytes; not read"
            else:
                msg = f"file grew past the size cap of {cap} bytes while read; not read"
        else:
            msg = f"cannot read file: {self.reason}"
        return Diagnostic(self.code, msg, ERROR, file=path)


def read_capped(path: str, cap: int = DEFAULT_MAX_FILE_BYTES) -> tuple[bytes | None, Refusal | None]:
    """The bytes of the regular file ``path`` (at most ``cap``), or None and
    why not. Never raises, never blocks, never reads more than ``cap + 1``
    bytes."""
    tree = _mounted()
    if tree is not None:
        return _mem_range(tree, path, 0, None, cap)
    try:
        fd = os.open(path, _O_FLAGS)
    except OSError as e:
        return None, Refusal(UNREADABLE, None, e.strerror or str(e))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, Refusal(UNREADABLE, None, f"{_kind(st.st_mode)}, not a regular file; not read")
        size = st.st_size
        if size > cap:
            return None, Refusal(TOO_LARGE, size, "")
        want = size + 1 if size else min(_CHUNK, cap + 1)
        data = os.read(fd, want)
        if len(data) >= want:
            # grew since fstat (or a size-less file): read on, up to the cap
            chunks = [data]
            total = len(data)
            while total <= cap:
                more = os.read(fd, min(1 << 20, cap + 1 - total))
                if not more:
                    break
                chunks.append(more)
                total += len(more)
            if total > cap:
                return None, Refusal(TOO_LARGE, total, "")
            data = b"".join(chunks)
        return data, None
    except OSError as e:
        return None, Refusal(UNREADABLE, None, e.strerror or str(e))
    finally:
        os.close(fd)


def read_range(path: str, offset: int, length: int, cap: int = DEFAULT_MAX_FILE_BYTES) -> tuple[bytes | None, Refusal | None]:
    """``length`` bytes of the regular file ``path`` from ``offset`` (fewer
    at its end), or None and why not: one record of a file holding many
    (a line of an evaluation ``output.jsonl``), without reading the rest.
    The same rules as :func:`read_capped`: regular files only, never
    blocks, a range over ``cap`` is refused unread."""
    if length > cap:
        return None, Refusal(TOO_LARGE, length, "")
    tree = _mounted()
    if tree is not None:
        return _mem_range(tree, path, offset, length, cap)
    try:
        fd = os.open(path, _O_FLAGS)
    except OSError as e:
        return None, Refusal(UNREADABLE, None, e.strerror or str(e))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, Refusal(UNREADABLE, None, f"{_kind(st.st_mode)}, not a regular file; not read")
        return os.pread(fd, length, offset), None
    except OSError as e:
        return None, Refusal(UNREADABLE, None, e.strerror or str(e))
    finally:
        os.close(fd)


def head(path: str, n: int, regular: bool = False) -> bytes:
    """The first ``n`` bytes (fewer when the file is shorter) of the regular
    file ``path``; ``b""`` when it is not a regular file or cannot be read.
    ``regular``: the caller's folder listing says ``path`` is a regular file
    (no symlink), so the ``fstat`` that checks it is skipped (one of a
    head read's four system calls; opened non-blocking, a FIFO put there
    since is read without waiting and a folder fails the read)."""
    tree = _mounted()
    if tree is not None:
        return (tree.data(path) or b"")[:n]
    try:
        fd = os.open(path, _O_FLAGS)
    except OSError:
        return b""
    try:
        if not regular and not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _mem_range(tree: Any, path: str | os.PathLike, offset: int, length: int | None, cap: int) -> tuple[bytes | None, Refusal | None]:
    """:func:`read_capped` (``length`` None) or :func:`read_range` of a file of a mounted memory tree."""
    data = tree.data(path)
    if data is None:
        kind = tree.kind(path)
        if kind == "dir":
            return None, Refusal(UNREADABLE, None, "a directory, not a regular file; not read")
        return None, Refusal(UNREADABLE, None, tree.missing(path).strerror)
    if length is None:
        if len(data) > cap:
            return None, Refusal(TOO_LARGE, len(data), "")
        return data, None
    return data[offset:offset + length], None


def read_bytes(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[bytes | None, Diagnostic | None]:
    """The bytes of a file, or None and a diagnostic when it cannot or should not be read."""
    p = os.fspath(path)
    data, why = read_capped(p, max_bytes)
    if data is None:
        return None, why.diagnostic(p, max_bytes)  # type: ignore[union-attr]
    return data, None


def load_json(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[Any, list[Diagnostic]]:
    """Read and decode one JSON file: the value (or MISSING) and its diagnostics."""
    p = os.fspath(path)
    data, why = read_capped(p, max_bytes)
    if data is None:
        return MISSING, [why.diagnostic(p, max_bytes)]  # type: ignore[union-attr]
    value, d = loads(data, p)
    return value, [d] if d else []


def load_json_sized(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[Any, Diagnostic | None, int | None]:
    """:func:`load_json` for one file, also giving its size in bytes (None
    when it was not read) and at most one diagnostic."""
    data, why = read_capped(path, max_bytes)
    if data is None:
        return MISSING, why.diagnostic(path, max_bytes), None  # type: ignore[union-attr]
    value, d = loads(data, path)
    return value, d, len(data)


class JsonLine(Record):
    """One decoded line of a JSON Lines file: its value, 1-based line number
    and byte offset; ``value`` is MISSING when the line did not decode."""

    __slots__ = __match_args__ = ("value", "line", "offset", "raw")
    value: Any
    line: int
    offset: int
    raw: bytes

    def __init__(self, value: Any, line: int, offset: int, raw: bytes) -> None:
        self.value = value
        self.line = line
        self.offset = offset
        self.raw = raw


def iter_jsonl(data: bytes, file: str | None = None, diags: list[Diagnostic] | None = None) -> Iterator[JsonLine]:
    """Decode JSON Lines leniently.

    Blank lines are skipped. A line that does not decode yields a
    ``jsonl.invalid-line`` diagnostic; when it is the last line and the file
    does not end in a newline it is a cut-off write (``jsonl.truncated-line``),
    and the prefix before it is still read.
    """
    if diags is None:
        diags = []
    fast, dumps, JSONDecodeError = orjson.loads, orjson.dumps, orjson.JSONDecodeError
    find = data.find
    n = len(data)
    offset = 0
    lineno = 0
    while offset < n:  # one line at a time: a streaming caller holds one line's copy
        start = offset
        end = find(b"\n", start)
        if end < 0:
            end = n
        chunk = data[start:end]
        offset = end + 1
        lineno += 1
        # The fast path: orjson's decode, kept when writing it back gives the
        # line byte for byte (compact JSON Lines, as most harnesses write
        # them) or the cheap checks find nothing odd.
        try:
            value = fast(chunk)
        except JSONDecodeError:
            if not chunk.strip():
                continue  # a blank line (orjson refuses empty input)
        else:
            t = type(value)
            if t is dict or t is list:
                try:
                    out = dumps(value)
                except TypeError:  # nested too deep to write back
                    out = None
                if out is not None and (out == chunk or not suspicious_reencoded(chunk, out)):
                    yield JsonLine(value, lineno, start, chunk)
                    continue
            elif t is not float:  # a scalar line: only a float may be a bent integer
                yield JsonLine(value, lineno, start, chunk)
                continue
        # not JSON, or suspicious: the careful decode says what
        value, d = loads(chunk, file)
        if value is MISSING:
            if end == n:  # the last line, and the data does not end in a newline
                diags.append(
                    Diagnostic(
                        "jsonl.truncated-line",
                        "the final line is cut off (no newline, not valid JSON); the lines before it were read",
                        WARNING,
                        file=file,
                        line=lineno,
                        offset=start,
                    )
                )
            else:
                diags.append(
                    Diagnostic(
                        "jsonl.invalid-line",
                        f"line is not valid JSON: {d.message if d else ''}",
                        ERROR,
                        file=file,
                        line=lineno,
                        offset=start,
                    )
                )
            yield JsonLine(MISSING, lineno, start, chunk)
            continue
        if d is not None:
            d.line = lineno
            d.offset = start if d.offset is None else start + d.offset
            diags.append(d)
        yield JsonLine(value, lineno, start, chunk)


def load_jsonl(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[list[JsonLine] | None, list[Diagnostic]]:
    """Read a JSON Lines file: its decoded lines (None when the file could not
    be read) and the diagnostics for the file and for each bad line."""
    p = os.fspath(path)
    data, why = read_capped(p, max_bytes)
    if data is None:
        return None, [why.diagnostic(p, max_bytes)]  # type: ignore[union-attr]
    diags: list[Diagnostic] = []
    return list(iter_jsonl(data, p, diags)), diags
