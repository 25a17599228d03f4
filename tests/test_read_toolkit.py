"""The reader toolkit (``trajkit.reading``) and detection's contract with formats.

- the probe: detection lists every directory and opens every file at most once;
- naming a format skips detection altogether;
- a format whose ``sniff`` or ``read`` raises becomes a diagnostic naming it;
- ``SessionBuilder.finish`` accounts for what a reader left out;
- the default pairings agree with the corpus' independently computed steps;
- a path through a symlinked parent and ``..`` resolves as ``cd`` does.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path

import pytest

import trajkit
from trajkit import registry
from trajkit.model import ReadOptions, Session
from trajkit.reading import io as rio
from trajkit.reading.builder import SessionBuilder
from trajkit.reading.pairing import pair_by_call_id, pair_by_cause
from trajkit.reading.probe import Probe, logical_abspath

from conftest import CORPUS, REPO, run_cli

SDK_CONV = CORPUS / "openhands_v1" / "sdk_pr_artifacts" / "4f4c68c16" / "cd94562403b9487ebdd4018e3f531dfd"
V0_TRIALS = CORPUS / "openhands_v0" / "reconstructed_trials"
V0_TRIAL = V0_TRIALS / "game-2048-session.1-of-1.all-views"
ROLLOUT = REPO / "examples" / "rollout"


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for dirpath, _dirs, files in os.walk(dst):
        os.chmod(dirpath, 0o755)
        for n in files:
            os.chmod(os.path.join(dirpath, n), 0o644)
    return dst


# ---------------------------------------------------------------- the probe


class _Counting:
    """Counts directory listings, stats and opens per path while active."""

    def __init__(self, monkeypatch):
        self.lists: collections.Counter = collections.Counter()
        self.opens: collections.Counter = collections.Counter()
        for name in ("scandir", "listdir"):
            real = getattr(os, name)

            def wrap(p=".", _real=real):
                self.lists[os.fspath(p)] += 1
                return _real(p)

            monkeypatch.setattr(os, name, wrap)
        real_open = os.open

        def counting_open(p, flags, *a, **k):
            self.opens[os.fspath(p)] += 1
            return real_open(p, flags, *a, **k)

        monkeypatch.setattr(os, "open", counting_open)


@pytest.mark.parametrize("run", [SDK_CONV, SDK_CONV / "events", V0_TRIAL, ROLLOUT, ROLLOUT / "trace.json"])
def test_detection_lists_and_opens_each_path_once(monkeypatch, run):
    registry.formats()
    c = _Counting(monkeypatch)
    probe = Probe()
    det = registry.detect(run, exhaustive=True, probe=probe)
    assert det.format is not None
    assert c.lists and max(c.lists.values()) == 1, c.lists
    assert not c.opens or max(c.opens.values()) == 1, c.opens
    assert probe.calls >= len(c.lists)


def test_probe_caches_and_slices_heads(tmp_path):
    p = tmp_path / "f.json"
    p.write_bytes(b"[" + b"1," * 50_000 + b"1]")
    probe = Probe()
    assert probe.head(p, 10) == b"[1,1,1,1,1"
    n = probe.calls
    assert probe.head(p, 4) == b"[1,1"
    assert probe.head(str(p), 1 << 16) == p.read_bytes()[: 1 << 16]
    assert probe.calls == n  # asks up to 64 KiB are slices of one read
    assert probe.head(p, 1 << 17) == p.read_bytes()[: 1 << 17]
    assert probe.calls == n + 1
    assert probe.head(p, 1 << 18) == p.read_bytes()  # the whole (shorter) file: no new read needed after
    n = probe.calls
    assert probe.head(p, 1 << 19) == p.read_bytes() and probe.calls == n
    assert probe.listdir(tmp_path) == ["f.json"] and probe.scan(tmp_path) == (set(), {"f.json"})
    assert probe.is_file(p) and not probe.is_dir(p) and probe.is_dir(tmp_path)
    assert probe.listdir(tmp_path / "nope") is None and not probe.exists(tmp_path / "nope")


# ---------------------------------------------------------------- naming a format


def _format(name: str, priority: int, sniff, read) -> registry.Format:
    return registry.Format(name=name, description="test", fingerprints=("*", "*/*"), priority=priority, sniff=sniff, read=read)


@pytest.fixture
def restore_formats():
    saved = list(registry.formats())
    yield
    registry.formats()[:] = saved


def test_naming_a_format_skips_detection(monkeypatch, restore_formats):
    calls = []

    def sniff(probe, cand, fp):
        calls.append(cand)
        raise AssertionError("sniff must not run when the format is named")

    def read(root, options):
        return Session(format="named-only", source_path=str(root), id="ok")

    registry.register(_format("named-only", 999, sniff, read))
    monkeypatch.setattr(registry, "detect", lambda *a, **k: pytest.fail("detect() ran for a named format"))
    s = trajkit.read(SDK_CONV, format="named-only")
    assert s.id == "ok" and s.format == "named-only" and calls == []
    # the built-in formats too: a named read of an SDK conversation detects nothing
    s = trajkit.read(SDK_CONV, format="openhands-sdk")
    assert len(s.events) == len(list((SDK_CONV / "events").glob("event-*.json")))


def test_cli_format_option_still_finds_the_root_from_an_inner_path():
    p = run_cli("steps", SDK_CONV / "events", "--format", "openhands-sdk", "--json", check=True)
    assert json.loads(p.stdout)["source_path"] == str(SDK_CONV)


# ---------------------------------------------------------------- formats that raise


def test_a_sniff_that_raises_is_a_diagnostic_naming_the_format(restore_formats):
    def sniff(probe, cand, fp):
        raise RuntimeError("plugin bug")

    registry.register(_format("broken-sniff", 999, sniff, lambda root, o: Session(format="broken-sniff", source_path=str(root))))
    det = registry.detect(SDK_CONV)
    assert det.format is not None and det.format.name == "openhands-sdk"
    codes = [(d.code, d.file) for d in det.diagnostics]
    assert ("detect.sniff-failed", str(SDK_CONV)) in codes
    assert all("broken-sniff" in d.message and "RuntimeError: plugin bug" in d.message for d in det.diagnostics)
    assert det.to_dict()["diagnostics"][0]["code"] == "detect.sniff-failed"
    s = trajkit.read(SDK_CONV)
    assert s.format == "openhands-sdk" and len(s.steps) == 2
    assert "detect.sniff-failed" in {d.code for d in s.diagnostics}


def test_a_read_that_raises_is_a_session_with_a_diagnostic(restore_formats):
    def sniff(probe, cand, fp):
        return registry.Match(cand, fp, registry.STRONG, "always")

    def read(root, options):
        raise KeyError("boom")

    registry.register(_format("broken-read", 999, sniff, read))
    for s in (trajkit.read(SDK_CONV), trajkit.read(SDK_CONV, format="broken-read")):
        assert s.format == "broken-read" and s.events == []
        (d,) = [d for d in s.diagnostics if d.code == "read.format-failed"]
        assert "broken-read" in d.message and "KeyError" in d.message and d.severity == "error"


def test_cli_survives_a_raising_plugin(tmp_path):
    # a real subprocess with a format registered at start-up through sitecustomize
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "from trajkit import registry\n"
        "def _sniff(probe, cand, fp):\n    raise ValueError('bad plugin')\n"
        "registry.register(registry.Format('bad-plugin', 'x', ('*',), 999, _sniff, lambda r, o: None))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "trajkit", "steps", str(SDK_CONV), "--json"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert any(d["code"] == "detect.sniff-failed" and "bad-plugin" in d["message"] for d in doc["diagnostics"])


# ---------------------------------------------------------------- the builder


def test_builder_accounts_for_every_entry(tmp_path):
    run = copy_run(ROLLOUT, tmp_path / "rollout")
    (run / "notes.md").write_text("left by hand\n")
    (run / "extra").mkdir()
    (run / "extra" / "x.bin").write_bytes(b"\0")
    s = trajkit.read(run)
    by_path = {f.path: f for f in s.files}
    # every entry of the directory, found by listing it here
    assert set(by_path) >= {str(run / n) for n in os.listdir(run)}
    for n in ("notes.md", "extra"):
        f = by_path[str(run / n)]
        assert (f.status, f.role) == ("unused", "other")
        assert any(d.code == "read.unaccounted" and d.file == str(run / n) for d in s.diagnostics)
    assert by_path[str(run / "notes.md")].size == len("left by hand\n")


def test_builder_helpers(tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}')
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "l.jsonl").write_bytes(b'{"a": 1}\nnot json\n{"b": 2}\n{"cut')
    b = SessionBuilder("toy", tmp_path, ReadOptions(max_file_bytes=1 << 20))
    assert b.read_json(tmp_path / "a.json", "task")[0] == {"x": 1}
    v, sf = b.read_json(tmp_path / "bad.json", "task")
    assert v is rio.MISSING and sf.status == "skipped"
    lines, sf = b.jsonl(tmp_path / "l.jsonl", "events")
    assert [ln.value for ln in lines if ln.value is not rio.MISSING] == [{"a": 1}, {"b": 2}] and sf.status == "read"
    b.skip(tmp_path / "gone.json", "events", "toy.gone", "not there")
    s = b.finish()
    assert [(f.path.rsplit("/", 1)[1], f.status) for f in s.files] == [
        ("a.json", "read"), ("bad.json", "skipped"), ("l.jsonl", "read"), ("gone.json", "skipped"),
    ]
    codes = [(d.code, os.path.basename(d.file or ""), d.line) for d in s.diagnostics]
    assert codes == [
        ("json.invalid", "bad.json", None),
        ("jsonl.invalid-line", "l.jsonl", 2),
        ("jsonl.truncated-line", "l.jsonl", 4),
        ("toy.gone", "gone.json", None),
    ]


# ---------------------------------------------------------------- default pairings


@pytest.mark.parametrize("trial", sorted(p.name for p in V0_TRIALS.iterdir() if p.is_dir()))
def test_pair_by_cause_matches_the_corpus_expectations(trial):
    expected = json.loads((V0_TRIALS / trial / "EXPECTED.json").read_text())
    for view, facts in expected["per_view"].items():
        s = trajkit.read(V0_TRIALS / trial, options=ReadOptions(view=view, steps=False))
        steps = pair_by_cause(s)
        assert len(steps) == facts["step_count"], (trial, view)
        if view == expected["view_used"]:
            got = [(st.action_event_id, st.observation_event_id) for st in steps]
            assert got == [(x["action_event_id"], x["observation_event_id"]) for x in expected["steps"]]


def test_pair_by_call_id_pairs_tool_results_by_id():
    # the rollout example's raw trace, paired by hand: a tool call id in a
    # response, answered by the tool message carrying it in a later request
    records = json.loads((ROLLOUT / "trace.json").read_text())
    if isinstance(records, dict):
        records = next(v for v in records.values() if isinstance(v, list))
    calls = []
    answered = set()
    for r in records:
        for m in (r.get("request") or {}).get("messages") or []:
            if m.get("role") == "tool":
                answered.add(m.get("tool_call_id"))
        for ch in (r.get("response") or {}).get("choices") or []:
            for tc in (ch.get("message") or {}).get("tool_calls") or []:
                if tc["id"] not in calls:
                    calls.append(tc["id"])
    s = trajkit.read(ROLLOUT, options=ReadOptions(steps=False))
    steps = pair_by_call_id(s, {"bash": "command"})
    assert [st.extra["call_id"] for st in steps] == [c for c in calls if c in answered]
    assert steps and all(st.observation_event_id for st in steps)


# ---------------------------------------------------------------- paths


def _symlinked_parent(tmp_path: Path) -> tuple[Path, Path]:
    """base/sym -> base/real/sub; the trial lives at base/real/inner/trial."""
    base = tmp_path / "base"
    (base / "real" / "sub").mkdir(parents=True)
    (base / "sym").symlink_to(base / "real" / "sub")
    real = copy_run(V0_TRIAL, base / "real" / "inner" / "trial")
    return base, real


def test_a_path_through_a_symlinked_parent_and_dotdot_reads(tmp_path):
    base, real = _symlinked_parent(tmp_path)
    p = run_cli("steps", "sym/../inner/trial", "--json", cwd=base)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    want = json.loads(run_cli("steps", real, "--json", check=True).stdout)
    assert doc["steps"] == want["steps"] and len(doc["steps"]) == 4
    assert run_cli("detect", base / "sym" / ".." / "inner" / "trial").returncode == 0


def test_dotdot_is_logical_first_like_cd(tmp_path):
    base, real = _symlinked_parent(tmp_path)
    assert logical_abspath(base / "sym" / ".." / "inner" / "trial") == str(real)
    # when the logical path exists it wins, as with `cd`
    logical = copy_run(SDK_CONV, base / "inner" / "trial")
    assert logical_abspath(base / "sym" / ".." / "inner" / "trial") == str(logical)
    assert trajkit.read(base / "sym" / ".." / "inner" / "trial").format == "openhands-sdk"
    # paths without '..' and missing paths are plain absolute paths
    assert logical_abspath(base / "sym") == str(base / "sym")
    assert logical_abspath(base / "nope" / ".." / "x") == str(base / "x")


# ---------------------------------------------------------------- lazy capabilities


def test_lazy_capability_imports_on_first_call_and_pickles():
    """``registry.lazy``: a capability named as module:attribute is imported
    only when called (a format's module stays light for detection), and
    pickles by name (a Format goes to worker processes)."""
    import pickle
    import subprocess
    import sys

    code = (
        "import sys, pickle\n"
        "from trajkit.registry import lazy\n"
        "f = lazy('colorsys:rgb_to_hsv')\n"
        "assert 'colorsys' not in sys.modules, 'imported before the first call'\n"
        "assert f(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)\n"
        "assert 'colorsys' in sys.modules\n"
        "g = pickle.loads(pickle.dumps(f))\n"
        "assert g.ref == f.ref and g(0.0, 0.0, 0.0) == (0.0, 0.0, 0.0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with pytest.raises(ValueError, match="module:attribute"):
        registry.lazy("no-colon")
    assert pickle.loads(pickle.dumps(registry.lazy("os:getcwd")))() == os.getcwd()


def test_probe_absent_and_unlisted_folders_agree_with_the_filesystem(tmp_path):
    """``Probe.absent`` (and ``is_file``/``is_dir`` under a folder its parent's
    listing lacks) answer as ``os.path`` does, with fewer system calls."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "sub" / "f.json").write_text("{}")
    (tmp_path / "d" / "g.txt").write_text("x")
    os.symlink(tmp_path / "d" / "g.txt", tmp_path / "d" / "link")
    os.symlink(tmp_path / "d" / "gone", tmp_path / "d" / "dangling")
    paths = [tmp_path / "d" / n for n in ("g.txt", "link", "dangling", "missing", "sub")]
    paths += [tmp_path / "d" / "sub" / "f.json", tmp_path / "d" / "missing" / "f.json", tmp_path / "elsewhere" / "x"]
    for listed in (False, True):
        probe = Probe()
        if listed:
            probe.listdir(tmp_path / "d")
        for p in paths:
            assert probe.absent(p) == (not os.path.exists(p)), p
            assert probe.is_file(p) == os.path.isfile(p) and probe.is_dir(p) == os.path.isdir(p), p
    probe = Probe()
    probe.listdir(tmp_path / "d")
    n = probe.calls
    # a name the listing lacks, and a path under a folder the listing lacks: no system call
    assert probe.absent(tmp_path / "d" / "missing") and not probe.is_file(tmp_path / "d" / "missing" / "f.json")
    assert probe.calls == n
    # a miss in a folder never listed: one access() call, then remembered
    assert probe.absent(tmp_path / "elsewhere.jsonl") and probe.calls == n + 1
    assert not probe.is_file(tmp_path / "elsewhere.jsonl") and probe.calls == n + 1


def test_find_verifier_dir_with_and_without_a_probe(tmp_path):
    from trajkit.vocab.trials import find_verifier_dir

    run = tmp_path / "a" / "b" / "trial"
    run.mkdir(parents=True)
    assert find_verifier_dir(str(run)) is None and find_verifier_dir(str(run), Probe()) is None
    (tmp_path / "a" / "verifier").mkdir()
    assert find_verifier_dir(str(run)) is None  # a verifier/ without ctrf.json or reward.txt is none
    (tmp_path / "a" / "verifier" / "reward.txt").write_text("1")
    want = os.path.join(str(tmp_path / "a"), "verifier")
    probe = Probe()
    probe.listdir(run)
    assert find_verifier_dir(str(run)) == want and find_verifier_dir(str(run), probe) == want


def test_probe_absent_asks_a_mounted_archive_not_the_disk(tmp_path):
    """Inside an archive mounted through ``reading.fs``, ``absent`` answers from
    the memory tree: the member is there though no such file is on disk."""
    from trajkit.reading import fs

    root = tmp_path / "a.zip"
    tree = fs.MemoryTree(str(root), [("runs/x.json", b"[1]", 0.0), ("verifier/reward.txt", b"1", 0.0)])
    with fs.mounted(tree):
        probe = Probe()
        assert not probe.absent(root / "runs" / "x.json") and probe.is_file(root / "runs" / "x.json")
        assert probe.absent(root / "runs" / "y.json") and not fs.exists(root / "runs" / "y.json")
        assert not fs.absent(root / "runs") and fs.absent(root / "nope")
        from trajkit.vocab.trials import find_verifier_dir

        want = os.path.join(str(root), "verifier")
        assert find_verifier_dir(str(root / "runs")) == want and find_verifier_dir(str(root / "runs"), Probe()) == want
    assert fs.absent(root / "runs" / "x.json")  # unmounted: nothing on disk
