"""A cached view of the filesystem for one detection.

:func:`trajkit.registry.detect` makes one :class:`Probe` and hands it to every
format's ``sniff(probe, candidate, fingerprint)``; a format keeps what it
learned for its reader in ``Match.hint``. Every directory is listed at most
once, every path is ``stat``-ed at most once and every file's head is read at
most once per detection, whichever format asks and however often.

Heads are read with :func:`trajkit.reading.io.head`: regular files only,
non-blocking, so a FIFO or ``/dev/zero`` named like a run's file costs
nothing. :func:`logical_abspath` is how detection and reading turn a user's
path into an absolute one.
"""

from __future__ import annotations

import os
import stat as _stat
from typing import Any

from orjson import JSONDecodeError as _DecodeError
from orjson import loads as _loads

from . import fs as _fs
from .fs import current as _mounted
from .io import head as _head
from .tree import held as _held
from .tree import note_head as _note_head
from .tree import scandir as _scandir

_MISSING: Any = object()
_fspath = os.fspath
_SEP = os.sep
#: The least a head read fetches (formats ask for 256 bytes to 1 MiB).
_MIN_HEAD = 1 << 16
#: How many lines of a head :class:`HeadLines` cuts apart (sniffs look at 40 to 64).
HEAD_LINES = 64


class HeadLines:
    """A file's head cut into lines, each decoded as JSON at most once,
    whichever sniff asks (:meth:`Probe.lines`): several formats sniff the same
    ``.jsonl`` file line by line, and decoding its head was most of what each did.

    ``parts`` is ``data.split(b"\\n", HEAD_LINES)``: its first ``HEAD_LINES``
    items are the head's first lines; when there are more, the last item holds
    the rest (``complete`` is False) and is not a line. :meth:`value` is
    ``orjson.loads(parts[i].strip())`` for a line that starts with ``{`` once
    stripped, :data:`NOT_DECODED` for any other line or one that does not decode.
    Treat the values as read-only: they are shared.

    Lines are found as they are asked for (:meth:`span`): a sniff that decides
    on the first line does not cut the whole head; ``parts`` is made on first use.
    """

    __slots__ = ("data", "_parts", "_spans", "_vals")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._parts: list[bytes] | None = None
        self._spans: list[tuple[int, int, bool]] = []
        self._vals: dict[int, Any] = {}

    @property
    def parts(self) -> list[bytes]:
        got = self._parts
        if got is None:
            got = self._parts = self.data.split(b"\n", HEAD_LINES)
        return got

    @property
    def complete(self) -> bool:
        return len(self.parts) <= HEAD_LINES

    def span(self, i: int) -> tuple[int, int, bool] | None:
        """``(start, end, last)`` of line ``i`` (``i < HEAD_LINES``): ``parts[i]``
        is ``data[start:end]``, and ``last`` says no newline follows it (it is
        the head's last part); None when the head has no line ``i``."""
        spans = self._spans
        while len(spans) <= i:
            if spans:
                _start, end, last = spans[-1]
                if last:
                    return None
                start = end + 1
            else:
                start = 0
            nl = self.data.find(b"\n", start)
            spans.append((start, len(self.data), True) if nl < 0 else (start, nl, False))
        return spans[i]

    def value(self, i: int) -> Any:
        v = self._vals.get(i, _MISSING)
        if v is _MISSING:
            if i < HEAD_LINES:
                start, end, _last = self.span(i)  # type: ignore[misc]
                line = self.data[start:end].strip()
            else:
                line = self.parts[i].strip()
            v = NOT_DECODED
            if line[:1] == b"{":
                try:
                    v = _loads(line)
                except _DecodeError:
                    pass
            self._vals[i] = v
        return v


def has_u_escape(data: bytes) -> bool:
    """Whether ``data`` holds ``\\u`` (a JSON ``\\uXXXX`` escape, the one way a
    key or a word can be written without its plain bytes: sniffs that look for
    plain bytes look closer when this is True). A ``memchr`` finds the first
    backslash; half the heads detection meets have none. The answer for the
    last ``data`` asked about is kept: the codex, gemini-cli and
    openhands-cloud sniffs each ask it of the same head object in turn."""
    global _last_u
    last = _last_u
    if last[0] is data:
        return last[1]
    i = data.find(b"\\")
    got = i >= 0 and data.find(b"\\u", i) >= 0
    _last_u = (data, got)
    return got


#: ``(head, has_u_escape(head))`` for the last head asked about (bytes are immutable: the answer stays true).
_last_u: tuple[Any, bool] = (None, False)


#: What :meth:`HeadLines.value` gives for a line that is no JSON object text or does not decode.
NOT_DECODED: Any = object()


class Probe:
    """Cached ``listdir``, ``stat``, ``is_dir``, ``is_file`` and ``head``.

    Paths are strings or path-like objects; results are cached by the string
    form, so ``/a/b`` and ``Path("/a/b")`` share one entry. ``calls`` counts
    the system-level look-ups actually made (for tests and benchmarks).
    """

    __slots__ = ("_ls", "_entries", "_index", "_known", "_scans", "_st", "_heads", "_lines", "_taken", "_taken_lines",
                 "globs", "memo", "calls", "_named", "_named_s")

    def __init__(self) -> None:
        self._ls: dict[str, list[str] | None] = {}
        self._entries: dict[str, list[os.DirEntry] | None] = {}
        self._index: dict[str, dict[str, os.DirEntry]] = {}
        #: what :meth:`_entry` answered from a listing, by path (sniffs ask of the same path again and again)
        self._known: dict[str, Any] = {}
        self._scans: dict[str, tuple[set[str], set[str]]] = {}
        self._st: dict[str, os.stat_result | None] = {}
        self._heads: dict[str, tuple[bytes, int]] = {}
        self._lines: dict[tuple[str, int], HeadLines] = {}
        #: heads and lines another probe read, not asked yet here (:meth:`take_heads`)
        self._taken: dict[str, tuple[bytes, int]] = {}
        self._taken_lines: dict[tuple[str, int], HeadLines] = {}
        #: detection's fingerprint answers, ``(directory, glob) -> bool``
        #: (several formats share a glob such as ``*.json``)
        self.globs: dict[tuple[str, str], bool] = {}
        #: answers a sniff derived from what this probe saw, ``(what, path) -> answer``
        #: (e.g. whose companion folder a folder is: asked for every file in it),
        #: kept as long as the probe, which is as long as its cached listings and stats
        self.memo: dict[tuple[str, str], Any] = {}
        self.calls = 0
        #: a path object whose string form is known (:meth:`name`), and that form
        self._named: Any = _MISSING
        self._named_s = ""

    def name(self, path: os.PathLike, s: str) -> None:
        """Say that the path object ``path`` (a ``Path`` made from ``s``) is
        ``s``: asks about that very object take ``s`` instead of calling
        ``os.fspath`` (two Python-level calls for a ``Path``), and sniffs ask
        about the candidate they were handed again and again. One object at a
        time, the last named; it is matched by identity, and the probe holds it."""
        self._named = path
        self._named_s = s

    def fspath(self, path: str | os.PathLike) -> str:
        """``os.fspath(path)``, without its Python-level calls for the path last
        :meth:`name`-d (the candidate detection hands the sniffs)."""
        return self._named_s if path is self._named else _fspath(path)

    def _list(self, p: str) -> list[str] | None:
        # one scandir serves listdir() and scan(): the entries keep their type
        self.calls += 1
        try:
            entries = _scandir(p)  # shared by every probe and walk of one discovery (reading.tree)
        except OSError:
            self._entries[p] = None
            self._ls[p] = None
            return None
        self._entries[p] = entries
        names = self._ls[p] = [e.name for e in entries]
        return names

    def listdir(self, path: str | os.PathLike) -> list[str] | None:
        """The names in a directory (unsorted, as the OS gives them), or None
        when it cannot be listed."""
        p = self._named_s if path is self._named else _fspath(path)
        names = self._ls.get(p, _MISSING)
        if names is _MISSING:
            names = self._list(p)
        return names

    def list_folder(self, folder: str) -> list[str] | None:
        """:meth:`listdir` of ``folder`` (a string, as the walk gives it), with
        each of its entries known by its path (``folder/name``) from then on:
        a walk asks about every entry of the folder it lists (its sniffs, about
        the entry and its siblings), and each path is then one dict look-up
        instead of a split and two."""
        names = self._ls.get(folder, _MISSING)
        if names is _MISSING:
            names = self._list(folder)
        entries = self._entries.get(folder)
        if entries:
            inside = folder if folder.endswith(_SEP) else folder + _SEP
            self._known.update(zip([inside + e.name for e in entries], entries))
        return names

    def scan(self, path: str | os.PathLike) -> tuple[set[str], set[str]]:
        """(directory names, file names) in a directory, symlinks followed;
        both empty when it cannot be listed. Entries that are neither (a
        dangling symlink, a FIFO) are in :meth:`listdir` only."""
        p = self._named_s if path is self._named else _fspath(path)
        got = self._scans.get(p)
        if got is not None:
            return got
        if p not in self._entries:
            self._list(p)
        dirs: set[str] = set()
        files: set[str] = set()
        for e in self._entries[p] or ():
            try:
                if e.is_dir():
                    dirs.add(e.name)
                elif e.is_file():
                    files.add(e.name)
            except OSError:
                continue
        self._scans[p] = got = (dirs, files)
        return got

    def stat(self, path: str | os.PathLike) -> os.stat_result | None:
        """``os.stat`` (symlinks followed), or None when it fails."""
        p = self._named_s if path is self._named else _fspath(path)
        st = self._st.get(p, _MISSING)
        if st is _MISSING:
            self.calls += 1
            try:
                t = _mounted()  # the filesystem seam (reading.fs), inlined: one stat per path of every detection
                st = os.stat(p) if t is None else t.stat(p)
            except (OSError, ValueError):
                st = None
            self._st[p] = st
        return st

    def _entry(self, p: str) -> Any:
        """The directory entry for ``p`` when its parent has been listed
        (None when the listing does not hold it, or when the parent is known
        not to be there or not to be a folder), else _MISSING. An answer
        other than _MISSING never changes (listings and stats are kept as
        first seen), so it is kept."""
        got = self._known.get(p, _MISSING)
        if got is _MISSING:
            got = self._find_entry(p)
            if got is not _MISSING:
                self._known[p] = got
        return got

    def _find_entry(self, p: str) -> Any:
        i = p.rfind(_SEP)
        if i > 0 and p[i - 1] != _SEP:  # what os.path.split gives, without its Python-level steps
            parent, name = p[:i], p[i + 1:]
        else:
            parent, name = os.path.split(p)
        entries = self._entries.get(parent, _MISSING)
        if entries is _MISSING and parent not in self._st:
            held = _held(parent)  # a walk of this discovery listed the folder: its listing answers here too
            if held is not None:
                entries = self._entries[parent] = held
        if entries is _MISSING:
            st = self._st.get(parent, _MISSING)
            if st is None or (st is not _MISSING and not _stat.S_ISDIR(st.st_mode)):
                return None  # under a path that is not there, or not a folder: nothing is
            j = parent.rfind(_SEP)
            if j > 0 and parent[j - 1] != _SEP:
                grand, pname = parent[:j], parent[j + 1:]
            else:
                grand, pname = os.path.split(parent)
            if pname and self._entries.get(grand) and pname not in self._index_of(grand):
                return None  # the parent is not in its own folder's listing: nothing under it is there
            return _MISSING
        if entries is None:
            return _MISSING
        return self._index_of(parent).get(name)

    def _index_of(self, listed: str) -> dict[str, os.DirEntry]:
        """The entries of a listed folder by name."""
        index = self._index.get(listed)
        if index is None:
            index = self._index[listed] = {e.name: e for e in self._entries[listed] or ()}
        return index

    def absent(self, path: str | os.PathLike) -> bool:
        """True when ``path`` certainly does not exist (symlinks followed):
        answered from the parent's listing, a stat already made, or one
        ``access`` call, which says "no" without the exception a failing
        ``stat`` raises (twice its cost). For look-ups that mostly miss (a
        ``verifier/`` above a run, an ``X.jsonl`` beside an ancestor); False
        means "ask :meth:`is_file` / :meth:`is_dir`"."""
        p = self._named_s if path is self._named else _fspath(path)
        st = self._st.get(p, _MISSING)
        if st is not _MISSING:
            return st is None
        e = self._entry(p)
        if e is not _MISSING:
            if e is None:
                return True
            try:
                if not e.is_symlink():
                    return False
            except OSError:
                pass
        self.calls += 1
        if _fs.absent(p):  # one access() call (a mounted archive's tree when there is one)
            self._st[p] = None
            return True
        return False

    def exists(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` exists (symlinks followed); an entry of a listed
        folder that is no symlink is answered without a system call."""
        p = self._named_s if path is self._named else _fspath(path)
        if p not in self._st:
            e = self._entry(p)
            if e is not _MISSING and e is not None:
                try:
                    if not e.is_symlink():
                        return True
                except OSError:
                    pass
        return self.stat(p) is not None

    def is_dir(self, path: str | os.PathLike) -> bool:
        """A directory (symlinks followed); answered from the parent's
        listing when there is one, without a system call."""
        p = self._named_s if path is self._named else _fspath(path)
        if p not in self._st:
            e = self._entry(p)
            if e is not _MISSING:
                try:
                    return e is not None and e.is_dir()
                except OSError:
                    return False
        st = self.stat(p)
        return st is not None and _stat.S_ISDIR(st.st_mode)

    def is_file(self, path: str | os.PathLike) -> bool:
        """A regular file (symlinks followed): not a FIFO, device or socket;
        answered from the parent's listing when there is one."""
        p = self._named_s if path is self._named else _fspath(path)
        if p not in self._st:
            e = self._known.get(p, _MISSING)  # _entry(p), its common case inline: asked ~4 times per file walked
            if e is _MISSING:
                e = self._entry(p)
            if e is not _MISSING:
                try:
                    return e is not None and e.is_file()
                except OSError:
                    return False
        st = self.stat(p)
        return st is not None and _stat.S_ISREG(st.st_mode)

    def listed(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` has been listed already (so asking about its names costs nothing)."""
        return (self._named_s if path is self._named else _fspath(path)) in self._ls

    def index(self, directory: str | os.PathLike) -> dict[str, os.DirEntry] | None:
        """The entries of a directory by name (listed once, as :meth:`listdir`
        lists it), or None when it cannot be listed: detection asks whether a
        fingerprint's literal first name is there, one look-up each."""
        p = self._named_s if directory is self._named else _fspath(directory)
        index = self._index.get(p)
        if index is None:
            if self.listdir(p) is None:
                return None
            index = self._index[p] = {e.name: e for e in self._entries[p] or ()}
        return index

    def has(self, directory: str | os.PathLike, name: str) -> bool:
        """Whether ``name`` is listed in ``directory`` (a set look-up: detection asks it of big folders
        such as the ones above a corpus, entry after entry)."""
        p = os.fspath(directory)
        index = self._index.get(p)
        if index is None:
            if self.listdir(p) is None:
                return False
            index = self._index[p] = {e.name: e for e in self._entries[p] or ()}
        return name in index

    def drop_heads(self) -> None:
        """Forget the file heads read so far (they are the bulk of what a
        probe holds; a long walk keeps its listings and drops the heads
        once each entry is decided)."""
        self._heads.clear()
        self._lines.clear()

    def take_heads(self, other: "Probe", folder: str) -> None:
        """Take the heads ``other`` read of the files directly in ``folder``
        (a walk going into a folder whose own detection read some of its
        files: its entries' sniffs would read them again). They are handed
        out once, on the first ask for each, and not dropped before."""
        split = os.path.split
        for p in [p for p in other._heads if split(p)[0] == folder]:
            self._taken[p] = other._heads.pop(p)
        for k in [k for k in other._lines if split(k[0])[0] == folder]:
            self._taken_lines[k] = other._lines.pop(k)

    def whole(self, path: str | os.PathLike, cap: int) -> bytes | None:
        """The complete bytes of a file whose head was read already and held
        all of it (a file shorter than the head read), when non-empty and at
        most ``cap`` bytes; else None (read it). Lets a reader take the file
        detection sniffed without opening it again."""
        got = self._heads.get(self._named_s if path is self._named else _fspath(path))
        if got is None:
            return None
        data, asked = got
        if not data or len(data) >= asked or len(data) > cap:
            return None
        return data

    def head(self, path: str | os.PathLike, n: int) -> bytes:
        """The first ``n`` bytes of a regular file (``b""`` otherwise). At
        least 64 KiB is read once and kept, and shorter asks are slices of it."""
        p = self._named_s if path is self._named else _fspath(path)
        got = self._heads.get(p)
        if got is None and self._taken:
            got = self._taken.pop(p, None)
            if got is not None:
                self._heads[p] = got
        if got is not None:
            data, asked = got
            if asked >= n or len(data) < asked:  # enough, or the whole file
                return data[:n]
        self.calls += 1
        want = max(n, _MIN_HEAD)  # one read serves the other formats' smaller asks
        e = self._entry(p)  # its entry when its folder was listed
        try:
            regular = e is not None and e is not _MISSING and e.is_file(follow_symlinks=False)
        except OSError:
            regular = False
        data = _head(p, want, regular)
        if regular:  # e is a listing's entry: keep the file's first bytes there for the walks after this one
            _note_head(e, data)
        self._heads[p] = (data, want)
        return data[:n]

    def lines(self, path: str | os.PathLike, n: int) -> HeadLines:
        """The first ``n`` bytes of a file (:meth:`head`) as :class:`HeadLines`,
        made once per probe: every sniff asking for the same head shares its
        lines and their decoded values (dropped with the heads)."""
        p = self._named_s if path is self._named else _fspath(path)
        got = self._lines.get((p, n))
        if got is None:
            got = self._taken_lines.pop((p, n), None) if self._taken_lines else None
            if got is None or len(got.data) != len(self.head(p, n)):  # taken lines are of the head taken with them
                got = HeadLines(self.head(p, n))
            self._lines[(p, n)] = got
        return got


def logical_abspath(path: str | os.PathLike) -> str:
    """An absolute path for ``path``, resolved the way ``cd`` does.

    Like the shell's logical ``cd``, ``..`` removes the name before it
    (``base/sym/../inner`` is ``base/inner``), which is what
    :func:`os.path.abspath` does. When that path does not exist but the path
    as written does (``sym`` is a symlink whose target has a sibling
    ``inner``), it falls back to the physical meaning, as ``cd`` does: each
    ``..`` that follows a symlink goes to the parent of the symlink's target.
    Symlinks that are not followed by ``..`` are kept as written.
    """
    p = os.fspath(path)
    logical = os.path.abspath(p)
    if ".." not in p.split(os.sep) or _fs.lexists(logical) or not _fs.lexists(p):
        return logical
    parts = os.path.join(os.getcwd(), p).split(os.sep) if not os.path.isabs(p) else p.split(os.sep)
    out = os.sep
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if _fs.islink(out):
                out = os.path.dirname(_fs.realpath(out))
            else:
                out = os.path.dirname(out)
            continue
        out = os.path.join(out, part)
    return out
