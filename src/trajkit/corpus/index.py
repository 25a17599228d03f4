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
DISCOVERY_FORMAT = "trajkit.discovery/1"
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

def unit_of(ref: Any, raw: str) -> Unit:
    """The :class:`Unit` of a found run (or archive) under the ROOT ``raw`` (as given)."""
    from .discover import ARCHIVE

    given = os.path.abspath(os.fspath(raw))
    name = os.path.basename(given.rstrip(os.sep)) or given
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


def tree_digest(root: str | os.PathLike, keys: dict[str, Any] | None = None) -> str | None:
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

    A re-index of an unchanged corpus is mostly this walk, so it does no more
    than it must: one ``stat`` per entry (the listing's type says which are
    folders), a tuple per entry, and one hash update per folder.
    """
    import hashlib
    import stat as _stat

    top = os.path.abspath(os.fspath(root))
    try:
        st = os.stat(top)
    except OSError:
        return None
    if not _stat.S_ISDIR(st.st_mode):
        return None
    racy_after = time.time_ns() - int(RACY_SECONDS * 1e9)
    if st.st_mtime_ns > racy_after or st.st_ctime_ns > racy_after:
        return None
    want = keys if keys is not None else {}
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((st.st_mtime_ns, st.st_ctime_ns, st.st_ino)).encode())
    is_dir_mode = _stat.S_ISDIR

    class _Untrusted(Exception):
        pass

    def walk(d: str, rel: str) -> tuple[int, float]:
        # (bytes of the files below d, newest mtime below d): change_key's sums, d's own mtime left to the caller
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            raise _Untrusted from None
        rows: list[tuple[Any, ...]] = []
        subdirs = []
        size, newest = 0, 0.0
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    s = e.stat(follow_symlinks=False)
                    subdirs.append((e.name, e.path, s.st_mtime))
                    n = -1
                else:
                    s = e.stat()
                    if is_dir_mode(s.st_mode):
                        raise _Untrusted  # a symlinked folder: what it holds is outside this walk
                    n = s.st_size
                    size += n
                    if s.st_mtime > newest:
                        newest = s.st_mtime
                    if want and e.path in want:
                        want[e.path] = (n, s.st_mtime)
            except OSError:
                rows.append((e.name, -2))  # a dangling symlink, or an entry that vanished
                continue
            if s.st_mtime_ns > racy_after or s.st_ctime_ns > racy_after:
                raise _Untrusted
            rows.append((e.name, n, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
        rows.sort()  # the listing's order is the file system's: the digest does not depend on it
        h.update(repr((rel, rows)).encode("utf-8", "surrogateescape"))
        subdirs.sort()
        for name, path, mtime in subdirs:
            sub_size, sub_newest = walk(path, rel + "/" + name if rel else name)
            if mtime > sub_newest:
                sub_newest = mtime
            if want and path in want:
                want[path] = (sub_size, sub_newest)
            size += sub_size
            if sub_newest > newest:
                newest = sub_newest
        return size, newest

    try:
        size, newest = walk(top, "")
    except (_Untrusted, RecursionError):
        return None
    if top in want:
        want[top] = (size, max(st.st_mtime, newest))
    return h.hexdigest()


def _tree_digest(raw: str, keys: dict[str, Any] | None = None) -> str | None:
    """The digest of the directory ROOT ``raw`` when its runs may be remembered:
    not when ``raw`` is itself a run (or inside one: detection then looks at
    folders above it, which the digest does not cover). ``keys``: see
    :func:`tree_digest`."""
    from ..registry import detect

    if not os.path.isdir(raw) or detect(raw).format is not None:
        return None
    return tree_digest(raw, keys)


def _unit_at(raw: str, rel: str, archive: bool) -> Unit:
    """The :class:`Unit` :func:`unit_of` makes for the run at ``rel`` under the ROOT ``raw`` (what the cache keeps)."""
    return _units_at(raw, _placed(raw, [(rel, archive)]))[0]


def _placed(raw: str, found: list[Any]) -> list[tuple[str, str, bool]]:
    """(absolute path, rel, archive) of each remembered ``[rel, archive]`` under the ROOT ``raw``."""
    given = os.path.abspath(raw)
    return [(given if rel == "." else os.path.normpath(os.path.join(given, rel)), rel, bool(archive))
            for rel, archive in found]


def _units_at(raw: str, placed: list[tuple[str, str, bool]], keys: dict[str, Any] | None = None) -> list[Unit]:
    """The :class:`Unit` of each :func:`_placed` run under ``raw``, with its
    change key when ``keys`` (file -> key, see :func:`tree_digest`) has it."""
    given = os.path.abspath(raw)
    name = os.path.basename(given.rstrip(os.sep)) or given
    out = []
    for path, rel, archive in placed:
        k = keys.get(_file_of(path)) if keys else None
        out.append(Unit(path=path, source=name if rel == "." else f"{name}/{rel}", root=raw, rel=rel,
                        size=None if k is None else k[0], mtime=None if k is None else k[1], archive=archive))
    return out


def _file_of(path: str) -> str:
    """The file a member path ``FILE#ID`` names (``path`` itself otherwise), as change_key reads it."""
    return path.rsplit("#", 1)[0] if "#" in path and not os.path.lexists(path) else path


def _cache_key(raw: str) -> str:
    # the runs are named in the caller's form: the same folder written otherwise is another entry
    return f"{raw}\0{os.path.abspath(raw)}"


def _discovery_stamp() -> str:
    """What discovery's result depends on besides the tree: trajkit and the formats it knows."""
    from ..registry import formats, origin

    return version() + ";" + ",".join(f"{f.name}@{origin(f.name)}" for f in formats())


def load_discovery(out: Path) -> dict[str, dict[str, Any]]:
    """The runs each ROOT's last discovery found (``DIR/_discovery.json``), when made by this trajkit with these formats."""
    try:
        with open(out / DISCOVERY, "rb") as f:
            doc, _ = loads(f.read())
    except OSError:
        return {}
    if not isinstance(doc, dict) or doc.get("format") != DISCOVERY_FORMAT or doc.get("stamp") != _discovery_stamp():
        return {}
    roots = doc.get("roots")
    if not isinstance(roots, dict):
        return {}

    def sound(e: Any) -> bool:  # a damaged entry is walked again, never trusted
        return (isinstance(e, dict) and isinstance(e.get("tree"), str) and isinstance(e.get("problems"), list)
                and isinstance(e.get("units"), list)
                and all(isinstance(u, list) and len(u) == 2 and isinstance(u[0], str) for u in e["units"]))

    return {k: e for k, e in roots.items() if sound(e)}


def save_discovery(out: Path, walked: dict[str, dict[str, Any]]) -> None:
    """Remember what discovery found under each ROOT (a cache: losing it only costs a walk)."""
    doc = {"format": DISCOVERY_FORMAT, "stamp": _discovery_stamp(), "roots": walked}
    write_atomic(out / DISCOVERY, dumps(doc, indent=False), durable=False)


class _Found:
    """The runs under the roots, found by a background thread while the engine
    already reads the first ones: an iterator of :class:`Unit` s (each with the
    key the index holds for it, unless its batch is already superseded)."""

    _END = object()

    def __init__(self, roots: list[str], have: dict[str, tuple[int, float, str]], dead: set[str],
                 on_problem: Callable[[str], None] | None, on_found: Callable[[int], None] | None,
                 cache: dict[str, dict[str, Any]] | None = None) -> None:
        import queue
        import threading

        self.q: Any = queue.Queue(maxsize=1024)  # the walk runs ahead of the readers, not the whole corpus ahead
        self.have, self.dead = have, dead
        self.cache = cache or {}
        self.ready: list[Unit] = []  # units handed over as a list, still to be yielded (last first)
        self.walked: dict[str, dict[str, Any]] = {}  # what each root's discovery found, for the next run
        self.walked_again = False  # some root was not remembered (or changed): discovery walked it
        self.on_problem, self.on_found = on_problem, on_found
        self.sources: set[str] = set()
        self.count = 0
        self.error: BaseException | None = None
        self.done = False
        self.thread = threading.Thread(target=self._walk, args=(roots,), daemon=True, name="trajkit-discover")
        self.thread.start()

    def _walk(self, roots: list[str]) -> None:
        from .discover import discover

        try:
            for raw in roots:
                hit = self.cache.get(_cache_key(raw))
                remembered = (hit.get("units") or []) if hit else []
                placed = _placed(raw, remembered)
                keys: dict[str, Any] = {_file_of(p): None for p, _r, _a in placed}
                digest = _tree_digest(raw, keys)  # taken before any walk: a change during it shows next time
                if digest is not None and hit is not None and hit.get("tree") == digest:
                    # nothing under the root changed since that walk: its runs, without detecting again, and
                    # their change keys from the digest's own stats
                    for problem in hit.get("problems") or []:
                        if self.on_problem is not None:
                            self.on_problem(problem)
                    self.q.put(_units_at(raw, placed, keys))  # one hand-over for the lot, not one per run
                    self.walked[_cache_key(raw)] = hit
                    continue
                del remembered, placed, keys
                self.walked_again = True
                found_units: list[list[Any]] = []
                problems: list[str] = []

                def found(ref: Any, raw: str = raw, found_units: list[list[Any]] = found_units) -> None:
                    u = unit_of(ref, raw)
                    if digest is not None:
                        found_units.append([u.rel, u.archive])  # the rest follows from the ROOT (_unit_at)
                    self.q.put(u)

                def problem(msg: str, problems: list[str] = problems) -> None:
                    problems.append(msg)
                    if self.on_problem is not None:
                        self.on_problem(msg)

                discover([raw], archives=True, on_problem=problem, on_found=found, collect=False)
                if digest is not None:
                    self.walked[_cache_key(raw)] = {"tree": digest, "units": found_units, "problems": problems}
        except BaseException as e:  # pragma: no cover - surfaced in the consumer
            self.error = e
        finally:
            self.q.put(self._END)

    def __iter__(self) -> "_Found":
        return self

    def __next__(self) -> Unit:
        while True:
            if self.ready:
                u = self.ready.pop()
            else:
                u = self.q.get()
                if u is self._END:
                    self.done = True
                    if self.error is not None:
                        raise self.error
                    raise StopIteration
                if isinstance(u, list):  # a remembered root's runs, handed over at once
                    self.ready = u[::-1]
                    continue
            if u.source in self.sources:  # found twice (two ROOTs naming one run under one name)
                continue
            self.sources.add(u.source)
            self.count += 1
            if self.on_found is not None and self.count % 256 == 0:
                self.on_found(self.count)
            h = self.have.get(u.source)
            if h is not None and h[2] not in self.dead:
                return Unit(path=u.path, source=u.source, root=u.root, rel=u.rel, size=u.size, mtime=u.mtime,
                            archive=u.archive, prev=(h[0], h[1]))
            return u


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
    with WriterLock(outp):
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

        found = _Found(list(roots), have, dead, on_problem, on_discovered, load_discovery(outp))
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
            for src, (_, _, batch) in have.items():
                if src not in found.sources:
                    supersede(batch)
            again = [u for u in skipped if have[u.source][2] in dead]
            if again:
                import dataclasses

                take(dataclasses.replace(u, prev=None) for u in again)
            if writer is not None or pending_dead:  # the last batch; or an empty batch records what vanished
                flush()
        except BaseException as e:
            if writer is not None:  # its temporary files go; the committed batches stay
                writer.abort(e)
            raise
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
