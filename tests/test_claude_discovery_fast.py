"""Claude Code's part of discovery takes shortcuts; each is checked here against the long way.

- :func:`layout.kind_of_bytes` (the first line decoded without cutting the head into lines) against
  :func:`layout.kind_of_head` over every file of the corpus, the fixtures and hand-made heads (cut,
  binary, empty, blank, invalid first lines, transport-only files, no newline, a list line);
- :func:`layout.kind_of_listed` (one read outside the probe) against the probe's :func:`layout.file_kind`;
- the sniff inside a discovery (regular files and a folder's session names from the shared listing's
  split, companion answers shared by every probe) against a fresh probe outside one, for every path;
- ``find_sessions`` inside and outside a shared listing, over a tree of hard cases whose sessions are
  written out by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from trajkit.formats.claude_code import layout
from trajkit.formats.claude_code.finding import find_sessions
from trajkit.reading import tree
from trajkit.reading.probe import HeadLines, Probe

from conftest import CORPUS, REPO

ROOTS = [CORPUS, REPO / "tests" / "fixtures", REPO / "src" / "trajkit" / "formats" / "fixtures", REPO / "examples"]


def _files(root: Path) -> list[Path]:
    return sorted(Path(d) / n for d, _dirs, names in os.walk(root) for n in names)


def _row(**kw) -> bytes:
    return orjson.dumps(kw) + b"\n"


USER = _row(type="user", uuid="u1", sessionId="S", message={"role": "user", "content": "hi"})
SNAP = _row(type="file-history-snapshot", messageId="m1", snapshot={})
SUMMARY = _row(type="summary", leafUuid="l1", summary="s")
INIT = _row(type="system", subtype="init", claude_code_version="2.0.1", session_id="s")
SYSTEM = _row(type="system", sessionId="S", uuid="u0", content="x")

#: heads whose answer depends on more than the first line, or on how the first line is cut
HEADS = [
    b"", b"\n", b"  \n\t\n", b"\xef\xbb\xbf" + USER, b"\x00\xff" * 100, bytes(range(256)) * 10,
    USER, USER.rstrip(b"\n"), USER[: len(USER) // 2], b"  " + USER, b"\r\n" + USER, USER.replace(b"\n", b"\r\n"),
    SNAP + USER, SNAP + SUMMARY, SNAP + SUMMARY[:-1], SNAP, SNAP.rstrip(b"\n"), SNAP + SNAP + SNAP,
    SYSTEM + USER, SYSTEM + SNAP, SYSTEM, _row(type="rate_limit_event") + USER, _row(type="system") + INIT,
    b"not json\n" + USER, b"{not json\n" + USER, b"{not json\n" + SNAP, b"{not json", b'{"type": "user"\n' + USER,
    b"[1, 2]\n" + USER, b"[1, 2\n" + USER, b'"x"\n' + USER, b"{}\n" + USER, b"{}\n", _row(type=None) + USER,
    INIT, _row(type="result", total_cost_usd=0.1), _row(type="session", id="x") + USER,
    _row(type="user", message={"content": "x"}, payload={}), _row(type="user", message={"content": "x"}, session_id="s"),
    _row(type="user", message={"content": "x"}, sessionId="s", projectHash="h"), _row(type="user", message="x") + USER,
    _row(type="assistant", message={"role": "assistant"}) + USER, _row(**{"type": "summary"}) + USER,
    b'{"type": "user", "type": "session", "message": {"content": 1}}\n' + USER,  # a key twice: the decoder's last one
    b'{"t\\u0079pe": "user", "message": {"content": "x"}}\n',  # an escaped key
    SNAP * 70,  # more lines than are looked at
    (b"\n" * 70) + USER,
    b'{"type": "user", "pad": "' + b"x" * 70000 + b'"}\n' + USER,  # no whole line in 64 KiB
]


def _kinds_agree(data: bytes) -> None:
    assert layout.kind_of_bytes(data) == layout.kind_of_head(HeadLines(data)), data[:60]


@pytest.mark.parametrize("i", range(len(HEADS)))
def test_kind_of_bytes_is_kind_of_head_for_hard_heads(i):
    data = HEADS[i]
    _kinds_agree(data)
    _kinds_agree(data[: 1 << 16])
    for cut in (1, 2, 7, len(data) // 2, len(data) - 1):  # the same heads cut anywhere
        _kinds_agree(data[:cut])


def test_kind_of_bytes_is_kind_of_head_for_every_file():
    kinds = set()
    n = 0
    for root in ROOTS:
        for f in _files(root):
            if f.is_file():
                data = f.read_bytes()[: 1 << 18]
                _kinds_agree(data[: 1 << 16])
                _kinds_agree(data)
                kinds.add(layout.kind_of_head(HeadLines(data[: 1 << 16]))[0])
                n += 1
    assert n > 300 and kinds == {None, layout.TRANSCRIPT, layout.STREAM}  # every answer was met


@pytest.fixture
def hard(tmp_path: Path) -> Path:
    """A project folder of hard files: big, empty, blank, cut, binary, symlinked, special, sub-agent files."""
    t = (CORPUS / "claude_code" / "simonw+claude-code-transcripts" / "tests" / "sample_session.jsonl").read_bytes()
    p = tmp_path / "projects" / "proj"
    p.mkdir(parents=True)
    files = {
        "s1.jsonl": t,
        "big.jsonl": t + b"\n".join([USER.rstrip(b"\n")] * 1000) + b"\n",  # more than 64 KiB
        "long-first.jsonl": b'{"type": "x", "pad": "' + b"y" * 70000 + b'"}\n' + USER,  # decided past 64 KiB
        "00000000-0000-4000-8000-000000000000.jsonl": b"",  # empty, named like a session: a session
        "empty.jsonl": b"",  # empty, another name: not one
        "blank.jsonl": b"\n \n",
        "cut.jsonl": t[: len(t) // 3],
        "binary.jsonl": bytes(range(256)) * 300,
        "codex.jsonl": _row(timestamp="t", type="session_meta", payload={}),
        "snapshots.jsonl": SNAP + SUMMARY,
        "stream.jsonl": INIT + USER,
        "invalid-first.jsonl": b"{oops\n" + USER,
        "agent-a1.jsonl": t,  # a 2.0.x sub-agent file: its session's, not one
        "agent-.jsonl": t,  # not a sub-agent file's name
        "notes.json": t,
        "claude-code.txt": INIT,
    }
    for name, data in files.items():
        (p / name).write_bytes(data)
    (p / "link.jsonl").symlink_to(p / "s1.jsonl")
    (p / "dangling.jsonl").symlink_to(p / "nowhere.jsonl")
    os.mkfifo(p / "fifo.jsonl")
    (p / "dir.jsonl").mkdir()
    (p / "S").mkdir()
    (p / "S.jsonl").write_bytes(USER)
    (p / "S" / "subagents").mkdir()
    (p / "S" / "subagents" / "agent-b.jsonl").write_bytes(USER)
    (p / "S" / "subagents" / "agent-b.meta.json").write_bytes(b"{}")
    (p / "S" / "workflows").mkdir()
    (p / "S" / "workflows" / "w1.json").write_bytes(b"{}")
    (p / "two").mkdir()
    (p / "two" / "a.jsonl").write_bytes(USER)
    (p / "two" / "b.jsonl").write_bytes(USER)
    (p / "one").mkdir()
    (p / "one" / "a.jsonl").write_bytes(USER)
    (p / "one" / "x.jsonl").write_bytes(_row(type="session"))
    (p / "one" / "to-two").symlink_to(p / "two" / "a.jsonl")
    (p / "trial" / "agent").mkdir(parents=True)
    (p / "trial" / "agent" / "claude-code.txt").write_bytes(INIT)
    return p


def test_kind_of_listed_is_file_kind(hard):
    paths = [f for root in ROOTS for f in _files(root)] + sorted(hard.iterdir())
    n = 0
    for f in paths:
        if f.is_file() and not f.is_symlink():
            n += 1
            assert layout.kind_of_listed(str(f), True, Probe()) == layout.file_kind(f, Probe()), f
        if f.is_file():
            assert layout.kind_of_listed(str(f), False, Probe()) == layout.file_kind(f, Probe()), f
    assert n > 300


def test_find_sessions_in_a_discovery_is_the_long_way(hard):
    want = ["00000000-0000-4000-8000-000000000000.jsonl", "S.jsonl", "agent-.jsonl", "big.jsonl", "cut.jsonl", "invalid-first.jsonl",
            "link.jsonl", "s1.jsonl", "snapshots.jsonl", "stream.jsonl"]
    alone = [str(p) for p in find_sessions(hard.parent)]
    assert alone == [str(hard / n) for n in want]
    # the long way, file by file: a fresh probe's verdict on each regular *.jsonl not named agent-<id>.jsonl
    names = sorted(n for n in os.listdir(hard) if n.endswith(".jsonl") and not layout.AGENT_FILE.match(n)
                   and os.path.isfile(hard / n))
    assert [n for n in names if layout.file_kind(hard / n, Probe())[0] is not None] == want
    for listed_first in (False, True):
        with tree.shared_listings():
            if listed_first:
                for _ in tree.walk_sorted(hard.parent):
                    pass
            assert [str(p) for p in find_sessions(hard.parent)] == alone
            # the verdicts it kept are the ones a fresh probe gives outside
            known = tree.file_answers(str(hard), layout.FILE_KIND)
            assert sorted(known) == names
            for n, got in known.items():
                assert got == layout.file_kind(hard / n, Probe()), n
            # each regular file read keeps its first bytes on its listing entry (tree.note_head), as Probe.head
            # does, for the walks after this one (openhands-eval rules its *.jsonl out from them)
            assert tree.prefixes(str(hard)) == {n: (hard / n).read_bytes()[:tree.PREFIX] for n in names
                                                if not (hard / n).is_symlink()}


def _every_path(root: Path) -> list[Path]:
    out = [root]
    for d, dirs, names in os.walk(root):
        out += [Path(d) / n for n in sorted(dirs + names)]
    return out


@pytest.mark.parametrize("verdicts_first", [False, True])
def test_the_sniff_in_a_discovery_is_a_fresh_probe_outside(hard, verdicts_first):
    """Every path asked as discovery asks it (one probe per folder, which lists the folder first; with
    find_sessions' verdicts kept or not) answers as a fresh probe does outside a discovery."""
    roots = [hard.parent.parent, CORPUS / "claude_code", REPO / "src" / "trajkit" / "formats" / "fixtures" / "claude-code",
             CORPUS / "codex", CORPUS / "openhands_sdk"]
    paths = [p for r in roots for p in _every_path(r)]
    want = {p: layout.session_root(p, Probe()) for p in paths}
    assert {w[1] for w in want.values()} >= {
        "a JSON file outside a session's companion folder", "a project folder holding several sessions; name one (trajkit ls lists them)",
        "the companion folder of S.jsonl", "inside the companion folder of S.jsonl", "not a file or a directory",
        "an empty session file named like one", "a trial folder whose agent/claude-code.txt is a stream-json log",
        "a project folder holding one session, a.jsonl"}
    with tree.shared_listings():
        if verdicts_first:
            for r in roots:
                find_sessions(r)
        by_folder: dict[Path, list[Path]] = {}
        for p in paths:
            by_folder.setdefault(p.parent, []).append(p)
        for folder, ps in by_folder.items():
            probe = Probe()
            probe.listdir(folder)
            if folder.is_dir():  # the names of its regular files come from the shared listing
                assert layout._listed_files(str(folder), probe)[1] == {n for n in os.listdir(folder) if (folder / n).is_file()}
            for p in ps:
                assert layout.session_root(p, probe) == want[p], p
                assert layout.session_root(Path(str(p)), probe) == want[p], p  # asked again
        # and a probe that did not list the folder first
        for p in paths:
            assert layout.session_root(p, Probe()) == want[p], p


def test_companion_answers_are_shared_by_the_probes_of_a_discovery(hard, monkeypatch):
    inside = hard / "S" / "workflows"
    want = layout.companion_owner(inside, Probe())
    assert want == hard / "S.jsonl"
    worked: list[str] = []  # each time an answer is worked out rather than taken from one kept
    real = layout._companion_owner

    def counted(p, probe):
        worked.append(p)
        return real(p, probe)

    monkeypatch.setattr(layout, "_companion_owner", counted)
    with tree.shared_listings():
        for _ in tree.walk_sorted(hard):  # listed, as discovery's walks list a tree before leaving it
            pass
        first = Probe()
        assert layout.companion_owner(inside, first) == want
        assert worked == [str(inside)]
        again = Probe()
        assert layout.companion_owner(inside, again) == want and again.calls == 0  # nothing looked at again
        assert worked == [str(inside)]
        assert layout.companion_owner(hard / "one", again) is None
        tree.release(str(hard))  # the walk left the folder: its answers go with its listing
        assert tree.file_answers(str(hard), layout.COMPANION_OF) == {}
        assert tree.file_answers(str(hard / "S"), layout.COMPANION_OWNER) == {}
        later = Probe()
        assert layout.companion_owner(inside, later) == want
        assert worked[-1] == str(inside) and len(worked) == 3  # worked out again ("one" was the second)
    # outside a discovery each probe looks for itself
    probe = Probe()
    assert layout.companion_owner(inside, probe) == want and probe.calls > 0
