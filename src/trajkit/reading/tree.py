"""Directory listings shared by every walk of one discovery.

:func:`trajkit.corpus.discover` asks each format that lists sessions itself
(``Format.find_sessions``) to walk the tree, then walks it once more to
detect what is left. Inside :func:`shared_listings` every such walk (this
module's :func:`walk` and :func:`scandir`, and every
:class:`~trajkit.reading.probe.Probe`) lists a folder with the operating
system once; the other walks get the same entries back. Outside it they are
plain ``os.scandir`` / ``os.walk`` (through the filesystem seam,
:mod:`.fs`: in memory while a run archive's group is read).

The listings live as long as the ``with`` block, in the current context only
(a :mod:`contextvars` variable): a thread that runs discovery in the
background shares nothing with the thread reading runs. The last walk
(discovery's own) lets go of each folder's listing once it has left the
folder (:func:`release`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
from typing import Callable, Iterator

from . import fs as _fs
from .fs import current as _mounted

_listings: contextvars.ContextVar[dict[str, list["Entry"] | OSError] | None] = contextvars.ContextVar(
    "trajkit_listings", default=None
)
#: each listed folder's names split as :func:`folder` gives them (made once, beside the listing)
_folders: contextvars.ContextVar[dict[str, tuple] | None] = contextvars.ContextVar("trajkit_folders", default=None)
#: the real paths of folders :func:`realpath` resolved
_reals: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("trajkit_reals", default=None)
#: ``(st_dev, st_ino)`` of folders :func:`identity` stat'ed
_ids: contextvars.ContextVar[dict[str, tuple[int, int]] | None] = contextvars.ContextVar("trajkit_ids", default=None)
#: answers about a folder's files that depend only on their bytes, per folder (:func:`file_answers`)
_answers: contextvars.ContextVar[dict[str, dict[str, dict]] | None] = contextvars.ContextVar(
    "trajkit_file_answers", default=None
)


@contextlib.contextmanager
def shared_listings() -> Iterator[None]:
    """Within the block, each folder is listed by the operating system at most once."""
    if _listings.get() is not None:  # already inside one: share it
        yield
        return
    token = _listings.set({})
    token_f = _folders.set({})
    token_r = _reals.set({})
    token_a = _answers.set({})
    token_i = _ids.set({})
    try:
        yield
    finally:
        _ids.reset(token_i)
        _answers.reset(token_a)
        _reals.reset(token_r)
        _folders.reset(token_f)
        _listings.reset(token)


def file_answers(folder: str, what: str) -> dict[str, object] | None:
    """Inside :func:`shared_listings`: a dict, by file name, of the answers
    called ``what`` about the entries of ``folder`` that depend only on what
    one discovery sees of them (a sniff's verdict on a file's head, or an
    answer about a sub-folder's layout such as claude-code's companion
    folders). It lives as long as the folder's shared listing, so the walks of
    one discovery that each ask the same of an entry (a format's
    ``find_sessions``, the sniff of the folder around it, its own sniff) work
    it out once. None outside, or while an archive is mounted."""
    cache = _answers.get()
    if cache is None or _mounted() is not None:
        return None
    per = cache.get(folder)
    if per is None:
        per = cache[folder] = {}
    got = per.get(what)
    if got is None:
        got = per[what] = {}
    return got


_DIR, _FILE, _OTHER, _LINK = 0, 1, 2, 3


class Entry:
    """One entry of a shared listing: what :class:`os.DirEntry` answers
    (``name``, ``path``, ``is_dir()``, ``is_file()``, ``is_symlink()``, with
    the same meaning and errors), in a third of the memory: the type is kept
    from the listing, and ``path`` is made when asked instead of held (a
    corpus of 10,000 runs has some 26,000 entries, held while discovery walks it).

    ``prefix``: the first :data:`PREFIX` bytes of the file once a probe of
    this discovery has read its head (:func:`note_head`), else None: a later
    walk that can rule a file out from its first bytes does so without
    opening it again (:func:`prefixes`)."""

    __slots__ = ("_dir", "name", "_kind", "_st", "prefix")

    def __init__(self, directory: str, e: os.DirEntry) -> None:
        self._dir = directory  # one string shared by every entry of the folder
        self.name = e.name
        # from the listing's d_type (an lstat where the file system gives none, as DirEntry does);
        # regular files first: most entries are, and then one question answers
        if e.is_file(follow_symlinks=False):
            self._kind = _FILE
        elif e.is_dir(follow_symlinks=False):
            self._kind = _DIR
        elif e.is_symlink():
            self._kind = _LINK
        else:
            self._kind = _OTHER
        self._st: os.stat_result | None = None
        self.prefix: bytes | None = None

    @property
    def path(self) -> str:
        return os.path.join(self._dir, self.name)

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<Entry {self.name!r}>"

    def is_symlink(self) -> bool:
        return self._kind == _LINK

    def _target(self) -> os.stat_result | None:
        # a symlink's target, followed once as DirEntry does; None when it is not there
        if self._st is None:
            try:
                self._st = os.stat(self.path)
            except FileNotFoundError:
                return None
        return self._st

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if self._kind != _LINK:
            return self._kind == _DIR
        if not follow_symlinks:
            return False
        st = self._target()
        return st is not None and stat.S_ISDIR(st.st_mode)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        if self._kind != _LINK:
            return self._kind == _FILE
        if not follow_symlinks:
            return False
        st = self._target()
        return st is not None and stat.S_ISREG(st.st_mode)


def _entry(directory: str, e: os.DirEntry) -> Entry | os.DirEntry:
    try:
        return Entry(directory, e)
    except OSError:  # its type needed an lstat that failed: the DirEntry itself says so when asked, as before
        return e


#: How many first bytes of a file a listing entry keeps once its head was read (:attr:`Entry.prefix`):
#: enough to see how a JSON file opens (``{"instance_id": ...``) past a byte order mark and some blanks.
PREFIX = 32


def note_head(entry: object, data: bytes) -> None:
    """Keep the first bytes of a file whose head was just read from disk on
    its shared listing entry (``entry``, what the probe found for it; nothing
    for any other kind of entry: outside :func:`shared_listings`, or a
    mounted archive's). They live as long as the listing (:func:`release`)."""
    if entry.__class__ is Entry:
        entry.prefix = data[:PREFIX]  # type: ignore[attr-defined]


def prefixes(path: str) -> dict[str, bytes]:
    """The first bytes (:data:`PREFIX` at most; fewer for a shorter file)
    of the files directly in folder ``path`` whose heads a probe of this
    discovery has read, by name; empty when the folder is not in the shared
    listings. Only to rule a file out: a prefix is what the file held when
    its head was read, like every answer kept for one discovery."""
    cache = _listings.get()
    got = cache.get(path) if cache is not None else None
    if got is None or isinstance(got, OSError):
        return {}
    return {e.name: e.prefix for e in got if getattr(e, "prefix", None) is not None}


def scandir(path: str | os.PathLike) -> list[os.DirEntry] | list[Entry]:
    """The entries of a folder, in the operating system's order (``os.scandir``
    made a list); raises ``OSError`` as it does. Cached inside
    :func:`shared_listings`, as :class:`Entry` objects."""
    t = _mounted()  # the filesystem seam (reading.fs), inlined: every listing of a discovery comes here
    if t is not None:
        return t.scandir(path)  # a memory tree's listing is never kept: a shared cache may outlive the mount
    cache = _listings.get()
    if cache is None:
        with os.scandir(path) as it:
            return list(it)
    p = os.fspath(path)
    got = cache.get(p)
    if got is None:
        try:
            with os.scandir(p) as it:
                got = [_entry(p, e) for e in it]
        except OSError as e:
            got = e
        cache[p] = got
    if isinstance(got, OSError):
        raise got
    return got


def release(path: str | os.PathLike) -> None:
    """Forget the shared listings of ``path`` and of every folder below it
    that is held (and their :func:`file_answers`) (a walk that has left a folder for good: the listings of a
    big tree are most of what discovery holds). A later ask lists a folder
    again. Nothing outside :func:`shared_listings`."""
    cache = _listings.get()
    if cache is None:
        return
    folders = _folders.get()
    reals = _reals.get()
    answers = _answers.get()
    ids = _ids.get()
    todo = [os.fspath(path)]
    while todo:  # linear in what is held: each listing is popped once, and only held folders are looked into
        p = todo.pop()
        if folders:
            folders.pop(p, None)
        if reals:
            reals.pop(p, None)
        if answers:
            answers.pop(p, None)
        if ids:
            ids.pop(p, None)
        got = cache.pop(p, None)
        if got is None or isinstance(got, OSError):
            continue
        for e in got:
            if getattr(e, "_kind", _LINK) != _FILE:  # a folder, a symlink (followed by some walks) or unknown
                p = e.path
                if p in cache:
                    todo.append(p)


def walk(top: str | os.PathLike, onerror: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, onerror=onerror)``: top-down, symlinked folders listed
    among the folders but not walked into; prune by editing the folder list."""
    yield from _walk(os.fspath(top), onerror)


def _walk(top: str, onerror: Callable[[OSError], None] | None) -> Iterator[tuple[str, list[str], list[str]]]:
    try:
        entries = scandir(top)
    except OSError as e:
        if onerror is not None:
            onerror(e)
        return
    dirs: list[str] = []
    nondirs: list[str] = []
    links: set[str] = set()
    for e in entries:
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            dirs.append(e.name)
            try:
                if e.is_symlink():
                    links.add(e.name)
            except OSError:
                pass
        else:
            nondirs.append(e.name)
    yield top, dirs, nondirs
    for name in dirs:
        if name not in links:
            yield from _walk(os.path.join(top, name), onerror)


#: What :func:`folder` gives: ``(dirs, nondirs, odd, links)``. ``dirs``: the
#: names of the entries that are folders (symlinks followed), sorted;
#: ``nondirs``: every other name, sorted (``os.walk``'s two lists);
#: ``odd``: the names in ``nondirs`` that are no regular file (a dangling
#: symlink, a FIFO; nearly always empty); ``links``: the names that are
#: symlinks (walks list a symlinked folder but do not go in).
Folder = tuple[tuple[str, ...], tuple[str, ...], frozenset[str], frozenset[str]]

_NONE: frozenset[str] = frozenset()


def folder(path: str | os.PathLike) -> Folder:
    """A folder's names split and sorted as every ``find_sessions`` walk wants
    them (see :data:`Folder`); raises ``OSError`` as :func:`scandir` does.
    Made once per folder inside :func:`shared_listings`, so the formats' walks
    after the first do not ask each entry its type again nor sort its names
    again."""
    p = os.fspath(path)
    cache = _folders.get()
    if cache is None or _mounted() is not None:
        return _split(scandir(p))
    got = cache.get(p)
    if got is None:
        dirs, nondirs, odd, links = _split(scandir(p))  # scandir raises, and keeps the error for the next ask
        # held for every folder of a discovery until its walk leaves it: one tuple,
        # (number of folders, odd, links, the folders' names..., the other names...)
        got = cache[p] = (len(dirs), odd, links, *dirs, *nondirs)
    k = got[0] + 3
    return got[3:k], got[k:], got[1], got[2]


def _split(entries: list) -> Folder:
    dirs: list[str] = []
    nondirs: list[str] = []
    odd: list[str] = []
    links: list[str] = []
    for e in entries:
        kind = getattr(e, "_kind", None)  # an Entry's type from the listing, without a method call
        if kind == _FILE:
            nondirs.append(e.name)
        elif kind == _DIR:
            dirs.append(e.name)
        elif kind == _OTHER:
            nondirs.append(e.name)
            odd.append(e.name)
        else:  # a symlink, or an entry of another kind (a DirEntry, a memory tree's): ask it, as walk() does
            try:
                if e.is_symlink():
                    links.append(e.name)
            except OSError:
                pass
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                dirs.append(e.name)
            else:
                nondirs.append(e.name)
                try:
                    regular = e.is_file()
                except OSError:
                    regular = False
                if not regular:
                    odd.append(e.name)
    dirs.sort()
    nondirs.sort()
    return tuple(dirs), tuple(nondirs), frozenset(odd) if odd else _NONE, frozenset(links) if links else _NONE


def any_ending(names: tuple[str, ...] | list[str], suffix: str) -> bool:
    """``any(n.endswith(suffix) for n in names)`` for a folder's names (no
    NUL in a name): one join and one search in C, where the walks asked it
    name by name of every folder (most folders hold no name a format wants)."""
    if not names:
        return False
    joined = "\0".join(names)
    return joined.endswith(suffix) or suffix + "\0" in joined


def any_starting(names: tuple[str, ...] | list[str], prefix: str | tuple[str, ...]) -> bool:
    """``any(n.startswith(prefix) for n in names)`` for a folder's names (no
    NUL in a name; ``prefix`` one string or a tuple of them, as ``startswith``
    takes); see :func:`any_ending`."""
    if not names:
        return False
    joined = "\0".join(names)
    if joined.startswith(prefix):
        return True
    if isinstance(prefix, str):
        return "\0" + prefix in joined
    for p in prefix:
        if "\0" + p in joined:
            return True
    return False


def identity(path: str) -> tuple[int, int]:
    """``(st_dev, st_ino)`` of ``fs.stat(path)`` (symlinks followed; raises
    ``OSError`` as it does): how the walks that follow symlinked folders know
    one they have been in. Inside :func:`shared_listings` a folder is stat'ed
    once for all of them (kept with its listing; not while an archive is mounted)."""
    ids = _ids.get()
    if ids is None or _mounted() is not None:
        st = _fs.stat(path)
        return st.st_dev, st.st_ino
    got = ids.get(path)
    if got is None:
        st = _fs.stat(path)  # an error is not kept: each walk asks again, as it did
        got = ids[path] = (st.st_dev, st.st_ino)
    return got


def join(directory: str, name: str) -> str:
    """``os.path.join(directory, name)`` for a name from a listing (no separator in it)."""
    return directory + name if directory.endswith(os.sep) else directory + os.sep + name


def held(path: str) -> list["Entry"] | None:
    """The shared listing of ``path`` when one is held (listed by a walk of
    this discovery and not released yet), without listing it; else None (also
    outside :func:`shared_listings` and while an archive is mounted). Lets a
    probe that did not list a folder itself answer from the listing a walk made."""
    cache = _listings.get()
    if cache is None or _mounted() is not None:
        return None
    got = cache.get(path)
    return None if got is None or isinstance(got, OSError) else got


def walk_sorted(top: str | os.PathLike, onerror: Callable[[OSError], None] | None = None
                ) -> Iterator[tuple[str, list[str], list[str]]]:
    """:func:`walk` with each folder's names sorted (the order of the formats'
    walks), from :func:`folder`: yields ``(dirpath, dirnames, filenames)``;
    ``dirnames`` is the walk's own list (prune it, or reorder it, to steer the
    walk), ``filenames`` is shared (do not edit it). Symlinked folders are
    listed among the folders but not walked into."""
    stack = [os.fspath(top)]
    held = _folders.get()
    while stack:  # depth first, top-down, in the order of each folder's (edited) dirnames, as walk()
        d = stack.pop()
        got = held.get(d) if held is not None and _mounted() is None else None
        if got is not None:  # folder(d) made already (the walks after the first): its parts, without the call
            k = got[0] + 3
            sub = list(got[3:k])
            nondirs = got[k:]
            links = got[2]
        else:
            try:
                dirs, nondirs, _odd, links = folder(d)
            except OSError as e:
                if onerror is not None:
                    onerror(e)
                continue
            sub = list(dirs)
        yield d, sub, nondirs
        if sub:
            base = d if d.endswith(os.sep) else d + os.sep
            if links:
                stack.extend([base + n for n in reversed(sub) if n not in links])
            else:
                stack.extend([base + n for n in reversed(sub)])


def realpath(path: str) -> str:
    """``fs.realpath(path)`` for an absolute, normalized path, from the shared
    listings where they hold its folders: a name that is no symlink in its
    folder's listing adds itself to the folder's real path (resolved once per
    folder), where ``os.path.realpath`` asks each part of the path again with
    an ``lstat``. Anything else (a symlink on the way, a folder not listed,
    outside :func:`shared_listings`) is ``fs.realpath``'s."""
    reals = _reals.get()
    if reals is None or _mounted() is not None:
        return _fs.realpath(path)
    parent, name = os.path.split(path)
    if not name or name in _links_of(parent):  # the root, a symlink, or a folder not listed (None below)
        return _fs.realpath(path)
    return join(_real_dir(parent, reals), name)  # a name absent from the listing is kept as written, as realpath does


def _links_of(d: str) -> "frozenset[str] | _Any":
    # the symlinks of a listed folder; when it is not listed, a set that holds every name
    cache = _listings.get()
    got = cache.get(d) if cache is not None else None
    if got is None or isinstance(got, OSError):
        return _ANY
    return folder(d)[3]


class _Any:
    __slots__ = ()

    def __contains__(self, name: object) -> bool:
        return True


_ANY = _Any()


def _real_dir(d: str, reals: dict[str, str]) -> str:
    got = reals.get(d)
    if got is None:
        parent, name = os.path.split(d)
        if not name or name in _links_of(parent):
            got = _fs.realpath(d)
        else:
            got = join(_real_dir(parent, reals), name)
        reals[d] = got
    return got
