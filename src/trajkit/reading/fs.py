"""The one filesystem seam of the reader toolkit: the operating system, or a
run archive's members held in memory.

Readers, detection and discovery look at files only through this module
(listings, ``stat``, "is it a file / a folder"), the capped reads of
:mod:`.io` and the walks of :mod:`.tree`. By default every function here is
the plain ``os`` call it names. Inside :func:`mounted` they answer from a :class:`MemoryTree` instead:
the members of one group of a run archive (:mod:`trajkit.corpus.archive`),
addressed by virtual paths ``<archive path>/<member path>``. The archive's
own path is a folder there, so every ``os.path`` string operation a reader
makes keeps working and the source references of what it reads point into
the archive; nothing is written to any filesystem.

The mount is per call and per context (a :mod:`contextvars` variable), never
a global: a worker process reading an archive's group sees it only inside
the ``with`` block, and a thread started meanwhile (discovery in the
background of the driver) sees the operating system.

While a tree is mounted it is the whole filesystem: a path outside the
archive is not there (the archive's ancestors are folders holding only the
next folder down), so a run inside an archive can never make a reader open a
file of the machine it is read on.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat as _stat
from typing import Callable, Iterable, Iterator

_mounted: contextvars.ContextVar["MemoryTree | None"] = contextvars.ContextVar("trajkit_fs", default=None)

#: The mounted tree of the current context, or None (the operating system).
current = _mounted.get


@contextlib.contextmanager
def mounted(tree: "MemoryTree") -> Iterator["MemoryTree"]:
    """Within the block (this context only), the filesystem is ``tree``."""
    token = _mounted.set(tree)
    try:
        yield tree
    finally:
        _mounted.reset(token)


_FILE_MODE = _stat.S_IFREG | 0o444
_DIR_MODE = _stat.S_IFDIR | 0o555


def _missing(path: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


class MemoryTree:
    """Files held in memory under a mount point: ``files`` gives member paths
    (``/``-separated, relative, with no empty, ``.`` or ``..`` part: see
    :func:`trajkit.corpus.archive.safe_name`) with their bytes and mtime. Folders are implied by
    the paths; the mount point and its ancestors are folders. Listings are in
    name order. Read-only: it offers no way to write."""

    __slots__ = ("root", "_files", "_dirs", "_mtime", "_ino")

    def __init__(self, root: str, files: Iterable[tuple[str, bytes, float]], mtime: float = 0.0,
                 on_clash: Callable[[str, str], None] | None = None) -> None:
        self.root = root = os.path.normpath(os.path.abspath(root))
        self._mtime = mtime
        self._files: dict[str, tuple[bytes, float]] = {}
        dirs: dict[str, dict[str, bool]] = {}
        # the ancestors of the mount point hold only the next folder down
        d = root
        dirs[d] = {}
        while True:
            parent, name = os.path.split(d)
            if not name or parent == d:
                break
            dirs.setdefault(parent, {})[name] = True
            d = parent
        sep = os.sep
        for rel, data, mt in files:
            parts = rel.split("/")
            # where the member would go: every folder above it free of a file, and no entry of its name yet
            why = None
            d = root
            ancestors = []
            for i in range(len(parts) - 1):
                d = d + sep + parts[i]
                if d in self._files:
                    why = "File exists" if i == len(parts) - 2 else "Not a directory"
                    break
                ancestors.append(d)
            p = d + sep + parts[-1]
            if why is None and (p in self._files or p in dirs):
                why = "File exists"
            if why is not None:
                if on_clash is not None:
                    on_clash(rel, why)
                continue
            self._files[p] = (data, mt)
            d = root
            for part, a in zip(parts, ancestors):
                dirs[d][part] = True
                d = a
                if d not in dirs:
                    dirs[d] = {}
            dirs[d][parts[-1]] = False
        self._dirs = {k: dict(sorted(v.items())) for k, v in dirs.items()}
        # a distinct inode per entry: walks that cut loops by (device, inode) see different folders
        self._ino = {k: i for i, k in enumerate((*self._dirs, *self._files), 1)}

    # ------------------------------------------------------------ look-ups
    def _key(self, path: str | os.PathLike) -> str:
        p = os.fspath(path)
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        if p in self._files or p in self._dirs:
            return p
        return os.path.normpath(os.path.abspath(p))

    def data(self, path: str | os.PathLike) -> bytes | None:
        """The bytes of the file at ``path``, or None when there is no such file."""
        got = self._files.get(self._key(path))
        return None if got is None else got[0]

    def kind(self, path: str | os.PathLike) -> str | None:
        """``"file"``, ``"dir"`` or None (not there)."""
        k = self._key(path)
        if k in self._files:
            return "file"
        if k in self._dirs:
            return "dir"
        return None

    def missing(self, path: str | os.PathLike) -> OSError:
        """The error the operating system gives for a path that is not there:
        ``ENOTDIR`` when a file stands where one of its folders should be,
        else ``ENOENT``."""
        k = self._key(path)
        d = os.path.dirname(k)
        while d not in self._dirs:
            if d in self._files:
                return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), k)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        return _missing(k)

    def stat(self, path: str | os.PathLike) -> os.stat_result:
        k = self._key(path)
        got = self._files.get(k)
        if got is not None:
            return _stat_result(_FILE_MODE, self._ino[k], len(got[0]), got[1])
        if k in self._dirs:
            return _stat_result(_DIR_MODE, self._ino[k], 0, self._mtime)
        raise self.missing(k)

    def scandir(self, path: str | os.PathLike) -> list["MemoryEntry"]:
        k = self._key(path)
        kids = self._dirs.get(k)
        if kids is None:
            if k in self._files:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), k)
            raise self.missing(k)
        base = os.fspath(path)
        return [MemoryEntry(self, name, os.path.join(base, name), is_dir) for name, is_dir in kids.items()]

    def listdir(self, path: str | os.PathLike) -> list[str]:
        return [e.name for e in self.scandir(path)]

    def size_under(self, path: str | os.PathLike) -> int:
        """The bytes of the file at ``path``, or of every file below the folder at ``path``."""
        k = self._key(path)
        got = self._files.get(k)
        if got is not None:
            return len(got[0])
        pre = k.rstrip(os.sep) + os.sep
        return sum(len(d) for p, (d, _m) in self._files.items() if p.startswith(pre))


def _stat_result(mode: int, ino: int, size: int, mtime: float) -> os.stat_result:
    ns = int(mtime * 1e9)
    it = int(mtime)
    return os.stat_result((mode, ino, 0, 1, 0, 0, size, it, it, it, mtime, mtime, mtime, ns, ns, ns))


class MemoryEntry:
    """A :class:`MemoryTree` entry with the face of :class:`os.DirEntry`."""

    __slots__ = ("_tree", "name", "path", "_dir")

    def __init__(self, tree: MemoryTree, name: str, path: str, is_dir: bool) -> None:
        self._tree, self.name, self.path, self._dir = tree, name, path, is_dir

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._dir

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return not self._dir

    def is_symlink(self) -> bool:
        return False

    def is_junction(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._tree.stat(self.path)

    def inode(self) -> int:
        return self._tree.stat(self.path).st_ino

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<MemoryEntry {self.name!r}>"


# ---------------------------------------------------------------- the seam: os by default


def scandir(path: str | os.PathLike) -> list:
    """``os.scandir`` made a list (entries with ``name``, ``path``, ``is_dir()``,
    ``is_file()``, ``is_symlink()``, ``stat()``); raises ``OSError`` as it does."""
    t = _mounted.get()
    if t is None:
        with os.scandir(path) as it:
            return list(it)
    return t.scandir(path)


def listdir(path: str | os.PathLike) -> list[str]:
    """``os.listdir``."""
    t = _mounted.get()
    return os.listdir(path) if t is None else t.listdir(path)


def stat(path: str | os.PathLike) -> os.stat_result:
    """``os.stat`` (symlinks followed); raises ``OSError`` as it does."""
    t = _mounted.get()
    return os.stat(path) if t is None else t.stat(path)


def isdir(path: str | os.PathLike) -> bool:
    """``os.path.isdir``."""
    t = _mounted.get()
    return os.path.isdir(path) if t is None else t.kind(path) == "dir"


def isfile(path: str | os.PathLike) -> bool:
    """``os.path.isfile``."""
    t = _mounted.get()
    return os.path.isfile(path) if t is None else t.kind(path) == "file"


def exists(path: str | os.PathLike) -> bool:
    """``os.path.exists``."""
    t = _mounted.get()
    return os.path.exists(path) if t is None else t.kind(path) is not None


def absent(path: str | os.PathLike) -> bool:
    """``not os.path.exists(path)``, for the operating system asked with one
    ``access`` call: a miss costs no raised exception (a failing stat's
    costs as much again). For look-ups that mostly miss."""
    t = _mounted.get()
    if t is not None:
        return t.kind(path) is None
    try:
        return not os.access(path, os.F_OK)
    except ValueError:  # a NUL in the name: not there
        return True


def lexists(path: str | os.PathLike) -> bool:
    """``os.path.lexists`` (a memory tree holds no links)."""
    t = _mounted.get()
    return os.path.lexists(path) if t is None else t.kind(path) is not None


def islink(path: str | os.PathLike) -> bool:
    """``os.path.islink`` (a memory tree holds no links)."""
    t = _mounted.get()
    return os.path.islink(path) if t is None else False


def getsize(path: str | os.PathLike) -> int:
    """``os.path.getsize``."""
    return stat(path).st_size


def realpath(path: str | os.PathLike) -> str:
    """``os.path.realpath`` (in a memory tree, the normalized absolute path: it holds no links)."""
    t = _mounted.get()
    return os.path.realpath(path) if t is None else os.path.normpath(os.path.abspath(path))


def iterdir(path: "os.PathLike[str]") -> list:
    """``Path.iterdir`` made a list: ``path / name`` for each name of the folder."""
    return [path / n for n in listdir(path)]  # type: ignore[operator]
