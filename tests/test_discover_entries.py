"""Discovery's entry detection (``registry.EntryDetector``) names the winner detection names.

Discovery asks of each entry it walks past which format wins it, as
``detect(entry, probe=probe, ancestors=0, winner_only=True)`` would say, but
through :class:`~trajkit.registry.EntryDetector`: the format list taken once,
a file's fingerprints found from a table per name suffix, a folder's one-part
globs answered from its names grouped by suffix, nothing recorded of the sniffs
that say no. Each shortcut is checked here against the long way: the full
detection of every path of the shared corpus, the fixtures and the examples
(and of hand-made hard cases), :func:`fnmatch.fnmatchcase` on each file name
and :func:`glob.glob` in each folder.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
from pathlib import Path

import pytest

from trajkit.reading import tree
from trajkit.reading.probe import Probe
from trajkit.registry import STRONG, WEAK, EntryDetector, Format, Match, Reject, detect, formats

from conftest import CORPUS, REPO

ROOTS = [CORPUS, REPO / "tests" / "fixtures", REPO / "src" / "trajkit" / "formats" / "fixtures", REPO / "examples"]


def _folders(limit_depth: int = 6) -> dict[str, list[str]]:
    """Every folder under the roots (hidden ones too) down to ``limit_depth``, with its entries' names."""
    out: dict[str, list[str]] = {}
    for root in ROOTS:
        base = len(root.parts)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            out[dirpath] = sorted(filenames + dirnames)
            if len(Path(dirpath).parts) - base >= limit_depth:
                dirnames[:] = []
    return out


FOLDERS = _folders()


def _winner_name(got) -> tuple[str | None, str | None]:
    return (got[0].name, str(got[1].root)) if got is not None else (None, None)


def _detect_name(det) -> tuple[str | None, str | None]:
    return (det.format.name if det.format else None, str(det.match.root) if det.match else None)


def _entries_agree(folder: str, names: list[str], detector: EntryDetector) -> list[tuple]:
    """Each entry of ``folder`` as the walk asks it (one probe per folder, which has listed it) against
    the full detection (a fresh probe, every format sniffed, the ambiguity verdict made) of the same path."""
    differ = []
    probe = Probe()
    probe.listdir(folder)
    for name in names:
        cs = os.path.join(folder, name)
        if not os.path.exists(cs):
            continue  # the walk asks only entries that are there (a dangling symlink is nothing)
        full = detect(Path(cs), ancestors=0)
        fast = detector.winner(probe, cs, name, probe.is_dir(cs))
        probe.drop_heads()
        if _winner_name(fast) != _detect_name(full):
            differ.append((cs, _detect_name(full), _winner_name(fast)))
        elif fast is not None:
            m, want = fast[1], full.match  # the same match (its hint may hold the probe it was made with)
            assert (m.root, m.fingerprint, m.strength, m.reason) == (want.root, want.fingerprint, want.strength, want.reason)
    return differ


def test_there_is_something_to_compare():
    assert len(FOLDERS) > 200 and sum(len(v) for v in FOLDERS.values()) > 1000


def test_every_entry_of_the_corpus_wins_as_full_detection_says():
    detector = EntryDetector()
    differ = []
    found = set()
    for folder, names in FOLDERS.items():
        differ += _entries_agree(folder, names, detector)
        for name in names:
            det = detect(os.path.join(folder, name), ancestors=0, winner_only=True)
            if det.format is not None:
                found.add(det.format.name)
    assert not differ, differ[:5]
    assert len(found) >= 12  # the corpus shows most formats winning somewhere


def test_the_same_inside_shared_listings():
    # as discovery asks: every probe's listings come from one shared cache
    detector = EntryDetector()
    with tree.shared_listings():
        differ = [d for folder, names in list(FOLDERS.items())[:150] for d in _entries_agree(folder, names, detector)]
    assert not differ, differ[:5]


def _file_hits_of(detector: EntryDetector, name: str) -> list[tuple[str, str]]:
    dot = name.rfind(".")
    table = detector._file_table(name[dot:] if dot >= 0 else "")
    return [(f.name, fp) for f, fps in table for fp, test in fps if test is None or test(name)]


NAMES = {n for names in FOLDERS.values() for n in names} | {
    "rollout-2025.jsonl", "rollout-x.jsonl.zst", "session-1.json", "opencode.db-wal", "gpt-4o-1718000000.5-ab12.json",
    "proxy_trace_1.jsonl", "x.traj.json", ".aider.chat.history.md", "claude-code.txt", "a", ".json", "json", "x.",
    "a.b.c", "results.json", "trace.jsonl", "subagents", "0.json", "event-00001-x.json", "x.JSON", "x.jsonl.json",
}


def test_file_names_hit_the_fingerprints_fnmatch_says():
    detector = EntryDetector()
    checked = 0
    for name in NAMES:
        want = [(f.name, fp) for f in formats() for fp in f.fingerprints if "/" not in fp and fnmatch.fnmatchcase(name, fp)]
        assert _file_hits_of(detector, name) == want, name
        checked += bool(want)
    assert checked > 400  # names that some fingerprint hits (the rest hit none, as fnmatch says)


def _fake(name: str, fingerprints: tuple[str, ...], priority: int = 10, sniff=None) -> Format:
    return Format(name=name, description="a test format", fingerprints=fingerprints, priority=priority,
                  sniff=sniff or (lambda probe, cand, fp: None), read=lambda root, options: None)


@pytest.mark.parametrize("fingerprints", [
    ("*",), ("a?",), ("x[0-9]",), ("*.json", "[ab]"), ("sub/*.json",), (), ("*son",), ("*.*",), ("a*b*c.json",),
    ("*.json.zst", "*.zst"), (".hidden.md", "*.md"), ("x.", "*."), ("*[.]json",), ("no-dot",),
])
def test_odd_fingerprints_hit_what_fnmatch_says(fingerprints):
    detector = EntryDetector([_fake("odd", fingerprints)])
    for name in sorted(NAMES) + ["a1", "ab", "x7", "b", "q.json", "sub", "x", "abc.json", "aXbYc.json", "q.json.zst",
                                 "q.zst", ".hidden.md", "x.", "y.", "son", "xjson", "no-dot", "a.json"]:
        want = [("odd", fp) for fp in fingerprints if "/" not in fp and fnmatch.fnmatchcase(name, fp)]
        assert _file_hits_of(detector, name) == want, (fingerprints, name)


def test_folder_fingerprints_hit_what_glob_says():
    detector = EntryDetector()
    checked = 0
    for folder, names in FOLDERS.items():
        for name in names:
            d = os.path.join(folder, name)
            if not os.path.isdir(d):
                continue
            probe = Probe()
            listed = probe.listdir(d)
            for f, parsed in detector._dirs:
                got = [fp for fp, _ in detector._dir_hits(probe, d, listed, parsed)] if listed else []
                want = [fp for fp in f.fingerprints if glob.glob(glob.escape(d) + os.sep + fp)]
                assert got == want, (d, f.name)
                checked += 1
    assert checked > 1000


def _sample(fmt: str, want_file: bool = True) -> Path:
    """A corpus file the full detection reads as ``fmt`` at the file itself."""
    for folder, names in FOLDERS.items():
        for name in names:
            p = Path(folder) / name
            if p.is_file() == want_file and _detect_name(detect(p, ancestors=0)) == (fmt, str(p)):
                return p
    raise AssertionError(f"no {fmt} sample in the corpus")


@pytest.fixture(scope="module")
def hard(tmp_path_factory) -> Path:
    """Entries that are hard to decide: names several formats claim holding another format's content, cut and
    binary heads, empty files, symlinks, a FIFO, and folders that look like runs of two formats."""
    t = tmp_path_factory.mktemp("hard")
    claude = _sample("claude-code").read_bytes()
    codex = _sample("codex").read_bytes()
    gemini = _sample("gemini-cli").read_bytes()
    atif = _sample("atif").read_bytes()
    files = {
        "rollout-2025-01-01.jsonl": claude,  # codex's name, Claude Code's lines
        "session-2025.jsonl": codex,  # gemini's name, codex's lines
        "session-1.json": atif,  # gemini's name, an ATIF document
        "trace.jsonl": gemini,  # rollout-trace's name, gemini's lines
        "results.json": atif,  # mini-swe-agent's name
        "base_state.json": claude,  # the SDK's name, JSON lines
        "cut.jsonl": claude[: len(claude) // 2],  # a head cut mid-line
        "long-first-line.jsonl": b'{"type": "user", "pad": "' + b"x" * 70000 + b'"}\n' + claude,  # no whole line in 64 KiB
        "binary.jsonl": bytes(range(256)) * 300,
        "binary.json": b"\x00\xff\xfe" * 1000,
        "empty.jsonl": b"",
        "00000000-0000-4000-8000-000000000000.jsonl": b"",  # empty, named like a Claude Code session
        "empty.json": b"",
        "blank.jsonl": b"\n\n  \n",
        "bom.jsonl": b"\xef\xbb\xbf" + gemini,
        "x.jsonl.zst": b"\x28\xb5\x2f\xfd" + b"\x00" * 64,
        "notes.md": b"# not aider\n",
        "no-suffix": codex,
    }
    for name, data in files.items():
        (t / name).write_bytes(data)
    (t / "to-claude.jsonl").symlink_to(t / "rollout-2025-01-01.jsonl")
    (t / "dangling.jsonl").symlink_to(t / "nowhere.jsonl")
    os.mkfifo(t / "fifo.jsonl")
    # folders that look like runs of two formats: a conversation's and a trial's, a session file beside each
    sdk = _sample("openhands-sdk", want_file=False)
    v0 = _sample("openhands-v0", want_file=False)
    two = t / "sdk-and-claude"
    shutil.copytree(sdk, two)
    (two / "0b1c0d2e-0000-4000-8000-000000000001.jsonl").write_bytes(claude)
    two = t / "v0-and-codex"
    shutil.copytree(v0, two)
    (two / "rollout-2025-02-02.jsonl").write_bytes(codex)
    two = t / "two-claude-sessions"
    two.mkdir()
    (two / "0b1c0d2e-0000-4000-8000-000000000002.jsonl").write_bytes(claude)
    (two / "0b1c0d2e-0000-4000-8000-000000000003.jsonl").write_bytes(claude)
    (t / "empty-folder").mkdir()
    (t / "to-sdk").symlink_to(sdk, target_is_directory=True)
    return t


def test_hard_entries_win_as_full_detection_says(hard):
    detector = EntryDetector()
    names = sorted(os.listdir(hard))
    differ = _entries_agree(str(hard), names, detector)
    assert not differ, differ
    for sub in names:
        if (hard / sub).is_dir() and not (hard / sub).is_symlink():
            differ += _entries_agree(str(hard / sub), sorted(os.listdir(hard / sub)), detector)
    assert not differ, differ
    # the cases are hard ones: some names lose to the content, and the two-format folders are decided
    wins = {n: _detect_name(detect(hard / n, ancestors=0))[0] for n in names}
    assert wins["rollout-2025-01-01.jsonl"] == "claude-code" and wins["binary.jsonl"] is None
    assert wins["sdk-and-claude"] is not None and wins["v0-and-codex"] is not None


def test_strength_and_priority_decide_as_detection_does(tmp_path):
    # formats that sniff everything, with set answers: priority first, then strong over weak, then the first
    f = tmp_path / "x.jsonl"
    f.write_text("{}\n")

    def answer(strength):
        if strength is None:
            return lambda probe, cand, fp: Reject("no")
        if strength == "raise":
            def boom(probe, cand, fp):
                raise RuntimeError("a broken plugin")
            return boom
        return lambda probe, cand, fp: Match(cand, fp, strength, strength)

    cases = [
        [("a", 20, WEAK), ("b", 20, STRONG)],
        [("a", 20, WEAK), ("b", 20, WEAK)],
        [("a", 20, "raise"), ("b", 10, WEAK)],
        [("a", 30, None), ("b", 20, WEAK), ("c", 20, STRONG), ("d", 20, STRONG)],
        [("a", 30, WEAK), ("b", 20, STRONG)],
        [("a", 30, "medium"), ("b", 30, WEAK)],
        [("a", 10, None)],
    ]
    from trajkit import registry

    for case in cases:
        fmts = [_fake(n, ("*.jsonl", "*"), p, answer(s)) for n, p, s in case]
        fmts.sort(key=lambda x: -x.priority)
        saved = registry._loaded
        registry._loaded = fmts
        try:
            want = _detect_name(detect(f, ancestors=0))
            probe = Probe()
            probe.listdir(tmp_path)
            got = _winner_name(EntryDetector().winner(probe, str(f), f.name, False))
        finally:
            registry._loaded = saved
        assert got == want, case


def test_the_sniff_gets_a_path_and_the_candidate_given(tmp_path):
    # the sniff face stays what plugins know: a Path; the walk's own Path is handed on as it is
    seen = []

    def sniff(probe, cand, fp):
        seen.append(cand)
        return Match(cand, fp, STRONG, "yes")

    (tmp_path / "a.zzz").write_text("x")
    detector = EntryDetector([_fake("z", ("*.zzz",), 10, sniff)])
    probe = Probe()
    probe.listdir(tmp_path)
    got = detector.winner(probe, str(tmp_path / "a.zzz"), "a.zzz", False)
    assert isinstance(seen[0], Path) and seen[0] == tmp_path / "a.zzz" and got[1].root is seen[0]
    mine = tmp_path / "a.zzz"
    assert detector.winner(probe, str(mine), "a.zzz", False, mine)[1].root is mine


def test_probe_answers_what_the_file_system_says_asked_again(odd_folder):
    tmp_path = odd_folder
    paths = [str(tmp_path / n) for n in ("f.json", "d", "to-f", "to-d", "dangling", "fifo", "missing", "d/inner",
                                         "d/missing", "f.json/under", "missing/under", "to-d/inner")]
    for listed_first in (False, True):
        probe = Probe()
        if listed_first:
            probe.listdir(tmp_path)
            probe.listdir(tmp_path / "d")
        for _ in range(3):  # answers kept from the listings are the same when asked again, in any order
            for p in paths + paths[::-1]:
                assert probe.is_file(p) == os.path.isfile(p) and not (probe.is_file(p) and p.endswith("fifo")), p
                assert probe.is_dir(Path(p)) == os.path.isdir(p), p
                assert probe.exists(p) == os.path.exists(p), p
                if probe.absent(p):
                    assert not os.path.exists(p), p


def test_heads_a_folder_detection_read_are_handed_to_its_walk(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    files = {"a.jsonl": b'{"x": 1}\n{"y": 2}\n', "b.json": b"{}", "big.jsonl": b'{"z": 3}\n' * 20000}
    for name, data in files.items():
        (d / name).write_bytes(data)
    (tmp_path / "beside.json").write_bytes(b"[]")
    above = Probe()
    for name in files:
        above.lines(d / name, 1 << 16)
    above.head(tmp_path / "beside.json", 100)
    below = Probe()
    below.take_heads(above, str(d))
    assert above.head(tmp_path / "beside.json", 100) == b"[]" and above.calls == 4  # not handed: not in d
    for name, data in files.items():
        p = str(d / name)
        got = below.lines(p, 1 << 16)
        assert got.data == data[: 1 << 16] and below.head(p, 10) == data[:10]
        assert got.parts == data[: 1 << 16].split(b"\n", 64)
    assert below.calls == 0  # nothing read again
    assert below.head(str(d / "big.jsonl"), 1 << 17) == files["big.jsonl"][: 1 << 17] and below.calls == 1  # more: read
    below.drop_heads()  # once asked, the heads go with the entry, as every head does
    assert below.head(str(d / "a.jsonl"), 5) == files["a.jsonl"][:5] and below.calls == 2
