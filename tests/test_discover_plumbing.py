"""The walk's own plumbing gives the answers of the long way (issue 12: discovery of 10k runs).

Discovery's walk answers its questions from strings and listings it already
holds: a folder's names joined once and searched in C for each glob
(``registry._joined_test``), the probe told each entry of the folder it lists
and the string form of the candidate it hands the sniffs, listings another
walk of the discovery made, the found runs ordered by a string key instead of
``Path.parts``, and the archive module loaded only when archives are asked
for. Each shortcut is checked here against what the standard library says:
:func:`fnmatch.fnmatchcase`, :func:`glob.glob`, ``os.path``, sorting by
``Path.parts`` and ``sys.modules`` in a fresh process.
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trajkit.corpus import discover
from trajkit.corpus.discover import RunRef, _abspath, _order
from trajkit.reading import tree
from trajkit.reading.probe import Probe
from trajkit.registry import EntryDetector, Format, _joined_names, _joined_test, formats, split_member

from conftest import CORPUS

#: Names a folder can hold, chosen to sit on the edges of the globs below: hidden ones, a name that is
#: a glob's literal end alone, names one character short or long, names holding glob characters, a newline
NAMES = [
    "a", "ab", "abc.json", "aXbYc.json", "a1", "x7", "b", "q.json", "q.json.zst", "q.zst", "x.", "y.", "son", "xjson",
    "json", ".json", ".hidden.md", ".aider.chat.history.md", "notes.md", "0.json", "12.json", "-0.json", "a-0.json",
    "a-b.json", "event-.json", "event-1.json", "event_0001.json", "event-", "events", "rollout-2025.jsonl",
    "rollout-.jsonl", "rollout-x.jsonl.zst", "session-1.json", "session-.jsonl", "opencode.db", "opencode.db-wal",
    "x.db", "proxy_trace.jsonl", "proxy_trace_1.json", "x.traj", "x.traj.json", "traj.json", "gpt-4o-1718-ab.json",
    "[0-9].json", "a*b", "a?c", "é.json", "line\nbreak.json", "x.JSON", "x.jsonl.json", "trace.jsonl", "a&&b",
]

#: Glob parts beside the registered fingerprints' first parts: every wildcard, sets, sets fnmatch reads
#: its own way (negated, a leading ``]``, an empty range, unclosed), and characters a regex would read
ODD_PARTS = [
    "*", "**", "a?", "?", "x[0-9]", "[ab]", "*[.]json", "[!a]*", "[]]", "[]a]*", "[z-a]x", "a[", "*.*", "a*b*c.json",
    "*son", "x.", "*.", "*-[0-9]*.json", "[0-9]*-[0-9]*.json", "ev?nt-*.json", "[a-c--]*", "a&&b", "[&&]*", "*.json",
    "*.jsonl", "json*", "*json*", "a*", "*b", "[^a]*", "[a-]*", "[-a]*", "*.j?on", "(x)*", "a.b*", "$*", "*\\*",
]


def _parts() -> list[str]:
    return sorted({fp.split("/")[0] for f in formats() for fp in f.fingerprints} | set(ODD_PARTS))


@pytest.mark.parametrize("names", [NAMES, NAMES[:3], [".only-hidden"], ["one.json"], [n for n in NAMES if "json" in n]])
def test_joined_names_hit_what_fnmatch_says(names):
    probe = Probe()
    joined = _joined_names(probe, "/some/folder", names)
    translated = 0
    for part in _parts():
        if not any(c in part for c in "*?["):
            continue  # a literal part is asked of the listing by name
        test = _joined_test(part)
        if test is None:
            continue  # left to a test of each name
        translated += 1
        want = any(n[0] != "." and fnmatch.fnmatchcase(n, part) for n in names)
        assert test(joined) == want, (part, names)
    assert translated > 40


def test_only_unusual_sets_are_left_to_each_name():
    left = sorted(p for p in _parts() if any(c in p for c in "*?[") and _joined_test(p) is None)
    assert left == sorted(["[!a]*", "[]]", "[]a]*", "[z-a]x", "a[", "[a-c--]*", "[&&]*", "[^a]*"])


def _fake(name: str, fingerprints: tuple[str, ...]) -> Format:
    return Format(name=name, description="a test format", fingerprints=fingerprints, priority=10,
                  sniff=lambda probe, cand, fp: None, read=lambda root, options: None)


def test_folder_fingerprints_hit_what_glob_says(tmp_path: Path):
    # the folder's own names, a sub-folder that matches a first part and one that only looks like it (a file)
    d = tmp_path / "d"
    d.mkdir()
    for n in NAMES:
        (d / n).write_text("x")
    for sub, inner in (("ep1", "r.txt"), ("ep2", "other"), ("sessions", "s.json"), (".hid", "r.txt")):
        (d / sub).mkdir()
        (d / sub / inner).write_text("x")
    (d / "ep3").write_text("a file, not a folder")
    fps = tuple(fp for fp in ODD_PARTS if not fp.startswith("[!") and "]" not in fp[:2]) + (
        "ep*/r.txt", "ep?/other", "e*/r.txt", "*/r.txt", "sessions/*.json", "sess*/*.json", "ep3/*", "nothing*/x")
    detector = EntryDetector([_fake("odd", fps)])
    probe = Probe()
    listed = probe.listdir(d)
    (_f, parsed), = detector._dirs
    got = [fp for fp, _ in detector._dir_hits(probe, str(d), listed, parsed)]
    want = [fp for fp in fps if glob.glob(glob.escape(str(d)) + os.sep + fp)]
    assert got == want
    assert "ep*/r.txt" in got and "nothing*/x" not in got and "ep3/*" not in got


def test_corpus_folders_hit_what_glob_says_for_every_format():
    detector = EntryDetector()
    checked = 0
    for dirpath, dirnames, _files in os.walk(CORPUS):
        dirnames.sort()
        probe = Probe()
        listed = probe.listdir(dirpath)
        if not listed:
            continue
        for f, parsed in detector._dirs:
            got = [fp for fp, _ in detector._dir_hits(probe, dirpath, listed, parsed)]
            assert got == [fp for fp in f.fingerprints if glob.glob(glob.escape(dirpath) + os.sep + fp)], (dirpath, f.name)
            checked += 1
    assert checked > 1000



def _questions(base: Path) -> list[str]:
    return [str(base / n) for n in ("f.json", "d", "to-f", "to-d", "dangling", "fifo", "missing", "d/inner",
                                    "d/missing", "f.json/under", "missing/under", "to-d/inner")]


def _answers_are_the_file_systems(probe: Probe, paths: list[str]) -> None:
    for p in paths + paths[::-1]:
        assert probe.is_file(p) == os.path.isfile(p), p
        assert probe.is_dir(Path(p)) == os.path.isdir(p), p
        assert probe.exists(p) == os.path.exists(p), p
        if probe.absent(p):
            assert not os.path.exists(p), p


def test_a_listed_folders_entries_are_known_by_path(odd_folder: Path):
    probe = Probe()
    names = probe.list_folder(str(odd_folder))
    assert sorted(names) == sorted(os.listdir(odd_folder))
    calls = probe.calls
    for n in ("f.json", "d", "fifo"):  # listed, no symlink: answered without a system call
        probe.is_file(str(odd_folder / n))
        probe.is_dir(str(odd_folder / n))
    assert probe.calls == calls
    _answers_are_the_file_systems(probe, _questions(odd_folder))


def test_a_probe_answers_from_a_listing_another_walk_made(odd_folder: Path):
    with tree.shared_listings():
        tree.scandir(str(odd_folder))  # a walk of this discovery listed the folder
        probe = Probe()  # never listed it itself
        for n in ("f.json", "d", "fifo", "missing"):
            probe.is_file(str(odd_folder / n))
        assert probe.calls == 0  # every answer came from the held listing
        assert probe.head(str(odd_folder / "f.json"), 100) == b"{}"
        assert probe.head(str(odd_folder / "fifo"), 100) == b""  # not a regular file: not opened, no wait
        _answers_are_the_file_systems(probe, _questions(odd_folder))
        tree.release(str(odd_folder))
        later = Probe()  # a released listing is not held: the probe asks the file system
        assert later.is_file(str(odd_folder / "f.json")) and later.calls == 1
    outside = Probe()  # outside a discovery nothing is held
    assert outside.is_file(str(odd_folder / "f.json")) and outside.calls == 1


def test_a_named_path_is_asked_as_its_string(odd_folder: Path):
    probe = Probe()
    probe.listdir(odd_folder)
    for n in ("f.json", "d", "to-d", "dangling", "missing"):
        p = odd_folder / n
        probe.name(p, str(p))
        assert probe.is_file(p) == os.path.isfile(p) and probe.is_dir(p) == os.path.isdir(p), n
        assert probe.exists(p) == os.path.exists(p) and probe.stat(p) == probe.stat(str(p)), n
        assert probe.fspath(p) == str(p) and probe.fspath(str(p)) == str(p)
        other = Path(str(p))  # an equal Path that was not named: asked through os.fspath, same answers
        assert probe.is_file(other) == probe.is_file(p) and probe.exists(other) == probe.exists(p), n
    assert probe.head(odd_folder / "f.json", 10) == b"{}"


#: Path parts the orders below compare: characters sorting before and after the separator, dots, a "#"
_PARTS = ["a", "b", "a-b", "a.b", "a b", "a!", "-x", ".h", "a#1", "a#2", "Z", "é", "0", "a0", "ab", "a/b"]


def _paths(seed: int) -> list[str]:
    import random

    rnd = random.Random(seed)
    out = []
    for _ in range(300):
        parts = [rnd.choice(_PARTS) for _ in range(rnd.randint(1, 4))]
        s = "/".join(parts)
        out.append(s if rnd.random() < 0.3 else "/" + s if rnd.random() < 0.9 else "/base/" + s)
    return [str(Path(s)) for s in out]


@pytest.mark.parametrize("seed", range(6))
def test_runs_are_ordered_as_their_path_parts(seed: int):
    paths = _paths(seed)
    refs = [(s, RunRef(Path(s))) for s in paths]
    want = sorted(refs, key=lambda t: (Path(split_member(t[1].path)[0]) if "#" in t[1].path.name else t[1].path).parts)
    assert [str(r.path) for r in _order(list(refs))] == [str(r.path) for _, r in want]


def test_runs_under_the_double_slash_root_keep_paths_order():
    paths = [str(Path(s)) for s in ("//a/b", "/a/b", "//a", "/a-b", "a", "//a/a#1")]
    refs = [(s, RunRef(Path(s))) for s in paths]
    want = sorted(refs, key=lambda t: t[1].path.parts)
    assert [str(r.path) for r in _order(list(refs))] == [str(r.path) for _, r in want]


def test_a_containers_sessions_keep_their_order_beside_it(tmp_path: Path):
    (tmp_path / "out.jsonl").write_text("")
    (tmp_path / "out.jsonl-b").write_text("")
    names = ["out.jsonl#z", "out.jsonl#a", "out.jsonl-b", "out.jsonl#m", "a", "out.jsonl0"]
    refs = [(str(tmp_path / n), RunRef(tmp_path / n)) for n in names]
    got = [r.path.name for r in _order(list(refs))]
    assert got == ["a", "out.jsonl#z", "out.jsonl#a", "out.jsonl#m", "out.jsonl-b", "out.jsonl0"]


@pytest.mark.parametrize("s", ["/a/b", "/a//b", "/a/./b", "/a/../b", "/a/b/", "/", "//a", "///a", "/.hidden/x", "/a/.",
                               "/a/..", "rel/x", ".", "/a/b#c", "/a/b..c", "/a/.b", "/a/b./c", "/é/ü"])
def test_abspath_is_os_abspath(s: str):
    assert _abspath(s) == os.path.abspath(s)


_IMPORTS = r"""
import json, sys
from trajkit.corpus import discover
found = discover([sys.argv[1]], archives=sys.argv[2] == "yes")
print(json.dumps({"found": len(found), "modules": [m for m in ("trajkit.corpus.archive", "tarfile", "zipfile")
                                                   if m in sys.modules]}))
"""


def test_the_archive_module_loads_only_when_archives_are_asked_for():
    root = str(CORPUS / "openhands_v0")
    got = {}
    for archives in ("no", "yes"):
        p = subprocess.run([sys.executable, "-c", _IMPORTS, root, archives], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        got[archives] = json.loads(p.stdout)
    assert got["no"]["found"] == got["yes"]["found"] == len(discover([root])) > 0
    assert got["no"]["modules"] == []
    assert "trajkit.corpus.archive" in got["yes"]["modules"]
