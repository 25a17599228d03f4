"""The shortcuts the formats' ``find_sessions`` walks take, each checked
against the long way: the first bytes of a file kept on its shared listing
entry (:func:`trajkit.reading.tree.note_head` / :func:`~trajkit.reading.tree.prefixes`)
against the file read with ``open``; the evaluation walk's rule-out from those
bytes (:func:`trajkit.formats.openhands_eval.detect.ruled_out`) against the
full test on every prefix of every head of the corpus and of hand-made
cases; the one-search name tests (:func:`~trajkit.reading.tree.any_ending`,
:func:`~trajkit.reading.tree.any_starting`, the completion logs' backwards
search) against a test per name; a folder's ``(st_dev, st_ino)`` against ``os.stat``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from trajkit.formats.openhands_completions import detect as comp
from trajkit.formats.openhands_eval.detect import looks_like_output, ruled_out
from trajkit.reading import tree
from trajkit.reading.probe import Probe

from conftest import CORPUS, REPO

ROOTS = [CORPUS, REPO / "tests" / "fixtures", REPO / "src" / "trajkit" / "formats" / "fixtures", REPO / "examples"]


def _files(root: Path) -> list[str]:
    return [os.path.join(d, n) for d, _dirs, names in os.walk(root) for n in names]


def _raw_head(path: str, n: int) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


# ---------------------------------------------------------------- first bytes kept on the listing


def test_prefix_is_the_files_first_bytes(tmp_path: Path):
    r = tmp_path / "p"
    r.mkdir()
    (r / "long.jsonl").write_bytes(b'{"instance_id": "x", "history": []}' * 10)
    (r / "short.json").write_bytes(b"{}")
    (r / "empty.jsonl").write_bytes(b"")
    (r / "link.jsonl").symlink_to(r / "long.jsonl")  # a symlink's head is read, its first bytes not kept
    (r / "sub").mkdir()
    os.mkfifo(r / "fifo.jsonl")
    names = ["long.jsonl", "short.json", "empty.jsonl", "link.jsonl", "fifo.jsonl"]
    assert tree.prefixes(str(r)) == {}  # outside a discovery: nothing kept
    with tree.shared_listings():
        assert tree.prefixes(str(r)) == {}  # not listed yet
        probe = Probe()
        probe.listdir(r)
        assert tree.prefixes(str(r)) == {}  # listed, nothing read
        for n in names:
            probe.head(str(r / n), 16)
        got = tree.prefixes(str(r))
        want = {n: _raw_head(str(r / n), tree.PREFIX) for n in ("long.jsonl", "short.json", "empty.jsonl")}
        assert got == want and len(got["long.jsonl"]) == tree.PREFIX
        tree.release(str(r))
        assert tree.prefixes(str(r)) == {}  # released with the listing
    # a probe that did not list the folder keeps nothing (no listing entry to keep it on)
    with tree.shared_listings():
        Probe().head(str(r / "long.jsonl"), 16)
        tree.scandir(r)
        assert tree.prefixes(str(r)) == {}


def test_prefixes_of_the_corpus_are_its_first_bytes():
    with tree.shared_listings():
        n = 0
        for root in ROOTS:
            for d, _dirs, files in tree.walk_sorted(root):
                probe = Probe()
                probe.listdir(d)
                for f in files:
                    probe.head(os.path.join(d, f), 1 << 16)
                for name, pre in tree.prefixes(d).items():
                    assert pre == _raw_head(os.path.join(d, name), tree.PREFIX), (d, name)
                    n += 1
        assert n > 400


# ---------------------------------------------------------------- the evaluation walk's rule-out


_HARD_HEADS = [
    b"", b" ", b"\n\n", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef", b"{", b"{ ", b'{"', b'{"inst', b'{"instance_id"',
    b'{"instance_id": "a", "history": []}\n', b'\xef\xbb\xbf{"instance_id": "a", "test_result": {}}\n',
    b' \t\r\n\x0b\x0c{ \n "instance_id" : "a", "instruction": "x"}\n', b' ' * 40 + b'{"instance_id": "a", "metrics": {}}',
    b'{"instance_id": "a"}\n', b'{"instance_idx": "a", "history": []}\n', b'[{"instance_id": "a", "history": []}]',
    b'{"history": [], "instance_id": "a"}\n', b'\xef\xbb\xbf\xef\xbb\xbf{"instance_id": "a", "history": []}',
    b'{"instance_id": "a", "history"', b"\x00\x01binary", b'{"instance_id":"' + b"x" * 100 + b'", "history": []}',
    b'{\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"instance_id": "a", "history": []}',
]


def _heads() -> list[bytes]:
    heads = list(_HARD_HEADS)
    for root in ROOTS:
        heads += [_raw_head(f, 1 << 16) for f in _files(root) if f.endswith((".jsonl", ".json", ".txt"))]
    return heads


def test_ruled_out_only_what_the_full_test_rejects(tmp_path: Path):
    f = tmp_path / "h.jsonl"
    heads = _heads()
    assert len(heads) > 500
    ruled = 0
    for i, head in enumerate(heads):
        f.write_bytes(head)
        full = looks_like_output(str(f), Probe())
        for k in range(tree.PREFIX + 1):
            if ruled_out(head[:k]):
                assert not full, (i, head[:80], k)
                ruled += k == tree.PREFIX
    # and it does rule out: every corpus head that does not start with {"instance_id" after blanks is ruled out
    not_outputs = [h for h in heads if not h.lstrip(b"\xef\xbb\xbf").lstrip().startswith((b"{", b""))
                   or not h.lstrip(b"\xef\xbb\xbf").lstrip()[1:].lstrip().startswith(b'"instance_id"')]
    assert ruled >= sum(1 for h in not_outputs if h.lstrip(b"\xef\xbb\xbf").lstrip()) - 5
    assert ruled > 300


def test_eval_walk_after_other_walks_read_the_heads(tmp_path: Path):
    from trajkit.registry import get_format

    r = tmp_path / "ev"
    (r / "proj").mkdir(parents=True)
    rec = b'{"instance_id": "i1", "history": []}\n{"instance_id": "i2", "history": []}\n'
    (r / "proj" / "output.jsonl").write_bytes(rec)
    (r / "proj" / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + rec)
    (r / "proj" / "blank.jsonl").write_bytes(b" " * 64 + rec)  # its first bytes are all blank: read to know
    (r / "proj" / "a.jsonl").write_text('{"type": "user", "message": {"content": "hi"}}\n')
    (r / "proj" / "b.jsonl").write_text('{"instance_id": "x"}\n')  # starts like one, lacks the members
    (r / "proj" / "empty.jsonl").write_bytes(b"")
    fs_ = get_format("openhands-eval").find_sessions
    alone = [str(p) for p in fs_(r)]
    assert alone == [f"{r}/proj/{n}#{m}" for n in ("blank.jsonl", "bom.jsonl", "output.jsonl") for m in ("i1", "i2")]
    with tree.shared_listings():
        get_format("claude-code").find_sessions(r)  # reads every .jsonl of the project folder first
        assert len(tree.prefixes(str(r / "proj"))) == 6
        assert [str(p) for p in fs_(r)] == alone


# ---------------------------------------------------------------- one search per folder


def _names(rng: random.Random) -> list[str]:
    alphabet = "ab.-_0123456789ejsonltrx\u00e9\u0663 "
    return sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(0, 8))})


def test_any_ending_and_starting_are_per_name_tests():
    rng = random.Random(7)
    folders = [tuple(sorted(names)) for root in ROOTS for _d, _dirs, names in os.walk(root)]
    folders += [tuple(_names(rng)) for _ in range(3000)] + [(), ("",), (".jsonl",), ("x.jsonl.bak", "y")]
    tests = [".jsonl", ".traj", ".traj.json", ".db", "l", "", "a.-"]
    for names in folders:
        for t in tests:
            assert tree.any_ending(names, t) == any(n.endswith(t) for n in names), (names, t)
            assert tree.any_starting(names, t) == any(n.startswith(t) for n in names), (names, t)
            assert tree.any_ending(list(names), t) == any(n.endswith(t) for n in names)
        for t2 in (("event-", "event_"), (".", "0"), ("",), ()):
            assert tree.any_starting(names, t2) == any(n.startswith(t2) for n in names), (names, t2)


def test_completion_name_search_misses_no_log_name():
    rng = random.Random(11)
    names = [n for root in ROOTS for _d, _dirs, ns in os.walk(root) for n in ns]
    names += ["gpt-4o-1769035076.285-e64a.json", "a-1.json", "a-1-error.json", "a-1-abcd-error.json", "-1.json",
              "a-1.2.3.json", "a-1.json.bak", "m-\u0663.json", "m-1-ABCD.json", "m-12-abc.json", "a\n-1.json",
              "event-00001-0000000000000000000000000000203.json", "x-1-error-error.json", "x-.json", "x-1.-json"]
    alphabet = "am-.01e9fjsonr\u0663"
    for _ in range(20000):
        names.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) + rng.choice([".json", "", "-error.json"]))
    hits = 0
    for n in names:
        if n.endswith(".json") and comp.FILE_NAME.match(n):
            hits += 1
            assert comp._MAYBE_NAMED.search(n[::-1]) is not None, n
    assert hits > 300
    # per folder, as the walk asks it: a folder whose names hold a log name is always searched further
    for root in ROOTS:
        for d, _dirs, files in os.walk(root):
            files.sort()
            if any(n.endswith(".json") and comp.FILE_NAME.match(n) for n in files):
                assert comp._MAYBE_NAMED.search("\0".join(files)[::-1]) is not None, d


# ---------------------------------------------------------------- a folder's identity, stat'ed once


def test_identity_is_stat(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "l").symlink_to(tmp_path / "a")
    folders = [d for root in ROOTS[1:] for d, _dirs, _f in os.walk(root)][:300] + [str(tmp_path / "a"), str(tmp_path / "l")]
    for shared in (False, True):
        with tree.shared_listings() if shared else _nothing():
            for d in folders:
                st = os.stat(d)
                assert tree.identity(d) == (st.st_dev, st.st_ino)
                assert tree.identity(d) == (st.st_dev, st.st_ino)
            with pytest.raises(FileNotFoundError):
                tree.identity(str(tmp_path / "missing"))
            (tmp_path / "b").mkdir()
            tree.scandir(tmp_path)  # as the walks ask: the folder above listed, the folder stat'ed, then listed
            tree.identity(str(tmp_path / "b"))
            tree.folder(tmp_path / "b")
            (tmp_path / "b").rmdir()
            if shared:  # kept for the discovery (as its listing), until released
                assert tree.identity(str(tmp_path / "b"))
                tree.release(str(tmp_path))
            with pytest.raises(FileNotFoundError):
                tree.identity(str(tmp_path / "b"))


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
