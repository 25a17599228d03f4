"""``trajkit index``: many runs into Parquet tables, incrementally and resumably.

Layout of an index directory ``DIR``::

    DIR/.lock                         the writer lock (flock; one writer at a time)
    DIR/_manifests/<batch>.json       one per committed batch: its runs and its files
    DIR/<table>/<batch>.parquet       the batch's rows of each table (tables.TABLES)

A batch is committed when its manifest exists: the Parquet files are written
first (atomically, under their final names), then the manifest (atomically
and durably: only the manifest is synced to disk; a manifest whose files are
missing, as a power loss could leave it, does not count and its runs are
read again).
A process killed at any point leaves either a committed batch or files no
manifest names; the next run deletes those, and readers (``status``,
``query``) only ever look at files a manifest names, so no row is counted
twice.

Re-indexing skips a run whose path, size and newest mtime are unchanged. A
batch holding a run that changed or vanished is *superseded*: its other runs
are re-read into new batches, and the first new batch's manifest names it in
``supersedes`` (the old files are deleted once that manifest is written).
When the trajkit version or the options change, every run is read again.
"""

from __future__ import annotations

import os
import stat as _stat
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..atomic import write_atomic
from ..jsonio import dumps, loads
from .tables import OPTIONAL_TABLES, TABLES, Encoded, arrow_table, schema
from .tasks import IndexOptions, IndexTask, Unit, UnitRows, change_key

MANIFESTS = "_manifests"
LOCK = ".lock"
MANIFEST_FORMAT = "trajkit.index/1"
#: What the last discovery under each ROOT found (its runs as units: [rel, archive]), with the digest of
#: the tree it walked.
DISCOVERY = "_discovery.json"
DISCOVERY_FORMAT = "trajkit.discovery/2"
#: Runs per engine task (a worker's unit of work); a committed batch gathers several. Each hand-over
#: costs the worker a wait on the driver (traced on 10k runs: 64 runs a task left each worker ~3% of its
#: time waiting, 128 half that), while the last task of the corpus may leave one worker idle for a task's length.
ENGINE_CHUNK = 128
#: Column data (Arrow bytes) a batch holds before it writes them as a row group of each table's file: the
#: driver holds at most about this much of a batch's rows. Runs of ordinary size give a batch one row group
#: (1,000 real-sized runs are ~2 MB); a batch of large runs, a few (a row group per engine chunk made files
#: of 1,000 runs twice as large: every row group repeats each column's dictionary, statistics and headers).
ROW_GROUP_BYTES = 4 << 20


class IndexError_(Exception):
    """The index cannot be written (locked by another writer, not an index, cannot write)."""


class Locked(IndexError_):
    """Another process holds the index's writer lock."""


class WriterLock:
    """``DIR/.lock`` held with ``flock`` (released by the kernel if the holder dies)."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK
        self.fd: int | None = None

    def __enter__(self) -> "WriterLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            raise Locked(f"{self.path.parent}: another trajkit index is writing it"
                         + (f" (pid {holder})" if holder else "") + "; one writer at a time") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def version() -> str:
    from .. import __version__

    return __version__


def options_hash(options: IndexOptions) -> str:
    import hashlib

    doc = {"trajkit": version(), "options": options.key()}
    return hashlib.sha256(dumps(doc, indent=False)).hexdigest()[:16]


# ---------------------------------------------------------------- manifests

def load_manifests(out: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every committed manifest in ``out`` (live or superseded), and problems met reading them."""
    d = out / MANIFESTS
    found: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return [], []
    for n in names:
        if not n.endswith(".json"):
            continue
        try:
            with open(d / n, "rb") as f:
                doc, _ = loads(f.read())
        except OSError as e:
            problems.append(f"{d / n}: {e.strerror or e}")
            continue
        if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
            problems.append(f"{d / n}: not a trajkit index manifest")
            continue
        missing = [rel for rel in (doc.get("files") or {}).values() if not os.path.isfile(out / rel)]
        if missing:  # its data never reached the disk (a power loss): not committed, its runs are read again
            problems.append(f"{d / n}: batch files missing ({', '.join(missing[:3])}); its runs will be read again")
            continue
        found.append(doc)
    return found, problems


def live(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The manifests no other manifest supersedes, in batch order."""
    dead = {b for m in manifests for b in m.get("supersedes") or []}
    return sorted((m for m in manifests if m.get("batch") not in dead), key=lambda m: m.get("batch", ""))


def live_files(out: Path) -> dict[str, list[str]]:
    """The Parquet files of every table that live manifests name (absolute paths)."""
    files: dict[str, list[str]] = {t: [] for t in TABLES}
    ms, _ = load_manifests(out)
    for m in live(ms):
        for t, rel in (m.get("files") or {}).items():
            if t in files:
                files[t].append(str(out / rel))
    return files


def _prune(out: Path, manifests: list[dict[str, Any]]) -> int:
    """Delete superseded manifests and every Parquet file no live manifest names. Returns files removed."""
    keep_batches = {m["batch"] for m in live(manifests)}
    keep = {str(out / rel) for m in live(manifests) for rel in (m.get("files") or {}).values()}
    removed = 0
    for m in manifests:
        if m.get("batch") not in keep_batches:
            try:
                os.unlink(out / MANIFESTS / f"{m['batch']}.json")
                removed += 1
            except OSError:
                pass
    for t in TABLES:
        d = out / t
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            p = str(d / n)
            if p not in keep:
                try:
                    os.unlink(p)
                    removed += 1
                except OSError:
                    pass
    return removed


# ---------------------------------------------------------------- units

def _root_name(raw: str) -> str:
    """The name a ROOT gives its runs' sources (``NAME/REL``): its folder's own name."""
    given = os.path.abspath(os.fspath(raw))
    return os.path.basename(given.rstrip(os.sep)) or given


def unit_of(ref: Any, raw: str) -> Unit:
    """The :class:`Unit` of a found run (or archive) under the ROOT ``raw`` (as given)."""
    from .discover import ARCHIVE

    given = os.path.abspath(os.fspath(raw))
    name = _root_name(raw)
    p = os.path.abspath(os.fspath(ref.path))
    rel = "." if p == given else os.path.relpath(p, given).replace(os.sep, "/")
    source = name if rel == "." else f"{name}/{rel}"
    return Unit(path=p, source=source, root=os.fspath(raw), rel=rel, archive=ref.kind == ARCHIVE)


def units(roots: Iterable[str], on_problem: Callable[[str], None] | None = None) -> list[Unit]:
    """The runs and run archives under ``roots``, as :class:`Unit` s (change keys not yet worked out)."""
    from .discover import discover

    out: list[Unit] = []
    for raw in roots:
        out.extend(unit_of(ref, raw) for ref in discover([raw], archives=True, on_problem=on_problem))
    return out


#: A file or folder whose mtime or ctime is this recent when a tree's state is
#: taken could change again within the same timestamp tick unseen (a coarse
#: file-system clock): such a state is not trusted to say "unchanged" later.
RACY_SECONDS = 2.0
#: The digest walk hands whole folders to a forked helper process once it
#: knows this many (breadth first, at most :data:`_SPLIT_DEPTH` levels down):
#: each process then stats about half the tree.
_SPLIT_FOLDERS = 8
_SPLIT_DEPTH = 3


class _Untrusted(Exception):
    """The tree cannot vouch for its runs (see :func:`tree_digest`)."""


#: An entry's record after its name: a NUL (never in a name), size, mtime and ctime (ns), inode.
_ROW = struct.Struct("<xqqqQ").pack


def _wanted(rels: Iterable[str]) -> dict[str, set[str]]:
    """The entries whose change key a digest walk records, as {folder rel: {names}}
    (the top folder is ``""``; ``"."`` is the top itself). A container member
    ``FILE#ID`` asks for the file too (its key is the file's, see :meth:`_Walk.key`)."""
    want: dict[str, set[str]] = {}
    for rel in rels:
        for r in (rel, rel.rsplit("#", 1)[0]) if "#" in rel else (rel,):
            d, _, name = r.rpartition("/")
            want.setdefault(d, set()).add(name)
    return want


class _Walk:
    """One digest walk of the directory ``top`` (see :func:`tree_digest`).

    The digest is a hash tree: each folder's is the hash of its sorted rows
    (name, type, size, mtime, ctime, inode of every entry) followed by the
    digests of its sub-folders in name order, so a folder's digest does not
    depend on which process worked it out. :meth:`start` forks a helper
    (where ``os.fork`` exists) that walks the folders of the first level
    holding :data:`_SPLIT_FOLDERS` folders from the last one on;
    :meth:`finish` walks them from the first one on here, takes the helper's
    over a pipe (or walks them itself when the helper failed) and puts the
    tree together. Re-indexing an unchanged corpus is mostly this walk: the
    bare ``scandir``/``stat`` calls needed to see a file changed in place, so
    they are shared by two processes.
    """

    def __init__(self, top: str, want: dict[str, set[str]] | None = None, split: bool = True) -> None:
        self.top = top
        self.want = want or {}
        self.keys: dict[str, tuple[int, float]] = {}  # rel -> (bytes, newest mtime) of each wanted entry
        self.split = split and _can_fork()
        self.racy_after = 0
        self.top_stat: Any = None
        self.frontier: list[str] = []  # the folders (rels) shared with the helper
        self.claims: Any = None  # which of them are taken (a shared map)
        self.child: tuple[int, int] | None = None  # (pid, read end of its pipe)
        self.untrusted = False

    # -- the walk of one folder

    def folder(self, d: str, rel: str, done: dict[str, tuple[bytes, int, float]]) -> tuple[bytes, int, float]:
        """(digest, bytes of the files below, newest mtime below) of the folder ``d`` (``rel``
        under the top); ``done``: folders already worked out, by rel. Raises :class:`_Untrusted`."""
        import hashlib

        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            raise _Untrusted from None
        racy_after, is_dir_mode, row = self.racy_after, _stat.S_ISDIR, _ROW
        wanted = self.want.get(rel)
        keys = self.keys
        # one record an entry: its name, then its size (-1 a folder, -2 gone or dangling), mtime, ctime and
        # inode as machine integers; sorted, as the listing's order is the file system's (cheaper than text)
        rows = []
        subdirs = []
        size, newest = 0, 0.0
        for e in entries:
            name = e.name
            try:
                if e.is_dir(follow_symlinks=False):
                    s = e.stat(follow_symlinks=False)
                    subdirs.append((name, e.path, s.st_mtime))
                    n = -1
                else:
                    s = e.stat()
                    if is_dir_mode(s.st_mode):  # a symlinked folder: what it holds is outside this walk
                        raise _Untrusted
                    n = s.st_size
                    size += n
                    m = s.st_mtime
                    if m > newest:
                        newest = m
                    if wanted is not None and name in wanted:
                        keys[f"{rel}/{name}" if rel else name] = (n, m)
            except OSError:  # a dangling symlink, or an entry that vanished
                rows.append(name.encode("utf-8", "surrogateescape") + row(-2, 0, 0, 0))
                continue
            mt, ct = s.st_mtime_ns, s.st_ctime_ns
            if mt > racy_after or ct > racy_after:
                raise _Untrusted
            rows.append(name.encode("utf-8", "surrogateescape") + row(n, mt, ct, s.st_ino))
        rows.sort()
        h = hashlib.blake2b(b"".join(rows), digest_size=20)
        subdirs.sort()
        for name, path, mtime in subdirs:
            sub = f"{rel}/{name}" if rel else name
            got = done.get(sub)
            digest, sub_size, sub_newest = got if got is not None else self.folder(path, sub, done)
            h.update(digest)
            if mtime > sub_newest:
                sub_newest = mtime
            if wanted is not None and name in wanted:
                keys[sub] = (sub_size, sub_newest)
            size += sub_size
            if sub_newest > newest:
                newest = sub_newest
        return h.digest(), size, newest

    def _claim(self, order: Iterable[int]) -> dict[str, tuple[bytes, int, float]]:
        """Walk the frontier folders in ``order`` while the other process has not claimed them."""
        done: dict[str, tuple[bytes, int, float]] = {}
        claims, frontier = self.claims, self.frontier
        for i in order:
            if claims is not None:
                if claims[i]:
                    break  # the other process got here first: the rest is its
                claims[i] = 1  # (both may take one folder at once: the same result, walked twice)
            rel = frontier[i]
            done[rel] = self.folder(os.path.join(self.top, rel), rel, done)
        return done

    # -- start / finish

    def start(self) -> "_Walk":
        """Stat the top; start a forked helper on the first wide level (see :meth:`finish`)."""
        try:
            st = os.stat(self.top)
        except OSError:
            self.untrusted = True
            return self
        self.racy_after = time.time_ns() - int(RACY_SECONDS * 1e9)
        if not _stat.S_ISDIR(st.st_mode) or st.st_mtime_ns > self.racy_after or st.st_ctime_ns > self.racy_after:
            self.untrusted = True
            return self
        self.top_stat = st
        if self.split:
            frontier = self._frontier()
            if len(frontier) >= 2:
                import mmap

                self.frontier = frontier
                self.claims = mmap.mmap(-1, len(frontier))  # shared with the helper: one byte a folder, 1 = taken
                self.child = _fork_walk(self)
                if self.child is None:  # no helper: this process walks it all
                    self.frontier, self.claims = [], None
        return self

    def _frontier(self) -> list[str]:
        """The first level below the top with at least :data:`_SPLIT_FOLDERS` folders (rels, in name
        order), or the deepest looked at; empty when a folder there cannot be listed."""
        level = [""]
        for _ in range(_SPLIT_DEPTH):
            below: list[str] = []
            for rel in level:
                try:
                    with os.scandir(os.path.join(self.top, rel) if rel else self.top) as it:
                        below.extend(f"{rel}/{e.name}" if rel else e.name for e in it if e.is_dir(follow_symlinks=False))
                except OSError:
                    return []  # the walk itself says so
            if not below:
                break
            level = sorted(below)
            if len(level) >= _SPLIT_FOLDERS:
                break
        return level if level != [""] else []

    def finish(self) -> str | None:
        """The tree's digest (None when it cannot vouch for its runs); :attr:`keys` filled.

        The frontier folders are shared out as they go: this process takes
        them from the first, the helper from the last, each stopping where the
        other has been, so the one that started late (this one, importing the
        formats meanwhile) or meets bigger folders walks fewer."""
        child, self.child = self.child, None
        try:
            if self.untrusted:
                return None
            done = self._claim(range(len(self.frontier)))
            if child is not None:
                got = _join_walk(child)
                child = None
                if got is not None:  # else the helper failed (not: found the tree untrusted); walked below
                    theirs, keys = got
                    if theirs is None:
                        return None
                    done.update(theirs)
                    self.keys.update(keys)
            digest, size, newest = self.folder(self.top, "", done)  # (any folder not walked yet is walked here)
        except (_Untrusted, RecursionError):
            self.keys.clear()
            return None
        finally:
            if child is not None:
                _reap(child)
            if self.claims is not None:
                self.claims.close()
                self.claims = None
        st = self.top_stat
        if "." in self.want.get("", ()):
            self.keys["."] = (size, max(st.st_mtime, newest))
        import hashlib

        h = hashlib.blake2b(repr((st.st_mtime_ns, st.st_ctime_ns, st.st_ino)).encode(), digest_size=20)
        h.update(digest)
        return h.hexdigest()

    def abandon(self) -> None:
        """Stop here: the helper is reaped, nothing is returned."""
        child, self.child = self.child, None
        if child is not None:
            _reap(child)

    def key(self, rel: str) -> tuple[int, float] | None:
        """The change key of the run at ``rel`` (a member ``FILE#ID``: its file's), as
        :func:`trajkit.corpus.tasks.change_key` gives it."""
        k = self.keys.get(rel)
        if k is None and "#" in rel:
            k = self.keys.get(rel.rsplit("#", 1)[0])
        return k


def _can_fork() -> bool:
    import sys

    # macOS: a forked child of a process that may have started system frameworks is not safe
    return hasattr(os, "fork") and sys.platform != "darwin"


def _fork_walk(walk: _Walk) -> tuple[int, int] | None:
    """Fork a helper that walks frontier folders of ``walk`` from the last one
    on, and sends back their digests and keys (pickled, through a pipe).
    (pid, read end), or None when no process could be started."""
    import pickle
    import warnings

    r, w = os.pipe()
    try:
        with warnings.catch_warnings():
            # 3.12+ warns when a process with threads forks: the helper only lists, stats, hashes and
            # writes to its pipe, then leaves by os._exit (no lock another thread could hold is taken)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the helper: never returns
        code = 1
        try:
            os.close(r)
            try:
                got: Any = (walk._claim(range(len(walk.frontier) - 1, -1, -1)), walk.keys)
            except (_Untrusted, RecursionError):
                got = (None, {})
            data = memoryview(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
            while data:
                data = data[os.write(w, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _join_walk(child: tuple[int, int]) -> tuple[Any, dict[str, tuple[int, float]]] | None:
    """What the helper sent: (its folders' results, or None when it found the
    tree untrusted; their keys). None when it failed (its folders are then walked here)."""
    import pickle

    pid, r = child
    chunks = []
    try:
        while True:
            b = os.read(r, 1 << 20)
            if not b:
                break
            chunks.append(b)
    except OSError:
        chunks = []
    finally:
        os.close(r)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # pragma: no cover - reaped elsewhere (a SIGCHLD handler)
        status = 0
    if status != 0 or not chunks:
        return None
    try:
        got = pickle.loads(b"".join(chunks))
    except Exception:  # pragma: no cover - a helper that died mid-write exits non-zero
        return None
    return got


def _reap(child: tuple[int, int]) -> None:
    """Stop a helper whose walk is not wanted any more."""
    import signal

    pid, r = child
    os.close(r)
    try:
        os.kill(pid, signal.SIGKILL)  # it holds nothing: only its walk is lost
    except OSError:  # pragma: no cover - gone already
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # pragma: no cover
        pass


def tree_digest(root: str | os.PathLike, keys: dict[str, Any] | None = None, split: bool = True) -> str | None:
    """A digest of everything under the directory ``root`` that discovery can look at.

    It sums up every entry below the root, hidden ones included, at any depth:
    its name (and the folder it is in), type, size, mtime, ctime and inode
    (the listings, types and file contents discovery reads). Two equal digests
    mean nothing discovery sees has changed, so the runs it finds are the
    same. None when the tree cannot vouch for that: ``root`` is not a
    directory, a symlinked folder lies inside (its target is outside the
    walk), a folder cannot be listed, or an entry changed less than
    :data:`RACY_SECONDS` before the walk.

    ``keys``: paths (absolute, as :func:`os.path.abspath` writes them) whose
    change key is wanted; each one under ``root`` gets the key
    :func:`trajkit.corpus.tasks.change_key` would give it, from this walk's
    stats (filled only when a digest is returned).

    ``split``: let a forked helper walk half the tree (see :class:`_Walk`);
    the digest is the same either way.
    """
    top = os.path.abspath(os.fspath(root))
    rels: dict[str, str] = {}
    for p in keys or ():
        if p == top:
            rels[p] = "."
        elif p.startswith(top.rstrip(os.sep) + os.sep):
            rels[p] = os.path.relpath(p, top).replace(os.sep, "/")
    walk = _Walk(top, _wanted(rels.values()), split).start()
    digest = walk.finish()
    if digest is not None and keys is not None:
        for p, rel in rels.items():
            k = walk.keys.get(rel)
            if k is not None:
                keys[p] = k
    return digest


class _Remembered:
    """The runs a ROOT's last discovery found (``[rel, archive]`` each), placed
    under the ROOT as written now, with the change keys of this walk."""

    __slots__ = ("written", "given", "name", "units", "walk")

    def __init__(self, raw: str, units: list[Any], walk: _Walk | None = None) -> None:
        self.written = raw
        self.given = os.path.abspath(raw)
        self.name = os.path.basename(self.given.rstrip(os.sep)) or self.given
        self.units = units
        self.walk = walk

    def source(self, rel: str) -> str:
        return self.name if rel == "." else f"{self.name}/{rel}"

    def unit(self, i: int, key: tuple[int, float] | None = None) -> Unit:
        """The :class:`Unit` :func:`unit_of` makes for the ``i``-th run, with the change key ``key``."""
        rel, archive = self.units[i]
        path = self.given if rel == "." else os.path.normpath(os.path.join(self.given, rel))
        return Unit(path=path, source=self.source(rel), root=self.written, rel=rel,
                    size=None if key is None else key[0], mtime=None if key is None else key[1], archive=bool(archive))


def _unit_at(raw: str, rel: str, archive: bool) -> Unit:
    """The :class:`Unit` :func:`unit_of` makes for the run at ``rel`` under the ROOT ``raw`` (what the cache keeps)."""
    return _Remembered(raw, [[rel, archive]]).unit(0)


def _root_digest(raw: str, rels: Iterable[str], meanwhile: Callable[[], None] | None = None) -> tuple[str, _Walk] | None:
    """The digest of the ROOT ``raw`` and its walk (:meth:`_Walk.key` gives the
    keys of the runs at ``rels``), when its runs may be remembered: not when
    ``raw`` is itself a run (or inside one: detection then looks at folders
    above it, which the digest does not cover). ``meanwhile``: called while
    the walk's helper process has started."""
    if not os.path.isdir(raw):
        return None
    walk = _Walk(os.path.abspath(raw), _wanted(rels)).start()
    try:
        if meanwhile is not None:
            meanwhile()
        from ..registry import detect  # (imported while the helper walks)

        if detect(raw).format is not None:
            walk.abandon()
            return None
    except BaseException:
        walk.abandon()  # the helper is not left waiting on its pipe
        raise
    digest = walk.finish()
    return None if digest is None else (digest, walk)


def _fork_discovery(roots: list[str], lock_fd: int | None = None) -> tuple[int, int] | None:
    """Fork a process that walks ``roots`` (:func:`~trajkit.corpus.discover.discover`, one after the
    other) and sends what it finds as JSON lines through a pipe (:func:`_records`): ``[0, rel, archive]``
    a run, ``[1, message]`` a problem, ``[2]`` the end of a ROOT, ``[3, error]`` a walk that raised.
    (pid, read end), or None when no process could be started (the walks then run in the driver).
    ``lock_fd``: the writer lock, closed in the process (a driver killed meanwhile leaves no lock held)."""
    import warnings

    r, w = os.pipe()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # (see _fork_walk: no thread of ours runs yet)
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the discovery process: never returns
        code = 1
        try:
            os.close(r)
            if lock_fd is not None:
                os.close(lock_fd)
            import sys

            # standard streams of its own: a lock another thread of the driver held on them when it forked (a
            # progress display's) would never be released here
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            with os.fdopen(w, "wb", buffering=1 << 14) as f:
                try:
                    import importlib

                    discover_mod = importlib.import_module(".discover", __package__)  # (the package names the function so)

                    for raw in roots:
                        def found(ref: Any, raw: str = raw) -> None:
                            u = unit_of(ref, raw)
                            f.write(dumps([0, u.rel, u.archive], indent=False) + b"\n")

                        def problem(msg: str) -> None:
                            f.write(dumps([1, msg], indent=False) + b"\n")

                        discover_mod.discover([raw], archives=True, on_problem=problem, on_found=found, collect=False)
                        f.write(b"[2]\n")
                        f.flush()  # the readers start on a ROOT's runs as they come; its end, at once
                except Exception as e:
                    f.write(dumps([3, f"{type(e).__name__}: {e}"], indent=False) + b"\n")
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _records(child: tuple[int, int]) -> Iterable[list[Any]]:
    """What the discovery process sends, record by record (see :func:`_fork_discovery`); a walk that
    raised there raises here."""
    f = os.fdopen(os.dup(child[1]), "rb", buffering=1 << 14)
    with f:
        for line in f:
            rec, _ = loads(line)
            if rec[0] == 3:
                raise IndexError_(f"discovery failed: {rec[1]}")
            yield rec


def _cache_key(raw: str) -> str:
    # the folder itself, however it is written (relative, trailing slash, through a symlink): the runs
    # are remembered by their path relative to it and named again in the form written this time
    return os.path.realpath(os.path.abspath(raw))


def _discovery_stamp() -> str:
    """What discovery's result depends on besides the tree: trajkit and the formats it knows."""
    from ..registry import formats, origin

    return version() + ";" + ",".join(f"{f.name}@{origin(f.name)}" for f in formats())


class _Discovery:
    """``DIR/_discovery.json`` as read: the runs each ROOT's last discovery
    found (``roots``, by :func:`_cache_key`), and the stamp they were found
    with (:func:`_discovery_stamp`; trusted only when it is this one's)."""

    __slots__ = ("stamp", "roots")

    def __init__(self, stamp: Any, roots: dict[str, dict[str, Any]]) -> None:
        self.stamp, self.roots = stamp, roots

    def trusted(self) -> dict[str, dict[str, Any]]:
        """The roots, when found by this trajkit with these formats (which imports the formats)."""
        return self.roots if self.stamp == _discovery_stamp() else {}


def load_discovery(out: Path) -> _Discovery | None:
    """What ``DIR/_discovery.json`` remembers (None: nothing readable). Its stamp is not checked yet
    (:meth:`_Discovery.trusted`): the formats it names load while the tree is walked."""
    try:
        with open(out / DISCOVERY, "rb") as f:
            doc, _ = loads(f.read())
    except OSError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != DISCOVERY_FORMAT:
        return None
    roots = doc.get("roots")
    if not isinstance(roots, dict):
        return None

    def sound(e: Any) -> bool:  # a damaged entry is walked again, never trusted
        return (isinstance(e, dict) and isinstance(e.get("tree"), str) and isinstance(e.get("problems"), list)
                and isinstance(e.get("root"), str) and isinstance(e.get("units"), list)
                and all(type(u) is list and len(u) == 2 and type(u[0]) is str for u in e["units"]))

    return _Discovery(doc.get("stamp"), {k: e for k, e in roots.items() if sound(e)})


class _Walked:
    """What one walk of a ROOT finds, as it finds it: its runs as the JSON text
    of their ``[rel, archive]`` list (what ``_discovery.json`` keeps), and
    where each one ends in it.

    The index reads the runs from here (:meth:`take`) while the walk goes on:
    a run costs the driver some 40 bytes of one buffer until the ROOT's walk
    is over, not a :class:`Unit` or a list per run, and the walk is never held
    back by the readers (a walk held back holds the listings of every folder
    it has yet to walk: most of what a big tree's discovery holds).
    ``tree``: the ROOT's digest (None: not remembered)."""

    __slots__ = ("tree", "root", "units", "problems", "ends", "done", "cond")

    def __init__(self, tree: str | None, root: str, problems: list[str], cond: Any = None) -> None:
        from array import array

        self.tree, self.root, self.problems = tree, root, problems
        self.units = bytearray(b"[")
        self.ends = array("Q")  # the end of each run's text in units
        self.done = False  # the walk is over
        self.cond = cond  # notified as runs are added (a threading.Condition), or None

    def add(self, rel: str, archive: bool) -> None:
        text = dumps([rel, archive], indent=False)
        cond = self.cond
        if cond is None:
            self._add(text)
            return
        with cond:
            self._add(text)
            cond.notify()

    def _add(self, text: bytes) -> None:
        if self.ends:
            self.units += b","
        self.units += text
        self.ends.append(len(self.units))

    def finish(self) -> None:
        cond = self.cond
        if cond is None:
            self.done = True
            return
        with cond:
            self.done = True
            cond.notify()

    def take(self, at: int, most: int) -> list[list[Any]] | None:
        """The runs from the ``at``-th on (at most ``most``) as ``[rel, archive]`` lists, once there is one;
        None when the walk is over and none is left. Waits for the walk."""
        cond = self.cond
        with cond:
            while len(self.ends) <= at and not self.done:
                cond.wait()
            n = len(self.ends)
            if n <= at:
                return None
            last = min(n, at + most)
            text = b"[" + self.units[self.ends[at - 1] + 1 if at else 1:self.ends[last - 1]] + b"]"
        got, _ = loads(text)
        return got

    def json(self) -> bytes:
        """The entry as :func:`dumps` writes the dict ``{"tree", "root", "units", "problems"}``."""
        return b"".join((b'{"tree":', dumps(self.tree, indent=False), b',"root":', dumps(self.root, indent=False),
                         b',"units":', self.units, b"]", b',"problems":', dumps(self.problems, indent=False), b"}"))


def save_discovery(out: Path, walked: dict[str, Any]) -> None:
    """Remember what discovery found under each ROOT (a cache: losing it only costs a walk).
    ``walked``: per ROOT (:func:`_cache_key`) a :class:`_Walked`, or the entry read back (a dict)."""
    parts = [b'{"format":', dumps(DISCOVERY_FORMAT, indent=False), b',"stamp":', dumps(_discovery_stamp(), indent=False),
             b',"roots":{']
    for i, (k, e) in enumerate(walked.items()):
        parts.append(b"," if i else b"")
        parts.append(dumps(k, indent=False) + b":")
        parts.append(e.json() if isinstance(e, _Walked) else dumps(e, indent=False))
    parts.append(b"}}")
    write_atomic(out / DISCOVERY, b"".join(parts), durable=False)


class _Found:
    """The runs under the roots, found by a background thread while the engine
    already reads the first ones: an iterator of :class:`Unit` s (each with the
    key the index holds for it, unless its batch is already superseded).

    The runs of a remembered ROOT whose tree is unchanged are handed over at
    once, and those whose key equals the index's are not yielded at all: they
    are counted in :attr:`unchanged` (:meth:`again` gives back the ones whose
    batch was superseded since). ``skipped``: the caller's list of the yielded
    runs it found unchanged, to keep :meth:`again` in the order runs were found.

    A walked ROOT's runs are read from the buffer its walk fills (:class:`_Walked`),
    so the walk never waits for the readers. With ``fork`` the walks run in a
    forked process (:func:`_fork_discovery`) and the thread only fills the
    buffers from what it sends: the listings and paths discovery holds while it
    walks (some 7 MB on 10,000 runs) are never the driver's. What the driver
    holds for the corpus is then ~50 bytes a run of these buffers (kept for
    ``_discovery.json``), and the sources of ROOTs sharing one name (``twins``).
    """

    _END = object()

    def __init__(self, roots: list[str], have: dict[str, tuple[int, float, str]], dead: set[str],
                 on_problem: Callable[[str], None] | None, on_found: Callable[[int], None] | None,
                 cache: _Discovery | None = None, skipped: list[Unit] | None = None, fork: bool = False,
                 lock_fd: int | None = None) -> None:
        import queue
        import threading

        # each ROOT's runs as one hand-over: its remembered list (_Remembered) or the buffer its walk fills (_Walked)
        self.q: Any = queue.Queue()
        self.cond = threading.Condition()  # a walk notifies it as it finds runs
        self.reading: tuple[_Walked, _Remembered, int] | None = None  # the walk being read: (it, its ROOT, next run)
        self.have, self.dead = have, dead
        self.cache: dict[str, dict[str, Any]] = {}  # the remembered roots, once their stamp is checked
        self.ready: list[Unit] = []  # units handed over as a list, still to be yielded (last first)
        self.walked: dict[str, Any] = {}  # what each root's discovery found, for the next run (save_discovery)
        self.walked_again = False  # some root was not remembered (or changed): discovery walked it
        self.on_problem, self.on_found = on_problem, on_found
        # a run found twice, under one name, comes from two ROOTs of one name (a source is the ROOT's name and
        # the path below it): only such ROOTs' sources are kept to see it, not one string per run of the corpus
        from collections import Counter

        names = [_root_name(raw) for raw in roots]
        many = Counter(names)
        self.twins = {os.fspath(raw) for raw, name in zip(roots, names) if many[name] > 1}
        self.sources: set[str] = set()  # the sources found under the twins so far
        self.unseen: set[str] = set(have)  # the index's runs not found (yet): they vanished, once the walk is over
        self.count = 0
        self.unchanged = 0  # runs of remembered roots found unchanged, not yielded
        self.skipped = skipped if skipped is not None else []
        self.kept: list[tuple[int, _Remembered, list[int]]] = []  # (len(skipped) then, root, indexes of its unchanged runs)
        self.error: BaseException | None = None
        self.done = False
        checked = [cache is None]

        def trust() -> None:  # the stamp's check imports the formats: done while the first walk's helper walks
            if not checked[0]:
                checked[0] = True
                self.cache = cache.trusted()  # type: ignore[union-attr]

        # the digest walks first, here, one ROOT after the other: a walk forks a helper (see _Walk), and no
        # thread of ours runs yet
        digests = []
        for raw in roots:
            hit = cache.roots.get(_cache_key(raw)) if cache is not None else None  # (only says which keys to take)
            digests.append(_root_digest(raw, (rel for rel, _a in hit["units"]) if hit else (), trust))
        trust()
        # which ROOTs are remembered unchanged, and which discovery walks
        self.hits: list[dict[str, Any] | None] = []
        for raw, got in zip(roots, digests):
            hit = self.cache.get(_cache_key(raw))
            if got is not None and hit is not None and hit.get("tree") == got[0] and (
                    hit["root"] == raw or not hit["problems"]):  # (a problem quotes the ROOT as written)
                self.hits.append(hit)
            else:
                self.hits.append(None)
        # the walks in a process of their own when asked (and possible): what discovery holds while it walks (every
        # folder's listing, the paths it has seen) is then never the driver's, which only receives the runs
        walks = [raw for raw, hit in zip(roots, self.hits) if hit is None]
        self.child = _fork_discovery(walks, lock_fd) if fork and walks and _can_fork() else None
        self.thread = threading.Thread(target=self._walk, args=(roots, digests), daemon=True, name="trajkit-discover")
        self.thread.start()

    def close(self) -> None:
        """Stop the discovery process, if one is still walking (the build ended early)."""
        child, self.child = self.child, None
        if child is not None:
            _reap(child)

    def _walk(self, roots: list[str], digests: list[tuple[str, _Walk] | None]) -> None:
        from .discover import discover

        records = _records(self.child) if self.child is not None else None
        try:
            for raw, got, hit in zip(roots, digests, self.hits):
                digest, walk = got if got is not None else (None, None)  # taken before discovery: a change during it shows next time
                key = _cache_key(raw)
                if hit is not None:
                    # nothing under the root changed since that walk: its runs, without detecting again, and
                    # their change keys from the digest's own stats
                    for problem in hit.get("problems") or []:
                        if self.on_problem is not None:
                            self.on_problem(problem)
                    self.q.put(_Remembered(raw, hit["units"], walk))  # one hand-over for the lot, not one per run
                    self.walked[key] = hit
                    continue
                self.walked_again = True
                problems: list[str] = []
                entry = _Walked(digest, raw, problems, self.cond)
                self.q.put(entry)  # its runs are read from it as they are found

                def found(ref: Any, raw: str = raw, entry: _Walked = entry) -> None:
                    u = unit_of(ref, raw)
                    entry.add(u.rel, u.archive)  # the rest follows from the ROOT (_Remembered.unit)

                def problem(msg: str, problems: list[str] = problems) -> None:
                    problems.append(msg)
                    if self.on_problem is not None:
                        self.on_problem(msg)

                try:
                    if records is None:
                        discover([raw], archives=True, on_problem=problem, on_found=found, collect=False)
                    else:
                        for rec in records:  # this ROOT's, as the discovery process sends them
                            if rec[0] == 0:
                                entry.add(rec[1], rec[2])
                            elif rec[0] == 1:
                                problem(rec[1])
                            else:
                                break
                        else:
                            raise IndexError_("the discovery process ended before its walk did")
                finally:
                    entry.finish()
                if digest is not None:
                    self.walked[key] = entry
            if records is not None:
                self._join()
        except BaseException as e:  # surfaced in the consumer
            self.error = e
        finally:
            self.q.put(self._END)

    def _join(self) -> None:
        child, self.child = self.child, None
        if child is not None:
            os.close(child[1])
            try:
                os.waitpid(child[0], 0)
            except ChildProcessError:  # pragma: no cover - reaped elsewhere
                pass

    def _remembered(self, rem: _Remembered) -> None:
        """Sort a remembered root's runs: unchanged ones are only counted, the others queued in :attr:`ready`."""
        have, dead, unseen = self.have, self.dead, self.unseen
        sources = self.sources if os.fspath(rem.written) in self.twins else None
        keys = rem.walk.keys  # type: ignore[union-attr]
        name, prefix = rem.name, rem.name + "/"
        kept: list[int] = []
        todo: list[Unit] = []
        count = self.count
        for i, (rel, _archive) in enumerate(rem.units):
            src = name if rel == "." else prefix + rel
            if sources is not None:
                if src in sources:  # found twice (two ROOTs naming one run under one name)
                    continue
                sources.add(src)
            count += 1
            k = keys.get(rel)
            if k is None and "#" in rel:
                k = rem.walk.key(rel)  # type: ignore[union-attr]
            h = have.get(src)
            if h is not None:
                unseen.discard(src)
            if h is not None and h[2] not in dead:
                if k is not None and h[0] == k[0] and h[1] == k[1]:
                    kept.append(i)
                    continue
                u = rem.unit(i, k)
                todo.append(Unit(path=u.path, source=u.source, root=u.root, rel=u.rel, size=u.size, mtime=u.mtime,
                                 archive=u.archive, prev=(h[0], h[1])))
            else:
                todo.append(rem.unit(i, k))
        if kept:
            self.kept.append((len(self.skipped), rem, kept))
            self.unchanged += len(kept)
        self.ready = todo[::-1]
        if self.on_found is not None and count > self.count:
            self.on_found(count)
        self.count = count

    def again(self) -> list[Unit]:
        """The runs found unchanged whose batch is superseded (in :attr:`dead`) by now: to be read
        again, in the order they were found."""
        have, dead = self.have, self.dead
        if not dead:
            return []
        out: list[Unit] = []
        at = 0
        for pos, rem, kept in self.kept + [(len(self.skipped), None, [])]:  # type: ignore[list-item]
            out.extend(Unit(path=u.path, source=u.source, root=u.root, rel=u.rel, size=u.size, mtime=u.mtime,
                            archive=u.archive) for u in self.skipped[at:pos] if have[u.source][2] in dead)
            at = pos
            if rem is not None:
                for i in kept:
                    rel = rem.units[i][0]
                    if have[rem.source(rel)][2] in dead:
                        out.append(rem.unit(i, rem.walk.key(rel)))  # type: ignore[union-attr]
        return out

    #: Runs taken from a walk's buffer at a time (as Units, in :attr:`ready`).
    TAKE = 256

    def _walked(self, entry: _Walked, rem: _Remembered, at: int) -> bool:
        """Take the next runs of a walk into :attr:`ready` (False: the walk is over and read)."""
        got = entry.take(at, self.TAKE)
        if got is None:
            return False
        self.reading = (entry, rem, at + len(got))
        have, dead, unseen, on_found = self.have, self.dead, self.unseen, self.on_found
        sources = self.sources if rem.written in self.twins else None
        given, name, prefix, root = rem.given, rem.name, rem.name + "/", rem.written
        join, normpath = os.path.join, os.path.normpath
        todo: list[Unit] = []
        count = self.count
        for rel, archive in got:
            src = name if rel == "." else prefix + rel
            if sources is not None:
                if src in sources:  # found twice (two ROOTs naming one run under one name)
                    continue
                sources.add(src)
            count += 1
            if on_found is not None and count % 256 == 0:
                on_found(count)
            path = given if rel == "." else normpath(join(given, rel))
            h = have.get(src)
            if h is not None:
                unseen.discard(src)
                if h[2] not in dead:
                    todo.append(Unit(path=path, source=src, root=root, rel=rel, archive=archive, prev=(h[0], h[1])))
                    continue
            todo.append(Unit(path=path, source=src, root=root, rel=rel, archive=archive))
        self.count = count
        self.ready = todo[::-1]
        return True

    def __iter__(self) -> "_Found":
        return self

    def __next__(self) -> Unit:
        while True:
            if self.ready:
                return self.ready.pop()
            if self.reading is not None:
                if not self._walked(*self.reading):
                    self.reading = None
                continue
            u = self.q.get()
            if u is self._END:
                self.done = True
                if self.error is not None:
                    raise self.error
                raise StopIteration
            if isinstance(u, _Remembered):  # a remembered root's runs, handed over at once
                self._remembered(u)
            else:  # a root being walked: its runs are read from its buffer as they come
                self.reading = (u, _Remembered(os.fspath(u.root), []), 0)


# ---------------------------------------------------------------- writing

@dataclass
class IndexResult:
    """What one ``index`` call did."""

    out: str
    found: int = 0
    skipped: int = 0
    indexed: int = 0
    runs_read: int = 0
    unreadable: int = 0
    batches: int = 0
    superseded: int = 0
    reset: bool = False
    rows: dict[str, int] = field(default_factory=dict)
    engine: str = ""
    jobs: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "found": self.found, "skipped_unchanged": self.skipped, "indexed": self.indexed,
                "runs_read": self.runs_read, "unreadable": self.unreadable, "batches": self.batches,
                "superseded_batches": self.superseded, "reset": self.reset, "rows": self.rows,
                "engine": self.engine, "jobs": self.jobs, "seconds": round(self.seconds, 3), "problems": self.problems}


class _Block:
    """One engine batch's rows, packed in the worker (:func:`_pack`): per
    table the rows of all its units as column buffers (:class:`Encoded`),
    and where each unit's rows start.

    It travels compressed (zlib level 1: ~4x smaller, ~14 ms a MB in the
    worker) and stays so in the driver until its rows are taken: the results
    the process engine holds ahead of the writer (up to ``4 * jobs`` chunks,
    received while the driver writes) cost a quarter of their size. A chunk of
    large runs is ~1.4 MB of column data; eight of them were most of the
    driver's peak on the 10k bench corpus."""

    __slots__ = ("_tables", "_starts", "_arrow", "_z")

    def __init__(self, tables: dict[str, Encoded], starts: dict[str, list[int]]) -> None:
        self._tables: dict[str, Encoded] | None = tables
        self._starts: dict[str, list[int]] | None = starts
        self._arrow: dict[str, Any] = {}
        self._z: bytes | None = None

    def __getstate__(self) -> bytes:
        if self._z is None:
            import pickle
            import zlib

            self._z = zlib.compress(pickle.dumps((self._tables, self._starts), protocol=pickle.HIGHEST_PROTOCOL), 1)
        return self._z

    def __setstate__(self, state: bytes) -> None:
        self._z, self._tables, self._starts, self._arrow = state, None, None, {}

    def _load(self) -> None:
        import pickle
        import zlib

        assert self._z is not None
        self._tables, self._starts = pickle.loads(zlib.decompress(self._z))
        self._z = None

    @property
    def tables(self) -> dict[str, Encoded]:
        if self._tables is None:
            self._load()
        return self._tables  # type: ignore[return-value]

    @property
    def starts(self) -> dict[str, list[int]]:
        if self._starts is None:
            self._load()
        return self._starts  # type: ignore[return-value]

    def arrow(self, table: str) -> Any:
        got = self._arrow.get(table)
        if got is None:
            got = self._arrow[table] = self.tables[table].to_arrow()
        return got


class _Packed:
    """A unit's rows inside a :class:`_Block` (the ``rows`` of a packed :class:`UnitRows`)."""

    __slots__ = ("block", "i")

    def __init__(self, block: _Block, i: int) -> None:
        self.block, self.i = block, i

    def __reduce__(self) -> tuple[Any, ...]:
        return _Packed, (self.block, self.i)


def _pack(results: list[Any]) -> list[Any]:
    """The engine's ``pack`` for the index: a batch's rows as one :class:`_Block`
    (a few buffers per table instead of a dict per row: less to pickle, and
    nothing per row for the driver to unpickle, hold and free)."""
    units = [r for r in results if isinstance(r, UnitRows) and isinstance(r.rows, dict) and not r.skipped]
    if not units:
        return results
    tables: dict[str, Encoded] = {}
    starts: dict[str, list[int]] = {}
    for t in TABLES:
        rows: list[dict[str, Any]] = []
        at = [0]
        for r in units:
            rows.extend(r.rows.get(t) or ())
            at.append(len(rows))
        tables[t] = Encoded(t, rows)
        starts[t] = at
    block = _Block(tables, starts)
    for i, r in enumerate(units):
        r.rows = _Packed(block, i)  # type: ignore[assignment]
    return results


def _arrow_rows(table: str, results: list[UnitRows]) -> Any:
    """The rows of ``table`` over ``results``, in order, as one Arrow table:
    slices of the packed blocks (a run of units from one block is one slice),
    and rows made here (a task failure's) encoded on the spot."""
    import pyarrow as pa

    pieces: list[Any] = []
    loose: list[dict[str, Any]] = []
    span: list[Any] = []  # [block, lo, hi] of the slice being extended

    def close_span() -> None:
        if span:
            block, lo, hi = span
            if hi > lo:
                pieces.append(block.arrow(table).slice(lo, hi - lo))
            span.clear()

    for r in results:
        rows = r.rows
        if isinstance(rows, _Packed):
            if loose:
                pieces.append(arrow_table(table, loose))
                loose = []
            at = rows.block.starts[table]
            lo, hi = at[rows.i], at[rows.i + 1]
            if span and span[0] is rows.block and span[2] == lo:
                span[2] = hi
            else:
                close_span()
                span.extend((rows.block, lo, hi))
        else:
            close_span()
            loose.extend(rows.get(table) or ())
    close_span()
    if loose or not pieces:
        pieces.append(arrow_table(table, loose))
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_tables(pieces)  # chunked: the Parquet writer takes the chunks as they are, no copy


def _write_table(path: Path, t: Any) -> None:
    import io

    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(t, buf, compression="zstd")
    write_atomic(path, buf.getvalue(), durable=False)  # the manifest, written durably after it, is the commit


class _BatchWriter:
    """One batch being written. The rows of the engine's chunks are held (as
    Arrow slices of the packed column buffers, no copy) until they reach
    :data:`ROW_GROUP_BYTES`, then written to the batch's Parquet files as one
    row group per table; so the driver holds at most that much of a batch's
    rows, however large its runs. The files are temporary ones until
    :meth:`commit` writes the rest, closes them under their final names and
    writes the manifest (the commit point); :meth:`abort` removes them."""

    def __init__(self, out: Path, batch: str) -> None:
        from contextlib import ExitStack

        self.out, self.batch = out, batch
        self.files = ExitStack()  # each table's open temporary file and its writer
        self.writers: dict[str, Any] = {}
        self.counts: dict[str, int] = {}
        self.held: dict[str, list[Any]] = {t: [] for t in TABLES}  # per table: Arrow pieces not written yet
        self.held_bytes = 0
        self.units: list[tuple[Unit, int, int]] = []  # (unit, runs, unreadable): the manifest's entries
        self.runs = self.unreadable = 0

    def __len__(self) -> int:
        return len(self.units)

    def add(self, results: list[UnitRows]) -> None:
        """Take the rows of ``results`` (in order); write a row group once enough is held."""
        for t in TABLES:
            rows = _arrow_rows(t, results)
            if rows.num_rows:
                self.held[t].append(rows)
                self.held_bytes += rows.nbytes
                self.counts[t] = self.counts.get(t, 0) + rows.num_rows
        for r in results:
            self.units.append((r.unit, r.runs, r.unreadable))
            self.runs += r.runs
            self.unreadable += r.unreadable
        if self.held_bytes >= ROW_GROUP_BYTES:
            self._write()

    def _write(self) -> None:
        """The held rows of each table as one row group of its file."""
        import pyarrow as pa

        for t, pieces in self.held.items():
            if pieces:
                w = self.writers.get(t) or self._open(t, pieces[0].schema)
                w.write_table(pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces))
                pieces.clear()
        self.held_bytes = 0

    def _open(self, table: str, sch: Any) -> Any:
        import pyarrow.parquet as pq

        from ..atomic import atomic_open

        f = self.files.enter_context(atomic_open(self.out / f"{table}/{self.batch}.parquet", durable=False))
        w = self.writers[table] = pq.ParquetWriter(f, sch, compression="zstd")
        self.files.callback(w.close)  # run before the file's own exit (LIFO): the footer, then the rename
        return w

    def commit(self, options: IndexOptions, supersedes: list[str]) -> dict[str, int]:
        """Close the batch's files under their final names, then write its
        manifest (the commit point). Returns rows per table."""
        files: dict[str, str] = {}
        counts: dict[str, int] = {}
        self._write()
        self.files.close()  # the manifest, written durably after them, is the commit
        for t in TABLES:
            rel = f"{t}/{self.batch}.parquet"
            if t not in self.writers:
                if t in OPTIONAL_TABLES:
                    continue
                _write_table(self.out / rel, arrow_table(t, []))
            files[t] = rel
            counts[t] = self.counts.get(t, 0)
        manifest = {
            "format": MANIFEST_FORMAT,
            "batch": self.batch,
            "trajkit_version": version(),
            "options": options.key(),
            "options_hash": options_hash(options),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": files,
            "rows": counts,
            "supersedes": supersedes,
            "units": [{"source": u.source, "run_id": u.run_id, "size": u.size, "mtime": u.mtime,
                       "archive": u.archive, "runs": runs, "unreadable": unreadable} for u, runs, unreadable in self.units],
        }
        write_atomic(self.out / MANIFESTS / f"{self.batch}.json", dumps(manifest, indent=True) + b"\n")
        return counts

    def abort(self, exc: BaseException) -> None:
        """Drop the batch: its temporary files are removed, nothing is committed."""
        self.files.__exit__(type(exc), exc, exc.__traceback__)


def build(
    roots: list[str],
    out: str | os.PathLike,
    options: IndexOptions | None = None,
    engine: str = "process",
    jobs: int | None = None,
    batch_size: int = 1000,
    address: str | None = None,
    on_discovered: Callable[[int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> IndexResult:
    """Index the runs under ``roots`` into ``out`` (see the module docstring).

    Runs are found by a background thread while the engine reads the first
    ones. ``batch_size``: runs per committed batch (the engine hands workers
    chunks of at most :data:`ENGINE_CHUNK` runs; a batch gathers them).
    ``on_discovered(n)`` while runs are found, ``on_start(total, 0)`` once
    the walk is over (the total is known), ``on_progress(done)`` as runs are
    done (read or found unchanged). Raises :class:`Locked` when another
    writer holds ``out``.
    """
    from .run import default_jobs, run

    options = options or IndexOptions()
    outp = Path(out)
    res = IndexResult(out=str(outp), engine=engine, jobs=jobs or default_jobs())
    started = time.perf_counter()
    with WriterLock(outp) as lock:
        manifests, problems = load_manifests(outp)
        res.problems.extend(problems)
        h = options_hash(options)
        current = live(manifests)
        if any(m.get("options_hash") != h for m in current):
            # a new trajkit version or other options: every run is read again
            for m in manifests:
                try:
                    os.unlink(outp / MANIFESTS / f"{m['batch']}.json")
                except OSError:
                    pass
            manifests, current = [], []
            res.reset = True
        _prune(outp, manifests)  # files of a killed run, superseded batches left behind
        have: dict[str, tuple[int, float, str]] = {}
        for m in current:
            for u in m.get("units") or []:
                have[u["source"]] = (u.get("size"), u.get("mtime"), m["batch"])
        now = time.time_ns()  # to the nanosecond: two builds in one process within a second must not share batch names
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 1_000_000_000)) + f".{now % 1_000_000_000:09d}-{os.getpid()}"
        dead: set[str] = set()  # old batches superseded by this run
        pending_dead: list[str] = []  # ... not yet named by a committed manifest
        writer: _BatchWriter | None = None  # the batch being written (its rows so far are on disk)
        skipped: list[Unit] = []
        done = 0

        def current() -> _BatchWriter:
            nonlocal writer
            if writer is None:
                writer = _BatchWriter(outp, f"{stamp}-{res.batches:06d}")
            return writer

        def flush() -> None:
            nonlocal pending_dead, writer
            w = current()
            counts = w.commit(options, pending_dead)
            writer = None
            if pending_dead:
                manifests_now, _ = load_manifests(outp)
                _prune(outp, manifests_now)
                pending_dead = []
            for t, n in counts.items():
                res.rows[t] = res.rows.get(t, 0) + n
            res.batches += 1
            res.indexed += len(w)
            res.runs_read += w.runs
            res.unreadable += w.unreadable

        def supersede(batch: str) -> None:
            if batch not in dead:
                dead.add(batch)
                pending_dead.append(batch)

        def take(stream: Iterable[Unit]) -> None:
            nonlocal done
            chunk = max(1, min(batch_size, ENGINE_CHUNK))
            for b in run(IndexTask(options), stream, engine=engine, jobs=jobs, batch_size=chunk, address=address, pack=_pack):
                held: list[UnitRows] = []  # this chunk's rows for the batch being written
                for unit, r in zip(b.items, b.results):
                    r = r if isinstance(r, UnitRows) else _failed(unit, r)
                    if r.skipped:
                        skipped.append(r.unit)
                        continue
                    old = have.get(unit.source)
                    if old is not None:  # changed (or its batch is being re-read): the old batch goes with this commit
                        supersede(old[2])
                    held.append(r)
                    if len(current()) + len(held) >= batch_size:
                        current().add(held)
                        held = []
                        flush()
                if held:
                    current().add(held)
                done += len(b.items)
                del held, b, r  # the chunk's rows are on disk: none of them stays in the driver while the next is awaited
                if on_progress is not None:
                    on_progress(done)

        # discovery walks in a process of its own beside the process engine's workers (not for the serial engine:
        # one process; nor for Ray, whose driver runs threads of its own once started: a fork is then no safe start)
        fork = engine == "process" and res.jobs > 1
        found = _Found(list(roots), have, dead, on_problem, on_discovered, load_discovery(outp), skipped, fork, lock.fd)
        ended = [False]

        def stream() -> Iterable[Unit]:
            import dataclasses

            nonlocal done
            for u in found:
                if u.prev is not None:
                    # the change key, worked out here (or by the tree's digest): an unchanged run costs a few
                    # stats, not a trip to a worker
                    size, mtime = (u.size, u.mtime) if u.size is not None and u.mtime is not None else change_key(u.path)
                    if tuple(u.prev) == (size, mtime):
                        skipped.append(u if u.size is not None else dataclasses.replace(u, size=size, mtime=mtime))
                        done += 1
                        if on_progress is not None and done % 256 == 0:
                            on_progress(done)
                        continue
                yield u
            ended[0] = True
            done += found.unchanged  # a remembered tree's unchanged runs: counted, never yielded
            if on_start is not None:
                on_start(found.count, 0)

        try:
            take(stream())
            if on_progress is not None:
                on_progress(done)
            if found.walked.keys() != found.cache.keys() or found.walked_again:
                save_discovery(outp, found.walked)  # (unchanged when every ROOT was remembered and no other one is)
            res.found = found.count
            # runs that vanished: their batches go; runs found unchanged in a superseded batch are read again
            unseen = found.unseen
            for src, (_, _, batch) in have.items():
                if src in unseen:
                    supersede(batch)
            again = found.again()
            if again:
                take(again)
            if writer is not None or pending_dead:  # the last batch; or an empty batch records what vanished
                flush()
        except BaseException as e:
            if writer is not None:  # its temporary files go; the committed batches stay
                writer.abort(e)
            raise
        finally:
            found.close()  # (a discovery process still walking when the build failed)
        res.skipped = res.found - res.indexed
        res.superseded = len(dead)
    res.seconds = time.perf_counter() - started
    return res


def _failed(unit: Unit, failure: Any) -> UnitRows:
    """A task bug on ``unit``: a ``runs`` row with ``read_ok`` false and an ``index.task-failed`` row."""
    from .tables import run_row

    ur = UnitRows(unit, {t: [] for t in TABLES})
    ur.rows["runs"].append(run_row(None, unit.run_id, unit, None, version()))
    ur.rows["diagnostics"].append({"run_id": unit.run_id, "session_key": None, "code": "index.task-failed",
                                   "severity": "error", "message": getattr(failure, "error", str(failure)),
                                   "file": None, "line": None, "offset": None, "event_id": None})
    ur.runs, ur.unreadable = 1, 1
    return ur


# ---------------------------------------------------------------- status / compact

def status(out: str | os.PathLike) -> dict[str, Any]:
    """What the index at ``out`` holds: live batches, runs, rows per table, options, and leftovers."""
    outp = Path(out)
    manifests, problems = load_manifests(outp)
    cur = live(manifests)
    rows: dict[str, int] = {t: 0 for t in TABLES}
    units_n = runs = unreadable = 0
    versions: set[str] = set()
    hashes: set[str] = set()
    for m in cur:
        for t, n in (m.get("rows") or {}).items():
            rows[t] = rows.get(t, 0) + int(n)
        for u in m.get("units") or []:
            units_n += 1
            runs += int(u.get("runs") or 0)
            unreadable += int(u.get("unreadable") or 0)
        versions.add(str(m.get("trajkit_version")))
        hashes.add(str(m.get("options_hash")))
    named = {str(outp / rel) for m in cur for rel in (m.get("files") or {}).values()}
    stray = 0
    for t in TABLES:
        try:
            stray += sum(1 for n in os.listdir(outp / t) if str(outp / t / n) not in named)
        except OSError:
            pass
    locked = False
    try:
        with WriterLock(outp) if (outp / LOCK).exists() else _Null():
            pass
    except Locked:
        locked = True
    return {
        "out": str(outp),
        "index": bool(manifests) or (outp / MANIFESTS).is_dir(),
        "batches": len(cur),
        "superseded_batches": len(manifests) - len(cur),
        "units": units_n,
        "runs": runs,
        "unreadable": unreadable,
        "rows": rows,
        "files": len(named),
        "stray_files": stray,
        "trajkit_versions": sorted(versions),
        "options_hashes": sorted(hashes),
        "writer_active": locked,
        "problems": problems,
    }


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def compact(out: str | os.PathLike, target_rows: int = 1_000_000) -> dict[str, Any]:
    """Merge the live batches of ``out`` into one batch (one file per table),
    then drop the old ones. Under the writer lock; crash-safe like a batch
    commit (the new manifest supersedes every old batch)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    outp = Path(out)
    with WriterLock(outp):
        manifests, problems = load_manifests(outp)
        cur = live(manifests)
        if len(cur) <= 1:
            _prune(outp, manifests)
            return {"out": str(outp), "batches_before": len(cur), "batches_after": len(cur), "problems": problems}
        batch = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}-compact"
        files: dict[str, str] = {}
        counts: dict[str, int] = {}
        import io

        for t in TABLES:
            parts = [str(outp / m["files"][t]) for m in cur if t in (m.get("files") or {})]
            if not parts:
                continue
            tables = [pq.read_table(p, schema=schema(t)) for p in parts]
            merged = pa.concat_tables(tables) if tables else schema(t).empty_table()
            buf = io.BytesIO()
            pq.write_table(merged, buf, compression="zstd", row_group_size=min(target_rows, max(1, merged.num_rows)))
            rel = f"{t}/{batch}.parquet"
            write_atomic(outp / rel, buf.getvalue())
            files[t] = rel
            counts[t] = merged.num_rows
        first = cur[0]
        manifest = {
            "format": MANIFEST_FORMAT, "batch": batch, "trajkit_version": first.get("trajkit_version"),
            "options": first.get("options"), "options_hash": first.get("options_hash"),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": files, "rows": counts, "supersedes": [m["batch"] for m in cur],
            "units": [u for m in cur for u in (m.get("units") or [])],
        }
        write_atomic(outp / MANIFESTS / f"{batch}.json", dumps(manifest, indent=True) + b"\n")
        manifests, _ = load_manifests(outp)
        removed = _prune(outp, manifests)
    return {"out": str(outp), "batches_before": len(cur), "batches_after": 1, "rows": counts, "files_removed": removed,
            "problems": problems}
