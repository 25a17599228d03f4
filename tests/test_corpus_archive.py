"""Run archives (.tar.zst, .tar.gz, .zip) indexed member by member: the same
rows as the unpacked runs, zip-slip and links refused, size caps applied, a
damaged archive or a missing zstandard a diagnostic row. That nothing is
written while archives are read: tests/test_corpus_archive_memory.py."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from trajkit.corpus.index import live_files

SAME = ("format", "read_ok", "session_id", "task", "model", "steps", "events", "tool_calls", "sessions",
        "input_tokens", "output_tokens", "cost_usd", "end_status", "diagnostics")


def table(out: Path, name: str) -> list[dict]:
    rows: list[dict] = []
    for f in live_files(out)[name]:
        rows.extend(pq.read_table(f).to_pylist())
    return rows


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory, corpus) -> Path:
    d = tmp_path_factory.mktemp("arch") / "runs"
    for conv in sorted((corpus / "openhands_v1" / "sdk_pr_artifacts").glob("*/*")):
        shutil.copytree(conv, d / "sdk" / conv.name)
    shutil.copytree(corpus / "openhands_v0" / "reconstructed_trials" / "vue-todo-app.1-of-1.killed-run",
                    d / "trials" / "vue-todo-app.1-of-1.killed-run")
    (d / "flat").mkdir()
    shutil.copy(corpus / "openhands_v0" / "flat_exports" / "basic.json", d / "flat" / "basic.json")
    return d


def _files(d: Path) -> list[tuple[str, Path]]:
    return sorted((p.relative_to(d.parent).as_posix(), p) for p in d.rglob("*") if p.is_file())


def make_tar(d: Path, dest: Path, compression: str) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(d, arcname=d.name)
    data = buf.getvalue()
    if compression == "zst":
        import zstandard

        dest.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        import gzip

        dest.write_bytes(gzip.compress(data))
    return dest


def make_zip(d: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, p in _files(d):
            zf.write(p, name)
    return dest


@pytest.mark.parametrize("kind", ["tar.zst", "tar.gz", "zip"])
def test_archive_rows_equal_the_unpacked_runs(runs_dir, tmp_path, kind):
    plain = tmp_path / "plain"
    run_cli("index", runs_dir, "--out", plain, "--engine", "serial", "-q", check=True)
    expected = {r["path"]: {k: r[k] for k in SAME} for r in table(plain, "runs")}
    assert len(expected) == 5
    store = tmp_path / "store"
    store.mkdir()
    arc = store / f"runs.{kind}"
    make_zip(runs_dir, arc) if kind == "zip" else make_tar(runs_dir, arc, kind.split(".")[1])
    out = tmp_path / "idx"
    doc = json.loads(run_cli("index", store, "--out", out, "--json", check=True).stdout)
    assert doc["found"] == 1 and doc["runs_read"] == 5
    got = {r["path"]: r for r in table(out, "runs")}
    assert {p.split("!/runs/", 1)[1] for p in got} == set(expected)
    for p, r in got.items():
        assert p.startswith(f"runs.{kind}!/runs/") and r["source"] == f"store/{p}"
        assert {k: r[k] for k in SAME} == expected[p.split("!/runs/", 1)[1]]
    # step rows and their files are the same, relative to the run root
    steps = sorted((s["step_id"], s["action"], s["action_file"]) for s in table(out, "steps"))
    assert steps == sorted((s["step_id"], s["action"], s["action_file"]) for s in table(plain, "steps"))


def test_zip_slip_and_links_are_refused(runs_dir, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    evil = store / "evil.zip"
    flat = (runs_dir / "flat" / "basic.json").read_bytes()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("runs/flat/basic.json", flat)
        zf.writestr("../../escaped.json", flat)
        zf.writestr("/abs/escaped.json", flat)
        zf.writestr("runs/../../escaped2.json", flat)
        link = zipfile.ZipInfo("runs/flat/link.json")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    tgz = store / "evil.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("runs/flat/basic.json")
        info.size = len(flat)
        tf.addfile(info, io.BytesIO(flat))
        sym = tarfile.TarInfo("runs/flat/sym.json")
        sym.type, sym.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(sym)
        up = tarfile.TarInfo("../up.json")
        up.size = len(flat)
        tf.addfile(up, io.BytesIO(flat))
    tgz.write_bytes(buf.getvalue())
    out = tmp_path / "idx"
    doc = json.loads(run_cli("index", store, "--out", out, "--json", check=True).stdout)
    assert doc["runs_read"] == 2  # the one safe run in each archive
    diags = table(out, "diagnostics")
    unsafe = sorted(d["file"] for d in diags if d["code"] == "archive.unsafe-member")
    assert unsafe == sorted(["../../escaped.json", "/abs/escaped.json", "runs/../../escaped2.json", "runs/flat/link.json",
                             "runs/flat/sym.json", "../up.json"])
    import hashlib

    archive_ids = {hashlib.sha256(f"store/{n}".encode()).hexdigest()[:32] for n in ("evil.zip", "evil.tar.gz")}
    assert {d["run_id"] for d in diags if d["code"].startswith("archive.")} == archive_ids
    for p in (tmp_path / "escaped.json", tmp_path.parent / "escaped.json", Path("/abs/escaped.json"),
              tmp_path / "escaped2.json", tmp_path / "up.json", store.parent / "up.json"):
        assert not p.exists()


def test_size_caps(runs_dir, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    make_zip(runs_dir, store / "runs.zip")
    out = tmp_path / "idx"
    # no member over 4 KB is read: the big event files are refused, the small runs are still indexed
    json.loads(run_cli("index", store, "--out", out, "--json", "--max-file-bytes", "4096", check=True).stdout)
    too_big = [d for d in table(out, "diagnostics") if d["code"] == "archive.member-too-large"]
    big_members = [n for n, p in _files(runs_dir) if p.stat().st_size > 4096]
    assert sorted(d["file"] for d in too_big) == sorted(big_members)
    # the whole archive past 20 KB uncompressed: reading stops, with an error row
    out2 = tmp_path / "idx2"
    json.loads(run_cli("index", store, "--out", out2, "--json", "--max-archive-bytes", "20000", check=True).stdout)
    stop = [d for d in table(out2, "diagnostics") if d["code"] == "archive.too-large"]
    assert len(stop) == 1 and stop[0]["severity"] == "error"


def test_a_damaged_archive_is_a_row_not_a_failure(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    (store / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    out = tmp_path / "idx"
    doc = json.loads(run_cli("index", store, "--out", out, "--json", check=True).stdout)
    assert doc["found"] == 2
    codes = sorted(d["code"] for d in table(out, "diagnostics"))
    assert codes == ["archive.unreadable", "archive.unreadable"]


def test_tar_zst_without_zstandard_is_a_row(runs_dir, tmp_path):
    """Without the optional zstandard package (its import blocked in a fresh
    interpreter), a .tar.zst is one ``archive.unreadable`` row naming the extra."""
    import subprocess
    import sys

    store = tmp_path / "store"
    store.mkdir()
    make_tar(runs_dir, store / "runs.tar.zst", "zst")
    out = tmp_path / "idx"
    code = ("import sys; sys.modules['zstandard'] = None\n"
            "from trajkit.cli import run\n"  # the console entry (pyproject's [project.scripts])
            f"run(['index', {str(store)!r}, '--out', {str(out)!r}, '--engine', 'serial', '-q'])")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    from trajkit.corpus.archive import ZSTD_MISSING

    diags = table(out, "diagnostics")
    assert [(d["code"], d["message"]) for d in diags] == [("archive.unreadable", ZSTD_MISSING)]
