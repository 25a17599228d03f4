"""Discovery's shortcuts give the answers of the long way (issue 12: discovery of 10k runs).

Discovery asks detection only who wins (``detect(..., winner_only=True)``),
rules formats out of a file by the ends of their fingerprints before trying
each glob, and asks Claude Code's companion-folder question once per folder.
Each shortcut is checked here against the long way over every path of the
shared corpus and the fixtures: full detection, :func:`fnmatch.fnmatchcase`
on each fingerprint, and a fresh probe per question.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

from trajkit.formats.claude_code import layout as claude_layout
from trajkit.reading.probe import Probe
from trajkit.registry import Format, _file_table, detect, formats

from conftest import CORPUS, REPO

ROOTS = [CORPUS, REPO / "tests" / "fixtures", REPO / "src" / "trajkit" / "formats" / "fixtures", REPO / "examples"]


def _paths(limit_depth: int = 6) -> list[Path]:
    """Every file and folder under the roots (hidden ones too), down to ``limit_depth``."""
    out: list[Path] = []
    for root in ROOTS:
        base = len(root.parts)
        for dirpath, dirnames, filenames in os.walk(root):
            d = Path(dirpath)
            dirnames.sort()
            if len(d.parts) - base >= limit_depth:
                dirnames[:] = []
            out += [d / n for n in sorted(filenames)] + [d / n for n in dirnames]
    return out


PATHS = _paths()



def test_there_is_something_to_compare():
    assert len(PATHS) > 1000


def test_winner_only_names_the_winner_full_detection_names():
    # as discovery asks (the path alone, one probe per folder) and as the verbs ask (with the parents)
    differ = []
    for ancestors in (0, 2):
        for p in PATHS:
            full = detect(p, ancestors=ancestors)
            fast = detect(p, ancestors=ancestors, winner_only=True)
            a = (full.format.name if full.format else None, str(full.match.root) if full.match else None)
            b = (fast.format.name if fast.format else None, str(fast.match.root) if fast.match else None)
            if a != b:
                differ.append((str(p), ancestors, a, b))
    assert not differ, differ[:5]
    # and it is a shortcut: fewer sniffs say no than in the full detection
    p = next(x for x in PATHS if x.name.endswith(".jsonl") and detect(x, ancestors=0).format is not None)
    assert len(detect(p, ancestors=0, winner_only=True).considered) < len(detect(p, ancestors=0).considered)


def test_winner_only_makes_no_ambiguity_verdict_and_records_only_matches():
    for p in PATHS[:400]:
        fast = detect(p, ancestors=0, winner_only=True)
        assert fast.ambiguous is False
        assert all(c.outcome in ("match", "unrelated", "sniff-error") for c in fast.considered)


def _file_hits(fingerprints: tuple[str, ...], name: str) -> list[str]:
    """The fingerprints a file called ``name`` hits, as detection's table per name suffix
    (``registry._file_table``) picks them, in declared order."""
    fmt = Format("t", "", fingerprints, 1, lambda *a: None, lambda *a: None)
    dot = name.rfind(".")
    got = _file_table([fmt], name[dot:] if dot >= 0 else "")
    return [fp for _f, fps in got for fp, test in fps if test is None or test(name)]


def test_file_fingerprints_hit_what_fnmatch_says():
    names = {p.name for p in PATHS} | {
        "rollout-2025.jsonl", "rollout-x.jsonl.zst", "session-1.json", "opencode.db-wal", "gpt-4o-1718000000.5-ab12.json",
        "proxy_trace_1.jsonl", "x.traj.json", ".aider.chat.history.md", "claude-code.txt", "", "a", ".json", "json",
    }
    checked = 0
    for fmt in formats():
        fps = tuple(fmt.fingerprints)
        for name in names:
            want = [fp for fp in fps if "/" not in fp and fnmatch.fnmatchcase(name, fp)]
            assert _file_hits(fps, name) == want, (fmt.name, name)
            checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("fingerprints", [("*",), ("a?",), ("x[0-9]",), ("*.json", "[ab]"), ("sub/*.json",), ()])
def test_fingerprints_that_end_in_a_wildcard_or_hold_a_folder(fingerprints):
    for name in ("a1", "ab", "x7", "b", "q.json", "sub", "", "x"):
        want = [fp for fp in fingerprints if "/" not in fp and fnmatch.fnmatchcase(name, fp)]
        assert _file_hits(fingerprints, name) == want


def test_claude_companion_owner_is_the_same_asked_once_per_folder():
    folders = sorted({p if p.is_dir() else p.parent for p in PATHS if "claude" in str(p)})
    assert len(folders) > 20
    shared = Probe()
    owners = 0
    for d in folders:
        fresh = claude_layout.companion_owner(d, Probe())
        assert claude_layout.companion_owner(d, shared) == fresh, d
        assert claude_layout.companion_owner(str(d), shared) == fresh, d  # asked again, as a string
        owners += fresh is not None
    assert owners > 0  # the corpus holds companion folders, so the answer is not always None


def _entry_facts(e) -> tuple:
    facts = [e.name, e.path]
    for ask in ("is_dir", "is_file", "is_symlink"):
        try:
            facts.append(getattr(e, ask)())
        except OSError as x:
            facts.append(type(x).__name__)
    facts += [e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)]
    return tuple(facts)


def test_shared_listings_answer_what_os_scandir_answers(tmp_path):
    from trajkit.reading import tree

    # the corpus' folders, and one with every kind of entry: file, folder, symlinks to each, a dangling one, a FIFO
    (tmp_path / "f.json").write_text("{}")
    (tmp_path / "d").mkdir()
    (tmp_path / "to-f").symlink_to(tmp_path / "f.json")
    (tmp_path / "to-d").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    folders = [str(tmp_path)] + sorted({str(p.parent) for p in PATHS})[:300]
    with tree.shared_listings():
        for d in folders:
            with os.scandir(d) as it:
                want = sorted(_entry_facts(e) for e in it)
            got = sorted(_entry_facts(e) for e in tree.scandir(d))
            assert got == want, d
            assert tree.scandir(d) is tree.scandir(d)  # listed once, shared
            assert [os.fspath(e) for e in tree.scandir(d)] == [e.path for e in tree.scandir(d)]


def test_release_forgets_a_folder_and_every_folder_held_below_it(tmp_path):
    from trajkit.reading import tree

    for rel in ("a/b/c", "a/x", "keep"):
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / "a" / "b" / "file.json").write_text("{}")
    with tree.shared_listings():
        listed = {str(tmp_path / r): tree.scandir(tmp_path / r) for r in ("", "a", "a/b", "a/b/c", "a/x", "keep")}
        tree.release(tmp_path / "a")
        cache = tree._listings.get()
        assert set(cache) == {str(tmp_path), str(tmp_path / "keep")}
        again = tree.scandir(tmp_path / "a")  # asked again: listed again, the same names
        assert again is not listed[str(tmp_path / "a")]
        assert sorted(e.name for e in again) == sorted(os.listdir(tmp_path / "a"))
    tree.release(tmp_path)  # outside the block: nothing to forget, no error


def test_head_lines_decode_each_line_as_orjson_does_and_once():
    import orjson

    from trajkit.reading import probe as probe_mod

    files = [p for p in PATHS if p.is_file() and p.name.endswith((".jsonl", ".json", ".txt"))]
    assert len(files) > 200
    for f in files:
        data = f.read_bytes()[: 1 << 16]
        pr = Probe()
        got = pr.lines(f, 1 << 16)
        assert pr.lines(str(f), 1 << 16) is got  # one per head and probe, whichever sniff asks
        lines = data.split(b"\n")
        assert got.complete == (len(lines) <= probe_mod.HEAD_LINES)
        assert got.parts[: probe_mod.HEAD_LINES] == lines[: probe_mod.HEAD_LINES]
        for i in range(min(len(lines), probe_mod.HEAD_LINES)):
            s = lines[i].strip()
            try:
                want = orjson.loads(s) if s[:1] == b"{" else probe_mod.NOT_DECODED
            except orjson.JSONDecodeError:
                want = probe_mod.NOT_DECODED
            assert got.value(i) == want if want is not probe_mod.NOT_DECODED else got.value(i) is want, (f, i)
        pr.drop_heads()
        assert pr.lines(f, 1 << 16) is not got  # dropped with the heads


def test_head_lines_are_decoded_once_for_every_sniff(monkeypatch, tmp_path):
    from trajkit.reading import probe as probe_mod

    f = tmp_path / "x.jsonl"
    f.write_bytes(b"".join(b'{"type": "other%d", "id": "%d", "content": "c"}\n' % (i, i) for i in range(50)))
    calls = []
    real = probe_mod._loads
    monkeypatch.setattr(probe_mod, "_loads", lambda b: calls.append(b) or real(b))
    det = detect(f, ancestors=0)  # codex, gemini, claude-code, asf, ... all look at these lines
    sniffed = {c.format for c in det.considered}
    assert {"codex", "gemini-cli", "claude-code"} <= sniffed
    assert len(calls) == len(set(calls)) and calls  # no line decoded twice


def test_gemini_reads_a_line_as_orjson_would_not_its_stripped_form(tmp_path):
    # \x0c is stripped by bytes.strip() but is no JSON whitespace: the raw line does not decode, so no match
    from trajkit.formats.gemini_cli.detect import sniff as gemini_sniff

    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"sessionId": "a", "projectHash": "b"}\x0c\n{"x": 1}\n')
    assert type(gemini_sniff(Probe(), f, "*.jsonl")).__name__ == "Reject"
    g = tmp_path / "t.jsonl"
    g.write_bytes(b'{"sessionId": "a", "projectHash": "b"}\r\n{"x": 1}\n')  # \r is JSON whitespace
    assert type(gemini_sniff(Probe(), g, "*.jsonl")).__name__ == "Match"
