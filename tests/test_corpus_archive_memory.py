"""Run archives are read in place, never extracted.

- every format family's example runs, packed into an archive, give the same
  sessions, steps, tool calls, diagnostics, certificates and turns (every
  table's rows) as the same files read from disk (the disk read is the
  independent route: the operating system's files, read without the archive
  code);
- an opencode store whose writes still sit in its ``-wal`` reads the same
  from an archive (the frames applied in memory) as SQLite's own read-only
  open of the files on disk;
- nothing is written to any filesystem while archives are indexed: every
  way to create or write a file raises, and no new entry appears in the
  temporary folders;
- the mount is per context: other threads, and the code after the block,
  see the operating system.
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import sqlite3
import tarfile
import tempfile
import threading
import zipfile
from pathlib import Path

import pytest

from trajkit import registry
from trajkit.corpus import archive
from trajkit.corpus.discover import discover
from trajkit.corpus.index import unit_of
from trajkit.corpus.tasks import IndexOptions, IndexTask, Unit
from trajkit.reading import fs

KINDS = ["tar.gz", "zip", "tar.zst"]

#: columns that name where a run was read from (the archive's address, or the disk's), not what it holds
_WHERE = {"run_id", "source", "root", "path", "mtime"}


def _pack(src: Path, dest: Path, kind: str) -> Path:
    """``src`` (a folder) packed as ``<kind>`` at ``dest``, its members named ``<src name>/...``."""
    if kind == "zip":
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in sorted(src.rglob("*")):
                if p.is_file():
                    zf.write(p, p.relative_to(src.parent).as_posix())
        return dest
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(src, arcname=src.name)
    if kind == "tar.zst":
        zstandard = pytest.importorskip("zstandard")
        dest.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    else:
        import gzip

        dest.write_bytes(gzip.compress(buf.getvalue()))
    return dest


def _copy_example(example: Path, runs: Path) -> None:
    """The example run under ``runs/``: a folder as it is, a file with the folder it sits in
    (a file's neighbours can be part of its run: sub-agent files, a sibling store)."""
    if example.is_dir():
        shutil.copytree(example, runs / example.name, symlinks=True)
    else:
        shutil.copytree(example.parent, runs / example.parent.name, symlinks=True)


def _normal(rows: dict[str, list[dict]], where: str) -> dict[str, list[str]]:
    """Each table's rows, without the columns that say where the run was read from, and with
    the folder it was read under (``where``: the disk folder, or the archive) written ``<WHERE>``
    in messages that quote a file's address."""
    out = {}
    for table, rs in rows.items():
        out[table] = sorted(repr(sorted((k, v.replace(where, "<WHERE>") if isinstance(v, str) else v)
                                        for k, v in r.items() if k not in _WHERE)) for r in rs)
    return out


def _disk_rows(runs: Path, task: IndexTask, scratch: Path) -> dict[str, dict[str, list]]:
    """Per run (its path relative to ``runs``), the table rows of reading it from disk, each
    folder under ``runs`` placed alone in a folder of its own (as the archive reader takes
    each group of members alone)."""
    got = {}
    for sub in sorted(runs.iterdir()):
        d = scratch / sub.name
        shutil.copytree(sub, d / runs.name / sub.name, symlinks=True)
        for ref in discover([d]):
            u = unit_of(ref, str(d))
            assert u.rel.startswith(runs.name + "/"), u.rel
            got[u.rel[len(runs.name) + 1:]] = _normal(task(u).rows, str(d))
    return got


def _archive_rows(arc: Path, task: IndexTask, top: str) -> tuple[dict[str, dict[str, list]], list[dict]]:
    """Per run (its path relative to the archive's ``top`` folder), the table rows of reading it
    from the archive; and the archive's own diagnostic rows."""
    u = Unit(path=str(arc), source=f"store/{arc.name}", root=str(arc.parent), rel=arc.name, archive=True)
    r = task(u)
    by_run: dict[str, dict[str, list]] = {}
    rid_to_rel = {}
    for row in r.rows["runs"]:
        inner = row["source"].split("!/", 1)[1]
        assert inner.startswith(top + "/")
        rid_to_rel[row["run_id"]] = inner[len(top) + 1:]
    own = []
    for table, rs in r.rows.items():
        for row in rs:
            rel = rid_to_rel.get(row["run_id"])
            if rel is None:
                own.append(row)
                continue
            by_run.setdefault(rel, {t: [] for t in r.rows})[table].append(row)
    return {rel: _normal(rows, str(arc)) for rel, rows in by_run.items()}, own


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f.name) for f in registry.formats()])
def test_every_format_reads_from_an_archive_as_from_disk(fmt, tmp_path):
    runs = tmp_path / "runs"
    for ex in fmt.example_paths():
        if not (runs / (ex.name if ex.is_dir() else ex.parent.name)).exists():
            _copy_example(ex, runs)
    task = IndexTask(IndexOptions(certify=True, turns=True))
    disk = _disk_rows(runs, task, tmp_path / "disk")
    assert disk, f"{fmt.name}: no run found on disk under {runs}"
    assert any(rows["runs"] and "'format', '" + fmt.name + "'" in rows["runs"][0] for rows in disk.values()), \
        f"{fmt.name}: its examples are not among the runs found"
    (tmp_path / "store").mkdir()
    for kind in KINDS:
        arc = _pack(runs, tmp_path / "store" / f"runs.{kind}", kind)
        got, own = _archive_rows(arc, task, "runs")
        assert not own, own  # no archive.* problem: no member refused, none clashed
        assert sorted(got) == sorted(disk), kind
        for rel in disk:
            assert got[rel] == disk[rel], f"{kind}: {rel}"


def test_a_store_with_writes_in_its_wal_reads_from_an_archive_as_sqlite_reads_it(tmp_path):
    from opencode_data import corpus_rows, make_db

    build = tmp_path / "build" / "opencode.db"
    make_db(build, corpus_rows(), wal=True)
    runs = tmp_path / "runs" / "store"
    runs.mkdir(parents=True)
    con = sqlite3.connect(build)
    try:
        con.execute("PRAGMA wal_autocheckpoint=0")
        n = con.execute("SELECT count(*) FROM part").fetchone()[0]
        con.execute("DELETE FROM part WHERE rowid IN (SELECT rowid FROM part ORDER BY rowid DESC LIMIT 3)")
        con.commit()
        # as a live opencode leaves them: the main file as last checkpointed, the newer writes in the -wal
        shutil.copy(build, runs / "opencode.db")
        shutil.copy(str(build) + "-wal", runs / "opencode.db-wal")
    finally:
        con.close()
    wal = (runs / "opencode.db-wal").read_bytes()
    assert len(wal) > 32
    ro = sqlite3.connect(f"file:{runs / 'opencode.db'}?mode=ro", uri=True)
    assert ro.execute("SELECT count(*) FROM part").fetchone()[0] == n - 3  # SQLite applies the -wal
    ro.close()
    task = IndexTask(IndexOptions())
    disk = _disk_rows(tmp_path / "runs", task, tmp_path / "disk")
    assert disk
    (tmp_path / "arc").mkdir()
    arc = _pack(tmp_path / "runs", tmp_path / "arc" / "runs.tar.gz", "tar.gz")
    got, own = _archive_rows(arc, task, "runs")
    assert not own and got == disk
    # and the main file alone (no -wal member) reads as its last checkpoint, as an immutable open does
    from trajkit.formats.opencode.db import apply_wal

    assert bytes(apply_wal((runs / "opencode.db").read_bytes(), wal)) != (runs / "opencode.db").read_bytes()


def forbid_writes(monkeypatch) -> list[str]:
    """Every way trajkit could create or write a file raises (until ``monkeypatch.undo()``);
    the attempts are listed in the list returned."""
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    real_os_open, real_open, real_connect = os.open, builtins.open, sqlite3.connect
    tries: list[str] = []

    def refuse(what: str):
        tries.append(what)
        raise AssertionError(f"written while an archive was indexed: {what}")

    def os_open(path, flags, *a, **k):
        if flags & write_flags:
            refuse(f"os.open({path!r}, {flags:#o})")
        return real_os_open(path, flags, *a, **k)

    def open_(file, mode="r", *a, **k):
        if any(c in mode for c in "wax+"):
            refuse(f"open({file!r}, {mode!r})")
        return real_open(file, mode, *a, **k)

    def connect(database, *a, **k):
        if database != ":memory:":
            refuse(f"sqlite3.connect({database!r})")
        return real_connect(database, *a, **k)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)
    monkeypatch.setattr(sqlite3, "connect", connect)
    for name in ("mkdir", "makedirs", "rename", "replace", "symlink", "link", "mkfifo", "truncate"):
        monkeypatch.setattr(os, name, lambda *a, _n=name, **k: refuse(f"os.{_n}{a!r}"))
    for name in ("mkdtemp", "mkstemp", "NamedTemporaryFile", "TemporaryDirectory", "TemporaryFile", "SpooledTemporaryFile"):
        monkeypatch.setattr(tempfile, name, lambda *a, _n=name, **k: refuse(f"tempfile.{_n}"))
    monkeypatch.setattr(shutil, "copyfileobj", lambda *a, **k: refuse("shutil.copyfileobj"))
    return tries


def test_nothing_is_written_while_archives_are_indexed(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    for fmt in registry.formats():
        for ex in fmt.example_paths():
            dest = runs / fmt.name / (ex.name if ex.is_dir() else ex.parent.name)
            if not dest.exists():
                shutil.copytree(ex if ex.is_dir() else ex.parent, dest, symlinks=True)
    store = tmp_path / "store"
    store.mkdir()
    arcs = [_pack(runs, store / f"runs.{k}", k) for k in KINDS]
    task = IndexTask(IndexOptions(certify=True))
    units = [Unit(path=str(a), source=f"store/{a.name}", root=str(store), rel=a.name, archive=True) for a in arcs]
    expected = [task(u) for u in units]  # once with writes allowed: every module the reads need is imported
    private = tmp_path / "tmpdir"  # the temporary folder while indexing: it must stay empty
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    from _pytest.monkeypatch import MonkeyPatch

    mp = MonkeyPatch()
    try:
        tries = forbid_writes(mp)
        got = [task(u) for u in units]
    finally:
        mp.undo()
    assert tries == []
    assert list(private.iterdir()) == []
    assert not [n for n in (set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()) - shm if "trajkit" in n]
    for e, g in zip(expected, got):
        assert g.runs == e.runs and g.runs >= len(registry.formats())
        assert g.rows == e.rows
        assert not [r for r in g.rows["diagnostics"] if r["code"].startswith("archive.")]


def test_the_mount_is_for_this_context_only(tmp_path):
    (tmp_path / "real.json").write_text("{}")
    tree = fs.MemoryTree(str(tmp_path / "a.zip"), [("runs/x.json", b"[1]", 0.0)])
    seen: dict[str, object] = {}

    def other_thread():
        seen["thread"] = (fs.isfile(tmp_path / "real.json"), fs.exists(tmp_path / "a.zip" / "runs" / "x.json"))

    with fs.mounted(tree):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        inside = (fs.isfile(tmp_path / "real.json"), fs.isfile(tmp_path / "a.zip" / "runs" / "x.json"),
                  fs.isdir(tmp_path / "a.zip"), fs.listdir(tmp_path), fs.exists("/etc"))
        from trajkit.reading.io import head, read_capped

        data = (read_capped(str(tmp_path / "a.zip" / "runs" / "x.json")), head(str(tmp_path / "real.json"), 10))
    assert seen["thread"] == (True, False)
    # inside: the tree is the whole filesystem (the archive's ancestors hold only the way down to it)
    assert inside == (False, True, True, ["a.zip"], False)
    assert data == ((b"[1]", None), b"")
    assert fs.current() is None and fs.isfile(tmp_path / "real.json")


def test_clashing_members_keep_the_first(tmp_path):
    problems: list[archive.Problem] = []
    tree = archive.group_tree(str(tmp_path / "a.tar.gz"), [
        ("r/a.json", b"1", 0.0), ("r/a.json", b"2", 0.0), ("r/a.json/b", b"3", 0.0), ("r/d/e", b"4", 0.0), ("r/d", b"5", 0.0),
    ], problems)
    assert [(p.code, p.member) for p in problems] == [("archive.member-clash", m) for m in ("r/a.json", "r/a.json/b", "r/d")]
    assert tree.data(tmp_path / "a.tar.gz" / "r" / "a.json") == b"1"
    assert tree.kind(tmp_path / "a.tar.gz" / "r" / "d") == "dir"


# the os calls a reader must make through trajkit.reading.fs (or io / Probe / tree), so that it reads a run
# inside an archive as on disk; a new direct call would read nothing from an archive, silently
_OS_CALLS = {"os.scandir", "os.listdir", "os.stat", "os.lstat", "os.walk", "os.open", "os.path.isfile", "os.path.isdir",
             "os.path.exists", "os.path.lexists", "os.path.getsize", "os.path.getmtime", "os.path.islink"}


def _dotted(node) -> str | None:
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def test_readers_look_at_files_only_through_the_seam():
    import ast

    src = Path(registry.__file__).parent
    found = []
    for p in sorted([*(src / "formats").rglob("*.py"), *(src / "vocab").rglob("*.py")]):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            if name in _OS_CALLS or name == "open" or (name == "sqlite3.connect" and p.name != "db.py"):
                found.append(f"{p.relative_to(src)}:{node.lineno}: {name}(...)")
    assert not found, "direct filesystem calls in readers (use trajkit.reading.fs / io / Probe):\n" + "\n".join(found)


def test_a_shared_listing_cache_keeps_nothing_of_a_mount(tmp_path):
    """Discovery's shared listings (reading.tree) outlive a mount when one encloses it: two groups
    mounted one after the other at the same archive path each list their own members."""
    from trajkit.reading import tree

    root = str(tmp_path / "a.zip")
    first = fs.MemoryTree(root, [("g1/x.json", b"1", 0.0)])
    second = fs.MemoryTree(root, [("g2/y.json", b"2", 0.0)])
    with tree.shared_listings():
        with fs.mounted(first):
            assert [e.name for e in tree.scandir(root)] == ["g1"]
        with fs.mounted(second):
            assert [e.name for e in tree.scandir(root)] == ["g2"]
            assert [(d, f) for d, _, f in tree.walk(root)] == [(root, []), (os.path.join(root, "g2"), ["y.json"])]


def test_a_memory_tree_refuses_as_the_disk_does(tmp_path):
    """Reads, stats and listings of what is not there (or not a file) fail in memory with the
    operating system's own reasons, the ones the same paths give on disk."""
    from trajkit.reading.io import head, read_capped, read_range

    (tmp_path / "f.json").write_bytes(b'{"a": 1}')
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "g").write_bytes(b"")
    tree = fs.MemoryTree(str(tmp_path / "x.zip"), [("f.json", b'{"a": 1}', 0.0), ("dir/g", b"", 0.0)])

    def seen(base: Path, rel: str) -> list:
        p = str(base / rel)
        out: list = [read_capped(p), read_capped(p, 3), read_range(p, 2, 3), head(p, 4)]
        for fn in (fs.stat, fs.scandir, fs.listdir):
            try:
                r = fn(p)
                out.append(("ok", r.st_size if fn is fs.stat and not fs.isdir(p) else None))
            except OSError as e:
                out.append((type(e).__name__, e.strerror))
        out += [fs.isfile(p), fs.isdir(p), fs.exists(p)]
        return [(o[0], o[1].code, o[1].reason) if isinstance(o, tuple) and len(o) == 2 and hasattr(o[1], "code") else o
                for o in out]

    for rel in ("f.json", "f.json/sub", "f.json/a/b", "nope", "dir", "dir/g", "dir/nope"):
        disk = seen(tmp_path, rel)
        with fs.mounted(tree):
            mem = seen(tmp_path / "x.zip", rel)
        assert mem == disk, rel
