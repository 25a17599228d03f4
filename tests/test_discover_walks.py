"""The formats' ``find_sessions`` walks read each folder from the shared split
listing (:func:`trajkit.reading.tree.folder`, :func:`~trajkit.reading.tree.walk_sorted`)
and discovery resolves a listed session's real path from those listings
(:func:`~trajkit.reading.tree.realpath`). Each shortcut is checked here
against the long way: ``os.walk`` / ``os.stat`` / ``os.path.realpath`` over
every folder of the shared corpus and the fixtures, the probe-based checks the
walks stand in for, and hand-built trees holding the hard cases (symlinked
folders and files, dangling links, FIFOs, a folder named like a file, hidden
folders, the depth limits, a symlink loop), whose expected runs are written
out by hand. Each walk is asked inside and outside a shared listing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from trajkit.formats.openhands_sdk import layout as sdk_layout
from trajkit.reading import tree
from trajkit.registry import get_format

from conftest import CORPUS, REPO

ROOTS = [CORPUS, REPO / "tests" / "fixtures", REPO / "src" / "trajkit" / "formats" / "fixtures", REPO / "examples"]


def _folders(root: Path) -> list[str]:
    return [dirpath for dirpath, _d, _f in os.walk(root)]


def _facts(d: str) -> tuple[list[str], list[str], frozenset[str], frozenset[str]]:
    """A folder's split, the long way: a stat per name."""
    names = os.listdir(d)
    dirs = sorted(n for n in names if os.path.isdir(os.path.join(d, n)))
    nondirs = sorted(n for n in names if not os.path.isdir(os.path.join(d, n)))
    odd = frozenset(n for n in nondirs if not os.path.isfile(os.path.join(d, n)))
    links = frozenset(n for n in names if os.path.islink(os.path.join(d, n)))
    return dirs, nondirs, odd, links


@pytest.fixture
def hard(tmp_path: Path) -> Path:
    """A tree of the cases a listing can get wrong."""
    r = tmp_path / "hard"
    (r / "a" / "b" / "c").mkdir(parents=True)
    (r / "a" / "f.txt").write_text("x")
    (r / "a" / "dir.jsonl").mkdir()
    (r / ".hidden" / "in").mkdir(parents=True)
    (r / "a" / "to_b").symlink_to(r / "a" / "b")  # a symlinked folder
    (r / "a" / "to_f").symlink_to(r / "a" / "f.txt")  # a symlinked file
    (r / "a" / "dangling").symlink_to(r / "nowhere")
    (r / "a" / "b" / "loop").symlink_to(r / "a")  # a loop
    os.mkfifo(r / "a" / "fifo.jsonl")
    (r / "b-link").symlink_to(r / "a")
    return r


def test_folder_is_the_listing_split_by_stat(hard: Path):
    folders = [f for root in ROOTS for f in _folders(root)] + _folders(hard)
    assert len(folders) > 300
    for shared in (False, True):
        if shared:
            with tree.shared_listings():
                got = [tree.folder(d) for d in folders]
                (hard / "a" / "later").mkdir()  # made once: a name added afterwards is not seen inside the block
                assert tree.folder(hard / "a") == got[folders.index(str(hard / "a"))]
                (hard / "a" / "later").rmdir()
        else:
            got = [tree.folder(d) for d in folders]
        for d, g in zip(folders, got):
            assert (list(g[0]), list(g[1]), g[2], g[3]) == _facts(d), d
    a = tree.folder(hard / "a")
    assert a[0] == ("b", "dir.jsonl", "to_b") and a[3] == {"to_b", "to_f", "dangling"} and a[2] == {"dangling", "fifo.jsonl"}


def test_folder_raises_what_scandir_raises(tmp_path: Path):
    for shared in (False, True):
        with tree.shared_listings() if shared else _nothing():
            with pytest.raises(FileNotFoundError):
                tree.folder(tmp_path / "missing")
            (tmp_path / "file").write_text("")
            with pytest.raises(NotADirectoryError):
                tree.folder(tmp_path / "file")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def _os_walk_sorted(top: str, prune=lambda dirpath, dirnames: dirnames) -> list[tuple[str, list[str], list[str]]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        dirnames[:] = prune(dirpath, dirnames)
        out.append((dirpath, list(dirnames), sorted(filenames)))
    return out


def _walk_sorted(top: str, prune=lambda dirpath, dirnames: dirnames) -> list[tuple[str, list[str], list[str]]]:
    out = []
    for dirpath, dirnames, filenames in tree.walk_sorted(top):
        dirnames[:] = prune(dirpath, dirnames)
        out.append((dirpath, list(dirnames), list(filenames)))
    return out


@pytest.mark.parametrize("shared", [False, True])
def test_walk_sorted_is_os_walk_with_sorted_names(hard: Path, shared: bool):
    no_hidden = lambda dirpath, dirnames: [d for d in dirnames if not d.startswith(".")]  # noqa: E731
    two_down = lambda dirpath, dirnames: [] if dirpath.count(os.sep) - str(CORPUS).count(os.sep) >= 2 else dirnames  # noqa: E731
    with tree.shared_listings() if shared else _nothing():
        for top, prune in [(str(hard), no_hidden), (str(hard), lambda p, d: d), (str(CORPUS), two_down),
                           (str(REPO / "tests" / "fixtures"), no_hidden), (str(hard) + os.sep, no_hidden)]:
            assert _walk_sorted(top, prune) == _os_walk_sorted(top, prune)
        errors: list[OSError] = []
        assert list(tree.walk_sorted(hard / "missing", onerror=errors.append)) == []
        assert [type(e) for e in errors] == [FileNotFoundError]


def test_realpath_is_os_realpath(hard: Path):
    (hard / "a" / "b" / "c" / "output.jsonl").write_text("{}\n")
    paths = []
    for dirpath, dirnames, filenames in os.walk(hard):
        paths += [os.path.join(dirpath, n) for n in dirnames + filenames]
    paths += [str(hard), str(hard / "a" / "b" / "c" / "output.jsonl#member"), str(hard / "a" / "to_b" / "c"),
              str(hard / "b-link" / "b" / "c" / "output.jsonl#m"), str(hard / "a" / "missing"), str(hard / "a" / "missing" / "x"),
              str(hard / "a" / "f.txt" / "under-a-file"), str(hard / "b-link" / "to_f"), str(hard / "a" / "dangling"),
              str(hard / "a" / "b" / "loop" / "b" / "loop")]
    with tree.shared_listings():
        for _ in tree.walk_sorted(hard):  # the walks list the tree first, as find_sessions do in discovery
            pass
        for _ in tree.walk_sorted(hard / "b-link"):
            pass
        assert [tree.realpath(p) for p in paths] == [os.path.realpath(p) for p in paths]
        for root in ROOTS:
            for _ in tree.walk_sorted(root):
                pass
            corpus_paths = [os.path.join(d, n) for d, dn, fn in os.walk(root) for n in dn + fn]
            assert [tree.realpath(p) for p in corpus_paths] == [os.path.realpath(p) for p in corpus_paths]
    assert tree.realpath(paths[-1]) == os.path.realpath(paths[-1])  # outside a shared listing: os.path.realpath's


def test_released_folders_forget_their_split_and_real_path(tmp_path: Path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    with tree.shared_listings():
        for _ in tree.walk_sorted(tmp_path):
            pass
        first = tree.folder(tmp_path / "a")
        assert tree.realpath(str(tmp_path / "a" / "b" / "x")) == os.path.realpath(tmp_path / "a" / "b" / "x")
        tree.release(tmp_path / "a")
        (tmp_path / "a" / "new").mkdir()
        again = tree.folder(tmp_path / "a")
        assert first[0] == ("b",) and again[0] == ("b", "new")


# ---------------------------------------------------------------- the SDK's per-folder question


def test_sdk_walk_question_is_the_probe_question(tmp_path: Path):
    r = tmp_path / "sdk"
    (r / "conv" / "events").mkdir(parents=True)
    (r / "conv" / "base_state.json").write_text("{}")
    (r / "dirstate" / "base_state.json").mkdir(parents=True)  # named so, but a folder
    (r / "evfile").mkdir()
    (r / "evfile" / "events").write_text("")  # events/ a file
    (r / "evonly" / "events").mkdir(parents=True)
    (r / "evonly" / "events" / "event-00000-abcdef12.json").write_text("{}")
    (r / "evempty" / "events").mkdir(parents=True)
    (r / "bare").mkdir()
    (r / "bare" / "event-00000-abcdef12.json").write_text("{}")
    (r / "cloud").mkdir()
    (r / "cloud" / "event_000000_abcdef12.json").write_text("{}")
    (r / "badname").mkdir()
    (r / "badname" / "event-1-x.json").write_text("{}")
    (r / "meta").mkdir()
    (r / "meta" / "meta.json").write_text('{"conversation_id": "x"}')
    (r / "othermeta").mkdir()
    (r / "othermeta" / "meta.json").write_text('{"name": "x"}')
    (r / "statelink").mkdir()
    (r / "statelink" / "base_state.json").symlink_to(r / "conv" / "base_state.json")
    (r / "statedangling").mkdir()
    (r / "statedangling" / "base_state.json").symlink_to(r / "nowhere")
    (r / "empty").mkdir()
    (r / "bare-with-state-dir" / "base_state.json").mkdir(parents=True)
    (r / "bare-with-state-dir" / "event-00000-abcdef12.json").write_text("{}")
    folders = _folders(r) + [f for root in ROOTS for f in _folders(root)]
    with tree.shared_listings():
        fast = [sdk_layout._holds_conversation(d, tree.folder(d)) for d in folders]
    slow = [sdk_layout.is_conversation_dir(d) or sdk_layout.is_bare_event_dir(d) for d in folders]
    assert fast == slow
    assert sum(fast) > 10
    mine = {os.path.basename(d): f for d, f in zip(folders, fast) if os.path.dirname(d) == str(r)}
    assert mine == {"conv": True, "dirstate": False, "evfile": False, "evonly": True, "evempty": False, "bare": True,
                    "cloud": True, "badname": False, "meta": True, "othermeta": False, "statelink": True,
                    "statedangling": False, "empty": False, "bare-with-state-dir": False}


# ---------------------------------------------------------------- each walk over hand-built trees


def _both(fmt: str, root: Path, diagnostics: list | None = None) -> list[str]:
    """The format's find_sessions outside a shared listing and inside one (discovery's case): the same list."""
    fs_ = get_format(fmt).find_sessions
    alone = [str(p) for p in fs_(root, diagnostics)]
    with tree.shared_listings():
        for _ in tree.walk_sorted(root):  # listed first, as by the walks before this one
            pass
        shared = [str(p) for p in fs_(root)]
    assert alone == shared
    with tree.shared_listings():  # and with every file's head read by an earlier walk (its first bytes kept)
        _read_every_head(root)
        assert [str(p) for p in fs_(root)] == alone
    return alone


def _read_every_head(root: Path) -> None:
    from trajkit.reading.probe import Probe

    for d, _dirs, files in tree.walk_sorted(root):
        probe = Probe()
        probe.listdir(d)
        for n in files:
            probe.head(os.path.join(d, n), 1 << 16)


def _claude_transcript() -> bytes:
    return (CORPUS / "claude_code" / "simonw+claude-code-transcripts" / "tests" / "sample_session.jsonl").read_bytes()


def test_claude_code_walk(tmp_path: Path):
    p = tmp_path / "home" / "projects"
    (p / "p1" / "dir.jsonl").mkdir(parents=True)
    t = _claude_transcript()
    (p / "p1" / "s1.jsonl").write_bytes(t)
    (p / "p1" / "agent-a1.jsonl").write_bytes(t)  # a sub-agent file: its session's
    (p / "p1" / "notes.jsonl").write_text('{"instance_id": "x"}\n')  # another harness's
    (p / "p1" / "link.jsonl").symlink_to(p / "p1" / "s1.jsonl")  # a symlinked transcript is a file
    (p / "p1" / "dangling.jsonl").symlink_to(p / "nowhere.jsonl")
    os.mkfifo(p / "p1" / "fifo.jsonl")
    (p / "p2").symlink_to(p / "p1")  # a symlinked project folder is looked into
    (p / "p3" / "s3").mkdir(parents=True)
    (p / "p3" / "s3.jsonl").write_bytes(t)
    (p / "p3" / "s3" / "subagents").mkdir()  # s3's companion folder: not a project
    (p / "p3" / "s3" / "inner.jsonl").write_bytes(t)
    (p / "top.jsonl").write_bytes(t)  # a session directly in projects/
    got = _both("claude-code", tmp_path / "home")
    assert got == [str(p / n) for n in ("top.jsonl", "p1/link.jsonl", "p1/s1.jsonl", "p2/link.jsonl", "p2/s1.jsonl", "p3/s3.jsonl")]
    diags: list = []
    assert _both("claude-code", p / "p1" / "dir.jsonl", diags) == []


def test_eval_walk_goes_four_folders_down(tmp_path: Path):
    r = tmp_path / "ev"
    line = b'{"instance_id": "i1", "history": []}\n'
    d = r
    for depth in range(7):
        d.mkdir(parents=True, exist_ok=True)
        (d / "output.jsonl").write_bytes(line)
        (d / "other.jsonl").write_text('{"type": "user"}\n')
        d = d / f"d{depth + 1}"
    (r / ".h").mkdir()
    (r / ".h" / "output.jsonl").write_bytes(line)
    (r / "d1" / "dir.jsonl").mkdir()
    os.mkfifo(r / "d1" / "fifo.jsonl")
    (r / "d1" / "link.jsonl").symlink_to(r / "output.jsonl")
    want = [str(r / "output.jsonl#i1"), str(r / "d1" / "link.jsonl#i1"), str(r / "d1" / "output.jsonl#i1")]
    want += [str(r.joinpath(*[f"d{i}" for i in range(1, k + 1)]) / "output.jsonl#i1") for k in range(2, 5)]
    assert _both("openhands-eval", r) == want


def test_completions_walk(tmp_path: Path):
    r = tmp_path / "llm"
    log = b'{"messages": [], "response": {"id": "x"}}'
    d = r
    for depth in range(7):
        d.mkdir(parents=True, exist_ok=True)
        (d / "gpt-4o-1769035076.285-e64a.json").write_bytes(log)
        d = d / f"d{depth + 1}"
    (r / "dirlog" / "gpt-4o-1769035076.json").mkdir(parents=True)  # a folder named like a log
    (r / "fifo").mkdir()
    os.mkfifo(r / "fifo" / "gpt-4o-1769035076.json")
    (r / "link").mkdir()
    (r / "link" / "gpt-4o-1769035076.json").symlink_to(r / "gpt-4o-1769035076.285-e64a.json")
    (r / "notalog").mkdir()
    (r / "notalog" / "gpt-4o-1769035076.json").write_text('{"other": 1}')
    (r / "notalog" / "gpt-4o-abc.json").write_bytes(log)  # not named like one
    (r / "second").mkdir()
    (r / "second" / "a-1.json").write_text('{"other": 1}')  # the first name is no log, the second is
    (r / "second" / "b-2.json").write_bytes(log)
    (r / ".hidden").mkdir()
    (r / ".hidden" / "gpt-4o-1769035076.json").write_bytes(log)
    want = [r, r / "d1", r / "d1" / "d2", r / "d1" / "d2" / "d3", r / "d1" / "d2" / "d3" / "d4", r / "link", r / "second"]
    assert _both("openhands-completions", r) == [str(p) for p in want]
    # the sniff of a folder agrees, naming the first log
    from trajkit.formats.openhands_completions.detect import sniff
    from trajkit.reading.probe import Probe

    assert "b-2.json" in sniff(Probe(), r / "second", "*").reason
    assert not hasattr(sniff(Probe(), r / "notalog", "*"), "root")


def test_gemini_walk_looks_in_chats_folders_only(tmp_path: Path):
    src = CORPUS / "gemini_cli" / "kenn-io+agentsview" / "internal" / "parser" / "testdata" / "gemini" / "standard_session.json"
    r = tmp_path / "g"
    for d in ("tmp/p1/chats", "tmp/p1/chats/sub", "tmp/p2/xchats", "tmp/chats-not", "chats"):
        (r / d).mkdir(parents=True)
        shutil.copy(src, r / d / "session-1.json")
    assert _both("gemini-cli", r) == [str(r / "chats" / "session-1.json"), str(r / "tmp" / "p1" / "chats" / "session-1.json")]


def test_swe_and_mini_walks(tmp_path: Path):
    r = tmp_path / "s"
    for d in ("a", "a/b", ".h", "c"):
        (r / d).mkdir(parents=True)
        (r / d / "i1.traj").write_text("{}")
        (r / d / "i1.traj.json").write_text("[]")
        (r / d / ".x.traj").write_text("{}")
    (r / "c" / "dir.traj").mkdir()
    assert _both("swe-agent", r) == [str(r / "a" / "i1.traj"), str(r / "a" / "b" / "i1.traj"), str(r / "c" / "i1.traj")]
    assert _both("mini-swe-agent", r) == [str(r / "a" / "i1.traj.json"), str(r / "a" / "b" / "i1.traj.json"), str(r / "c" / "i1.traj.json")]


def test_opencode_walk_keeps_name_order_and_limits(tmp_path: Path):
    from trajkit.formats.opencode.walk import _walk

    r = tmp_path / "oc"
    magic = b"SQLite format 3\x00" + b"\x00" * 100
    (r / "opencode-a" / "x").mkdir(parents=True)
    (r / "opencode-a" / "opencode.db").write_bytes(magic)
    (r / "opencode-b.db").write_bytes(magic)
    (r / "opencode-c.db").write_text("not sqlite")
    (r / "opencode.db").write_bytes(magic)
    (r / "opencode.db.d").mkdir()  # a folder between the stores' names
    (r / "opencode.db.d" / "opencode.db").write_bytes(magic)
    (r / "node_modules").mkdir()
    (r / "node_modules" / "opencode.db").write_bytes(magic)
    (r / ".h").mkdir()
    (r / ".h" / "opencode.db").write_bytes(magic)
    (r / "dirdb" / "opencode.db").mkdir(parents=True)  # a folder named like a store
    (r / "legacy" / "session").mkdir(parents=True)
    (r / "legacy" / "message").mkdir()
    (r / "legacy" / "sub").mkdir()
    (r / "legacy" / "sub" / "opencode.db").write_bytes(magic)  # inside a legacy tree: not walked
    (r / "sessfile").mkdir()
    (r / "sessfile" / "session").write_text("")  # session/ a file: no tree
    (r / "sessfile" / "message").mkdir()
    d = r / "deep"
    for i in range(6):
        d = d / f"d{i}"
        d.mkdir(parents=True)
        (d / "opencode.db").write_bytes(magic)
    (r / "loop").symlink_to(r)  # a loop: walked once
    (r / "zlink").symlink_to(r / "opencode-a")  # a symlinked folder is walked (once: the loop rule)
    # in name order within each folder ("d1" before "opencode.db"), four folders down at most
    want = [r / "deep" / "d0" / "d1" / "d2" / "opencode.db", r / "deep" / "d0" / "d1" / "opencode.db", r / "deep" / "d0" / "opencode.db",
            r / "legacy", r / "opencode-a" / "opencode.db", r / "opencode-b.db", r / "opencode.db",
            r / "opencode.db.d" / "opencode.db"]
    for shared in (False, True):
        with tree.shared_listings() if shared else _nothing():
            out: list[str] = []
            _walk(str(r), 0, out, [], set())
            assert out == [str(p) for p in want]


def test_sdk_walk(tmp_path: Path):
    r = tmp_path / "convs"
    for name in ("b", "a", "x/events/c"):
        (r / name).mkdir(parents=True)
        (r / name / "base_state.json").write_text("{}")
    (r / "a" / "subagents" / "s1").mkdir(parents=True)
    (r / "a" / "subagents" / "s1" / "base_state.json").write_text("{}")
    (r / "bare").mkdir()
    (r / "bare" / "event-00000-abcdef12.json").write_text("{}")
    (r / "deep" / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "8").mkdir(parents=True)
    (r / "deep" / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "base_state.json").write_text("{}")
    (r / "deep" / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "8" / "base_state.json").write_text("{}")
    (r / "loop").symlink_to(r)
    (r / "link-a").symlink_to(r / "a")
    diags: list = []
    got = _both("openhands-sdk", r, diags)
    assert got == [str(r / n) for n in ("a", "b", "bare", "deep/1/2/3/4/5/6/7")]
    assert [d.code for d in diags] == ["sdk.symlink-loop", "sdk.symlink-loop"]  # link-a (a seen) and loop (the root seen)


# ---------------------------------------------------------------- discovery names what the walks list


def test_discovery_names_listed_sessions_in_the_callers_spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from trajkit.corpus import discover

    r = tmp_path / "corpus"
    for name in ("runs/a", "runs/b/c"):
        (r / name).mkdir(parents=True)
        (r / name / "i1.traj").write_text('{"trajectory": []}')
        (r / name / "conv").mkdir()
        (r / name / "conv" / "base_state.json").write_text("{}")
    (tmp_path / "outside" / "conv").mkdir(parents=True)
    (tmp_path / "outside" / "conv" / "base_state.json").write_text("{}")
    (r / "runs" / "link").symlink_to(tmp_path / "outside")  # the SDK walk follows it: its session's real path is outside
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "to-corpus").symlink_to(r)
    monkeypatch.chdir(tmp_path)
    spellings = {
        "absolute": str(r / "runs"), "relative": "corpus/runs", "trailing slash": "corpus/runs/", "dot": "./corpus/runs",
        "via a symlink": "to-corpus/runs", "with ..": "elsewhere/../corpus/runs",
    }
    want = [("a/conv", "openhands-sdk"), ("a/i1.traj", "swe-agent"), ("b/c/conv", "openhands-sdk"), ("b/c/i1.traj", "swe-agent"),
            ("link/conv", "openhands-sdk")]
    for how, given in spellings.items():
        refs = discover([given])
        base = Path(given)
        got = [(str(Path(ref.path).relative_to(base)), ref.format) for ref in refs]
        assert got == want, how
    # a run reached through a symlink is the run at its real path: found once, under the first root given
    outside, runs = tmp_path / "outside", r / "runs"
    inner = [runs / n for n in ("a/conv", "a/i1.traj", "b/c/conv", "b/c/i1.traj")]
    assert [ref.path for ref in discover([outside, runs])] == [outside / "conv"] + inner
    assert [ref.path for ref in discover([runs, outside])] == inner + [runs / "link" / "conv"]
