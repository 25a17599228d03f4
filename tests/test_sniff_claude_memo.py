"""Claude Code's sniff keeps each folder's companion answer in the probe and
shares it between the paths below it: whatever order paths are asked in, with
one probe or a fresh one each, a path maps to the session whose companion
folder holds it only within reach (five levels up), as the layout says."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson

from trajkit.formats.claude_code import layout
from trajkit.reading.probe import Probe

ROW = orjson.dumps({"type": "user", "uuid": "u1", "sessionId": "S", "message": {"role": "user", "content": "hi"}}) + b"\n"


def _tree(tmp: Path) -> tuple[Path, dict[Path, Path | None]]:
    proj = tmp / "proj"
    (proj / "S" / "subagents").mkdir(parents=True)
    (proj / "S.jsonl").write_bytes(ROW)
    (proj / "S" / "subagents" / "agent-a.jsonl").write_bytes(ROW)
    deep = proj / "S" / "workflows"
    expected: dict[Path, Path | None] = {proj / "S" / "subagents" / "agent-a.jsonl": proj / "S.jsonl"}
    # workflows/w1/.../x.jsonl at growing depth: the owner is found while S is at most 5 folders up
    for level in range(1, 7):
        deep = deep / f"w{level}"
        deep.mkdir(parents=True)
        f = deep / "x.jsonl"
        f.write_bytes(ROW)
        up = len(f.relative_to(proj / "S").parts) - 1  # folders between the file and S
        expected[f] = proj / "S.jsonl" if up <= 5 else None
    # a standalone session beside it, and one in another project
    (proj / "T.jsonl").write_bytes(ROW)
    expected[proj / "T.jsonl"] = proj / "T.jsonl"
    return proj, expected


def _owner(p: Path, probe: Probe) -> Path | None:
    root, _why = layout.session_root(p, probe)
    return root


def test_companion_answers_do_not_depend_on_the_order_or_the_probe(tmp_path):
    proj, expected = _tree(tmp_path)
    paths = list(expected)
    for p in paths:
        got = _owner(p, Probe())
        want = expected[p]
        if want is None:  # out of the companion folder's reach: the file is a session of its own
            want = p
        assert got == want, p
    fresh = {p: layout.session_root(p, Probe()) for p in paths}
    for order in (paths, paths[::-1], list(itertools.chain(paths[1::2], paths[::2]))):
        probe = Probe()
        for p in order:
            assert layout.session_root(p, probe) == fresh[p], p
        # asked again with the same probe: the same answer
        assert [layout.session_root(p, probe) for p in order] == [fresh[p] for p in order]


def test_folder_answers_are_kept_per_probe(tmp_path):
    proj, _expected = _tree(tmp_path)
    probe = Probe()
    first = layout.session_root(proj, probe)
    calls = probe.calls
    assert layout.session_root(proj, probe) == first  # a folder hit by several fingerprints is looked at once
    assert probe.calls == calls
    assert first == (None, "a project folder holding several sessions; name one (trajkit ls lists them)")
    (proj / "T.jsonl").unlink()
    assert layout.session_root(proj, Probe()) == (proj / "S.jsonl", "a project folder holding one session, S.jsonl")
    assert layout.session_root(proj / "S", Probe()) == (proj / "S.jsonl", "the companion folder of S.jsonl")
    assert layout.session_root(proj / "S" / "subagents", Probe()) == (proj / "S.jsonl", "inside the companion folder of S.jsonl")


def test_a_file_is_decided_once_per_discovery(tmp_path, monkeypatch):
    """Inside shared listings (one discovery) every probe gets the first one's verdict on a file
    without reading its head; outside, each probe reads it; a released folder is read again."""
    from trajkit.reading import fs, io, tree

    proj, _expected = _tree(tmp_path)
    f = proj / "T.jsonl"
    reads: list[str] = []
    real = io.head
    monkeypatch.setattr("trajkit.reading.probe._head", lambda p, n, *regular: reads.append(p) or real(p, n, *regular))
    want = layout.file_kind(f, Probe())
    assert want == ("transcript", "a 'user' line with a message object holding content")
    assert len(reads) == 1
    assert layout.file_kind(f, Probe()) == want and len(reads) == 2  # outside: every probe reads
    with tree.shared_listings():
        assert [layout.file_kind(f, Probe()) for _ in range(3)] == [want] * 3
        assert len(reads) == 3  # once
        tree.release(str(proj))
        assert layout.file_kind(f, Probe()) == want and len(reads) == 4  # forgotten with the folder
        f.write_bytes(b'{"type": "other"}\n')  # within one discovery the tree is taken as it was
        assert layout.file_kind(f, Probe()) == want and len(reads) == 4
        with fs.mounted(fs.MemoryTree(str(tmp_path / "m.zip"), [("x.jsonl", ROW, 0.0)])):
            m = str(tmp_path / "m.zip" / "x.jsonl")
            assert layout.file_kind(m, Probe()) == want
            assert layout.file_kind(m, Probe()) == want
            assert reads[-2:] == [m, m]  # a mounted archive's files are never kept
    assert layout.file_kind(f, Probe()) == (None, "a line of type 'other'")
