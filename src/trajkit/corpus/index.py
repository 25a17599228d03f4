"""``trajkit index``: many runs into Parquet tables, incrementally and resumably.

Layout of an index directory ``DIR``::

    DIR/.lock                         the writer lock (flock; one writer at a time)
    DIR/_manifests/<batch>.json       one per committed batch: its runs and its files
    DIR/<table>/<batch>.parquet       the batch's rows of each table (tables.TABLES)

A batch is committed when its manifest exists: the Parquet files are written
first (atomically, under their final names), then the manifest (atomically).
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
from .tables import OPTIONAL_TABLES, TABLES, schema
from .tasks import IndexOptions, IndexTask, Unit, UnitRows

MANIFESTS = "_manifests"
LOCK = ".lock"
MANIFEST_FORMAT = "trajkit.index/1"


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

def _tree_key(path: str) -> tuple[int, float]:
    """(total bytes, newest mtime) of the files of a run (a file, or a directory tree)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0, 0.0
    if not os.path.isdir(path):
        return st.st_size, st.st_mtime
    size, newest = 0, st.st_mtime
    stack = [path]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                            s = e.stat(follow_symlinks=False)
                        else:
                            s = e.stat()
                            size += s.st_size
                    except OSError:
                        continue
                    if s.st_mtime > newest:
                        newest = s.st_mtime
        except OSError:
            continue
    return size, newest


def units(roots: Iterable[str], on_problem: Callable[[str], None] | None = None,
          on_found: Callable[[int], None] | None = None) -> list[Unit]:
    """The runs and run archives under ``roots``, as :class:`Unit` s with their change keys."""
    from .discover import ARCHIVE, discover

    out: list[Unit] = []
    for raw in roots:
        given = os.path.abspath(os.fspath(raw))
        name = os.path.basename(given.rstrip(os.sep)) or given
        for ref in discover([raw], archives=True, on_problem=on_problem):
            p = os.path.abspath(os.fspath(ref.path))
            container = p.split("#", 1)[0] if not os.path.exists(p) else p
            rel = os.path.relpath(p, given) if p != given else "."
            rel = rel.replace(os.sep, "/")
            source = name if rel == "." else f"{name}/{rel}"
            size, mtime = _tree_key(container)
            out.append(Unit(path=p, source=source, root=os.fspath(raw), rel=rel, size=size, mtime=mtime,
                            archive=ref.kind == ARCHIVE))
            if on_found is not None and len(out) % 256 == 0:
                on_found(len(out))
    return out


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


def _write_table(path: Path, table: str, rows: list[dict[str, Any]]) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.Table.from_pylist(rows, schema=schema(table))
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="zstd")
    write_atomic(path, buf.getvalue())


def commit(out: Path, batch: str, results: list[UnitRows], options: IndexOptions, supersedes: list[str]) -> dict[str, int]:
    """Write one batch's tables, then its manifest (the commit point). Returns rows per table."""
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    for r in results:
        for t, rows in r.rows.items():
            tables[t].extend(rows)
    files: dict[str, str] = {}
    counts: dict[str, int] = {}
    for t, rows in tables.items():
        if not rows and t in OPTIONAL_TABLES:
            continue
        rel = f"{t}/{batch}.parquet"
        _write_table(out / rel, t, rows)
        files[t] = rel
        counts[t] = len(rows)
    manifest = {
        "format": MANIFEST_FORMAT,
        "batch": batch,
        "trajkit_version": version(),
        "options": options.key(),
        "options_hash": options_hash(options),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": files,
        "rows": counts,
        "supersedes": supersedes,
        "units": [{"source": r.unit.source, "run_id": r.unit.run_id, "size": r.unit.size, "mtime": r.unit.mtime,
                   "archive": r.unit.archive, "runs": r.runs, "unreadable": r.unreadable} for r in results],
    }
    write_atomic(out / MANIFESTS / f"{batch}.json", dumps(manifest, indent=True) + b"\n")
    return counts


def build(
    roots: list[str],
    out: str | os.PathLike,
    options: IndexOptions | None = None,
    engine: str = "process",
    jobs: int | None = None,
    batch_size: int = 64,
    address: str | None = None,
    on_discovered: Callable[[int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> IndexResult:
    """Index the runs under ``roots`` into ``out`` (see the module docstring).

    ``on_discovered(n)`` while runs are found, ``on_start(to_index, skipped)``
    once the work is known, ``on_progress(done)`` after each committed batch.
    Raises :class:`Locked` when another writer holds ``out``.
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
        found = units(roots, on_problem=on_problem, on_found=on_discovered)
        res.found = len(found)
        have: dict[str, tuple[int, float, str]] = {}
        for m in current:
            for u in m.get("units") or []:
                have[u["source"]] = (u.get("size"), u.get("mtime"), m["batch"])
        by_source = {u.source: u for u in found}
        dead: set[str] = set()
        for src, (size, mtime, batch) in have.items():
            u = by_source.get(src)
            if u is None or u.size != size or u.mtime != mtime:
                dead.add(batch)
        todo = [u for u in found if u.source not in have or have[u.source][2] in dead]
        res.skipped = len(found) - len(todo)
        res.superseded = len(dead)
        if on_start is not None:
            on_start(len(todo), res.skipped)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"
        pending_dead = sorted(dead)
        done = 0
        for b in run(IndexTask(options), todo, engine=engine, jobs=jobs, batch_size=batch_size, address=address):
            results: list[UnitRows] = []
            for unit, r in zip(b.items, b.results):
                if isinstance(r, UnitRows):
                    results.append(r)
                else:  # a task bug: the run is a diagnostics row, the index goes on
                    ur = UnitRows(unit, {t: [] for t in TABLES})
                    from .tables import run_row
                    ur.rows["runs"].append(run_row(None, unit.run_id, unit, None, version()))
                    ur.rows["diagnostics"].append({"run_id": unit.run_id, "session_key": None, "code": "index.task-failed",
                                                   "severity": "error", "message": getattr(r, "error", str(r)),
                                                   "file": None, "line": None, "offset": None, "event_id": None})
                    ur.runs, ur.unreadable = 1, 1
                    results.append(ur)
            counts = commit(outp, f"{stamp}-{b.number:06d}", results, options, pending_dead)
            if pending_dead:
                manifests_now, _ = load_manifests(outp)
                _prune(outp, manifests_now)
                pending_dead = []
            for t, n in counts.items():
                res.rows[t] = res.rows.get(t, 0) + n
            res.batches += 1
            res.indexed += len(results)
            res.runs_read += sum(r.runs for r in results)
            res.unreadable += sum(r.unreadable for r in results)
            done += len(b.items)
            if on_progress is not None:
                on_progress(done)
        if pending_dead:  # runs vanished and nothing new to index: an empty batch records the supersession
            commit(outp, f"{stamp}-{0:06d}", [], options, pending_dead)
            manifests_now, _ = load_manifests(outp)
            _prune(outp, manifests_now)
    res.seconds = time.perf_counter() - started
    return res


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
