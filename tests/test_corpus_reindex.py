"""Re-indexing with the discovery the index remembers (``DIR/_discovery.json``).

An index remembers, per ROOT, the runs its last discovery found and a digest
of the tree it walked (:func:`trajkit.corpus.index.tree_digest`). When the
digest is unchanged the runs are taken from there, without detecting again;
any change under the ROOT (a run changed in place, added or removed) makes
discovery walk again. The expected runs come from the files on disk, listed
here by name.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

import importlib

from trajkit.corpus.index import DISCOVERY, build, tree_digest

discover_mod = importlib.import_module("trajkit.corpus.discover")  # the package re-exports the function under this name
index_mod = importlib.import_module("trajkit.corpus.index")


def _runs(out: Path) -> dict[str, int]:
    """source -> size_bytes of the live runs rows."""
    from trajkit.corpus.index import live_files

    rows = [r for f in live_files(out)["runs"] for r in pq.read_table(f).to_pylist()]
    return {r["source"]: r["size_bytes"] for r in rows}


def _age(root: Path, seconds: float = 3600.0) -> None:
    """Set every mtime under ``root`` back (as a corpus written an hour ago)."""
    when = os.stat(root).st_mtime - seconds
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            os.utime(os.path.join(d, n), (when, when), follow_symlinks=False)
    os.utime(root, (when, when))


@pytest.fixture
def tree(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # ctimes cannot be set back, so the racy window is closed for these tests (it is tested on its own below)
    monkeypatch.setattr(index_mod, "RACY_SECONDS", 0.0)
    root = tmp_path / "runs"
    for f in sorted((corpus / "openhands_v0" / "flat_exports").glob("*.json")):
        (root / "flat").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, root / "flat" / f.name)
    for conv in sorted((corpus / "openhands_v1" / "sdk_pr_artifacts").glob("*/*")):
        shutil.copytree(conv, root / "sdk" / conv.name)
    _age(root)
    return root


def _expected(root: Path) -> set[str]:
    """The runs on disk: each flat export file and each SDK conversation folder."""
    flat = {f"runs/flat/{p.name}" for p in (root / "flat").glob("*.json")}
    sdk = {f"runs/sdk/{p.name}" for p in (root / "sdk").iterdir() if p.is_dir()}
    return flat | sdk


def _no_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*a, **k):
        raise AssertionError("discovery walked again although nothing changed")

    monkeypatch.setattr(discover_mod, "discover", fail)


def test_unchanged_tree_is_not_discovered_again(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    out = tmp_path / "idx"
    first = build([str(tree)], out, engine="serial", batch_size=1)
    assert first.indexed == len(_expected(tree)) == 7
    doc = json.loads((out / DISCOVERY).read_text())
    (entry,) = doc["roots"].values()
    assert entry["tree"] == tree_digest(tree)
    assert {"runs/" + rel for rel, _a in entry["units"]} == _expected(tree)
    saved = os.stat(out / DISCOVERY)
    with monkeypatch.context() as m:
        _no_discovery(m)
        again = build([str(tree)], out, engine="serial", batch_size=1)
    assert again.found == 7 and again.skipped == 7 and again.indexed == 0
    # nothing new to remember: the file is left as it is (written atomically, a rewrite is a new inode)
    now = os.stat(out / DISCOVERY)
    assert (now.st_ino, now.st_mtime_ns) == (saved.st_ino, saved.st_mtime_ns)


def test_changed_added_and_removed_runs_are_each_picked_up(tree: Path, tmp_path: Path):
    out = tmp_path / "idx"
    build([str(tree)], out, engine="serial", batch_size=1)
    before = tree_digest(tree)

    # changed in place: the file's size and mtime change, its folder's listing does not
    f = tree / "flat" / "basic.json"
    f.write_text(f.read_text() + "\n")
    assert tree_digest(tree) != before
    r = build([str(tree)], out, engine="serial", batch_size=1)
    assert r.found == 7 and r.indexed == 1
    assert _runs(out)["runs/flat/basic.json"] == f.stat().st_size

    # added: a new run folder
    src = next(p for p in (tree / "sdk").iterdir() if p.is_dir())
    shutil.copytree(src, tree / "sdk" / "added-conversation")
    r = build([str(tree)], out, engine="serial", batch_size=1)
    assert r.found == 8 and r.indexed == 1
    assert set(_runs(out)) == _expected(tree)

    # a file added inside a run folder changes that run's key, not the set of runs
    (tree / "sdk" / "added-conversation" / "notes.txt").write_text("x")
    r = build([str(tree)], out, engine="serial", batch_size=1)
    assert r.found == 8 and r.indexed == 1

    # removed
    shutil.rmtree(tree / "sdk" / src.name)
    r = build([str(tree)], out, engine="serial", batch_size=1)
    assert r.found == 7
    assert set(_runs(out)) == _expected(tree) and f"runs/sdk/{src.name}" not in _runs(out)

    # and unchanged since: remembered again
    doc = json.loads((out / DISCOVERY).read_text())
    assert [e["tree"] for e in doc["roots"].values()] == [tree_digest(tree)]


def test_renamed_runs_are_picked_up(tree: Path, tmp_path: Path):
    # a rename keeps the inode, size and mtime: only the name tells
    out = tmp_path / "idx"
    build([str(tree)], out, engine="serial", batch_size=1)
    before = tree_digest(tree)
    os.rename(tree / "flat" / "basic.json", tree / "flat" / "renamed.json")
    conv = sorted(p for p in (tree / "sdk").iterdir() if p.is_dir())[0]
    os.rename(conv, tree / "sdk" / "renamed-conversation")
    assert tree_digest(tree) != before
    r = build([str(tree)], out, engine="serial", batch_size=1)
    assert r.found == 7 and r.indexed == 2
    assert set(_runs(out)) == _expected(tree)
    assert {"runs/flat/renamed.json", "runs/sdk/renamed-conversation"} <= set(_runs(out))


def test_a_rewrite_keeping_size_and_mtime_changes_the_digest(tree: Path):
    # same size, mtime set back: the ctime (and, for a file replaced, the inode) still tell
    f = tree / "flat" / "basic.json"
    st = f.stat()
    before = tree_digest(tree)
    data = f.read_bytes()
    f.write_bytes(data[:-1] + (b" " if data[-1:] != b" " else b"\n"))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert tree_digest(tree) != before


def test_the_digest_covers_every_depth_and_hidden_entries(tree: Path):
    deepest = max((p for p in tree.rglob("*") if p.is_dir()), key=lambda p: len(p.parts))
    before = tree_digest(tree)
    (deepest / ".hidden").write_text("")
    assert tree_digest(tree) != before
    before = tree_digest(tree)
    (deepest / "empty").mkdir()  # an empty folder is an entry too
    assert tree_digest(tree) != before


def test_a_recently_changed_tree_is_not_trusted(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "runs"
    shutil.copytree(corpus / "openhands_v0" / "flat_exports", root)
    monkeypatch.setattr(index_mod, "RACY_SECONDS", 3600.0)  # everything here was written within the hour
    assert tree_digest(root) is None
    out = tmp_path / "idx"
    assert build([str(root)], out, engine="serial").indexed == 4
    assert json.loads((out / DISCOVERY).read_text())["roots"] == {}


def test_a_symlinked_folder_inside_is_not_trusted(tree: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "link").symlink_to(outside, target_is_directory=True)
    assert tree_digest(tree) is None
    (tree / "link").unlink()
    assert tree_digest(tree) is not None


def test_a_root_inside_a_run_is_not_remembered(tree: Path, tmp_path: Path):
    # detection looks at the folders above such a ROOT, which the digest does not cover
    conv = next(p for p in (tree / "sdk").iterdir() if p.is_dir())
    inner = conv / "events"
    out = tmp_path / "idx"
    build([str(inner)], out, engine="serial")
    assert json.loads((out / DISCOVERY).read_text())["roots"] == {}


def _counting_discovery(monkeypatch: pytest.MonkeyPatch) -> list[list]:
    """Every discovery walk's roots, recorded (discovery still runs)."""
    calls: list[list] = []
    real = discover_mod.discover

    def counted(paths, *a, **k):
        calls.append([str(p) for p in paths])
        return real(paths, *a, **k)

    monkeypatch.setattr(discover_mod, "discover", counted)
    return calls


def test_a_root_written_otherwise_is_remembered(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # relative after absolute, a trailing slash, and a path through a symlinked folder: one folder, one entry
    out = tmp_path / "idx"
    build([str(tree)], out, engine="serial", batch_size=1)
    alias = tmp_path / "alias"
    alias.mkdir()
    (alias / "runs").symlink_to(tree, target_is_directory=True)  # the same name: the same sources
    monkeypatch.chdir(tree.parent)
    with monkeypatch.context() as m:
        _no_discovery(m)
        for raw in ("runs", "./runs/", str(tree) + "/", str(alias / "runs"), "alias/runs/"):
            again = build([raw], out, engine="serial", batch_size=1)
            assert (again.found, again.skipped, again.indexed) == (7, 7, 0), raw
    doc = json.loads((out / DISCOVERY).read_text())
    assert list(doc["roots"]) == [os.path.realpath(tree)]
    # what the remembered runs are named under each spelling is what discovery names them (its own test below);
    # a change seen through one spelling is seen through the others
    f = tree / "flat" / "basic.json"
    f.write_text(f.read_text() + "\n")
    calls = _counting_discovery(monkeypatch)
    r = build(["alias/runs"], out, engine="serial", batch_size=1)
    assert (r.found, r.indexed) == (7, 1) and calls == [["alias/runs"]]
    r = build([str(tree)], out, engine="serial", batch_size=1)
    assert (r.found, r.indexed) == (7, 0) and calls == [["alias/runs"]]


def test_remembered_problems_quote_the_root_as_written(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # a problem names the ROOT as it was written: replayed under that spelling, walked again under another
    out = tmp_path / "idx"
    build([str(tree)], out, engine="serial")
    doc = json.loads((out / DISCOVERY).read_text())
    (entry,) = doc["roots"].values()
    assert entry["root"] == str(tree) and entry["problems"] == []
    entry["problems"] = [f"{tree}: cannot list: a problem kept from the last walk"]
    (out / DISCOVERY).write_text(json.dumps(doc))
    calls = _counting_discovery(monkeypatch)
    problems: list[str] = []
    build([str(tree)], out, engine="serial", on_problem=problems.append)
    assert calls == [] and problems == entry["problems"]
    monkeypatch.chdir(tree.parent)
    problems.clear()
    build(["runs"], out, engine="serial", on_problem=problems.append)
    assert calls == [["runs"]] and problems == []


def test_digest_change_keys_are_change_key(tree: Path):
    from trajkit.corpus.tasks import change_key

    paths = [str(tree)] + [os.path.join(d, n) for d, dirs, files in os.walk(tree) for n in dirs + files]
    keys: dict = {p: None for p in paths}
    assert tree_digest(tree, keys) is not None
    assert len(paths) > 20 and all(keys[p] == change_key(p) for p in paths)


def test_a_remembered_unit_is_the_unit_discovery_makes(corpus: Path, tree: Path, monkeypatch: pytest.MonkeyPatch):
    from trajkit.corpus import discover
    from trajkit.corpus.index import _unit_at, unit_of

    # a container file too: its sessions are FILE#ID runs
    aider = corpus / "aider" / "kenn-io+agentsview" / "internal" / "parser" / "testdata" / "aider" / "myrepo" / ".aider.chat.history.md"
    shutil.copy(aider, tree / ".aider.chat.history.md")
    monkeypatch.chdir(tree.parent)
    seen = 0
    for raw in (str(tree), "runs", "./runs/"):
        for ref in discover([raw], archives=True):
            u = unit_of(ref, raw)
            assert _unit_at(raw, u.rel, u.archive) == u
            seen += 1
    assert seen > 3 * 7  # the 7 runs and the container's sessions, under each spelling of the ROOT


def _frontier_folders(root: Path) -> list[str]:
    return index_mod._Walk(str(root))._frontier()  # the folders the walk shares out, in name order


def test_the_digest_does_not_depend_on_the_helper(tree: Path, monkeypatch: pytest.MonkeyPatch):
    # the tree is wide enough to be shared between this process and a forked helper
    assert len(_frontier_folders(tree)) >= 2 and index_mod._can_fork()
    paths = [str(tree)] + [os.path.join(d, n) for d, dirs, files in os.walk(tree) for n in dirs + files]
    split: dict = dict.fromkeys(paths)
    whole: dict = dict.fromkeys(paths)
    digest = tree_digest(tree, split)
    assert digest is not None and digest == tree_digest(tree, whole, split=False) and split == whole
    # where fork is missing or refused, one process walks it all, to the same digest
    can_fork = index_mod._can_fork
    monkeypatch.setattr(index_mod, "_can_fork", lambda: False)
    assert tree_digest(tree) == digest
    monkeypatch.setattr(index_mod, "_can_fork", can_fork)

    def refused():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    refused_keys: dict = dict.fromkeys(paths)
    assert tree_digest(tree, refused_keys) == digest and refused_keys == whole


def test_a_helper_that_fails_is_walked_for(tree: Path, monkeypatch: pytest.MonkeyPatch):
    # a helper that dies before sending anything: its folders are walked here
    real_fork = os.fork
    forked = []

    def dying_fork():
        pid = real_fork()
        if pid == 0:
            os._exit(3)
        forked.append(pid)
        return pid

    paths = [os.path.join(d, n) for d, dirs, files in os.walk(tree) for n in dirs + files]
    whole: dict = dict.fromkeys(paths)
    digest = tree_digest(tree, whole, split=False)
    monkeypatch.setattr(os, "fork", dying_fork)
    keys: dict = dict.fromkeys(paths)
    assert tree_digest(tree, keys) == digest and keys == whole
    assert len(forked) == 1


def test_a_symlinked_folder_in_either_half_is_not_trusted(tree: Path, tmp_path: Path):
    # the helper's half and this process's half each say so
    outside = tmp_path / "outside"
    outside.mkdir()
    folders = _frontier_folders(tree)
    assert len(folders) >= 2
    for rel in (folders[0], folders[-1]):  # this process starts from the first, the helper from the last
        link = tree / rel / "link"
        link.symlink_to(outside, target_is_directory=True)
        assert tree_digest(tree) is None and tree_digest(tree, split=False) is None
        link.unlink()
        assert tree_digest(tree) is not None


def test_the_helper_is_reaped_when_the_build_fails(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # detection fails while the helper walks: the build says so, and no helper is left behind
    import trajkit.registry as registry

    real_fork = os.fork
    forked: list[int] = []

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    def broken(*a, **k):
        raise RuntimeError("detection broke")

    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setattr(registry, "detect", broken)
    with pytest.raises(RuntimeError, match="detection broke"):
        build([str(tree)], tmp_path / "idx", engine="serial")
    assert len(forked) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)  # reaped already


def test_the_discovery_file_is_the_json_of_what_it_remembers(tree: Path, tmp_path: Path):
    # the runs of a walked ROOT are written as they are found (one buffer a ROOT): the file is byte for byte
    # what the JSON encoder writes for the document it holds, names that need escaping included
    shutil.copy(tree / "flat" / "basic.json", tree / "flat" / 'quote"back\\slash-é.json')
    _age(tree)
    other = tmp_path / "other" / "more"
    shutil.copytree(tree / "sdk", other)
    _age(other)
    out = tmp_path / "idx"
    r = build([str(tree), str(other)], out, engine="serial", batch_size=1)
    raw = (out / DISCOVERY).read_bytes()
    doc = json.loads(raw)
    assert raw == orjson.dumps(doc)
    assert list(doc) == ["format", "stamp", "roots"]
    assert [list(e) for e in doc["roots"].values()] == [["tree", "root", "units", "problems"]] * 2
    first, second = doc["roots"].values()
    assert {"runs/" + rel for rel, _a in first["units"]} == _expected(tree) and len(first["units"]) == 8
    assert {rel for rel, _a in second["units"]} == {p.name for p in other.iterdir()}
    assert all(a is False for _rel, a in first["units"] + second["units"])
    assert r.found == 8 + len(second["units"])
    # and read back, it is trusted: nothing is walked again
    again = build([str(tree), str(other)], out, engine="serial", batch_size=1)
    assert (again.found, again.indexed) == (r.found, 0)
    assert (out / DISCOVERY).read_bytes() == raw


@pytest.mark.parametrize("remembered", [False, True])
def test_two_roots_of_one_name_give_each_run_once(tree: Path, tmp_path: Path, remembered: bool,
                                                  monkeypatch: pytest.MonkeyPatch):
    # the sources of runs under two ROOTs of one name (``runs/...``) can meet: each is indexed once, the first
    # ROOT's; a ROOT given twice too. ROOTs of other names are never compared (their sources cannot meet)
    twin = tmp_path / "b" / "runs"
    shutil.copytree(tree / "flat", twin / "flat")
    (twin / "flat" / "basic.json").unlink()
    (twin / "flat" / "only-here.json").write_bytes((tree / "flat" / "basic.json").read_bytes())
    _age(twin)
    roots = [str(tree), str(twin), str(tree)]
    out = tmp_path / "idx"
    if remembered:  # each ROOT's runs from _discovery.json (the digest matches), not from a walk
        build(roots, out, engine="serial", batch_size=1)
        for d in (*index_mod.TABLES, index_mod.MANIFESTS):  # the index starts again; the discovery cache stays
            shutil.rmtree(out / d, ignore_errors=True)
        _no_discovery(monkeypatch)
    r = build(roots, out, engine="serial", batch_size=1)
    expected = _expected(tree) | {"runs/flat/only-here.json"}
    assert r.found == r.indexed == len(expected) == 8
    sources = [row["source"] for f in index_mod.live_files(out)["runs"] for row in pq.read_table(f).to_pylist()]
    assert sorted(sources) == sorted(expected)


def test_discovery_walks_in_a_process_of_its_own_and_finds_the_same(tree: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    # with the process engine the walks run in a forked process (what discovery holds is not the driver's): the
    # runs it sends, the problems and the remembered discovery are those of a walk in the driver (serial engine)
    walkers = tmp_path / "walkers.txt"
    real = discover_mod.discover

    def recorded(paths, *a, **k):
        with open(walkers, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(paths, *a, **k)

    monkeypatch.setattr(discover_mod, "discover", recorded)
    (tree / "flat" / "notes.txt").write_text("not a run")
    _age(tree)
    seen: dict[str, list[str]] = {}
    for engine, jobs in (("serial", 1), ("process", 2)):
        out = tmp_path / engine
        problems: list[str] = []
        r = build([str(tree), str(tmp_path / "missing")], out, engine=engine, jobs=jobs, batch_size=2,
                  on_problem=problems.append)
        assert r.found == r.indexed == 7
        seen[engine] = [walkers.read_text(), (out / DISCOVERY).read_bytes(), sorted(_runs(out).items()), problems]
        walkers.unlink()
    assert seen["serial"][0] == f"{os.getpid()}\n" * 2  # one walk a ROOT, here
    pids = seen["process"][0].split()
    assert len(pids) == 2 and len(set(pids)) == 1 and pids[0] != str(os.getpid())
    assert seen["serial"][1:] == seen["process"][1:]


def test_a_discovery_process_that_fails_fails_the_build(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    real_fork = os.fork
    forked: list[int] = []

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    def broken(*a, **k):
        raise RuntimeError("the walk broke")

    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setattr(discover_mod, "discover", broken)
    with pytest.raises(index_mod.IndexError_, match="RuntimeError: the walk broke"):
        build([str(tree)], tmp_path / "idx", engine="process", jobs=2)
    assert forked
    for pid in forked:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already
    assert not (tmp_path / "idx" / DISCOVERY).exists()
