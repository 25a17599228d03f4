"""Hostile input (issue 16 item 8): special files named like a run's files.

A FIFO, or a symlink to ``/dev/zero`` or ``/dev/urandom``, named like a V0
event file, page-cache shard, flat export or ``results.json``, an SDK event,
``base_state.json`` or ``meta.json``, or a rollout trace, used to hang
``steps`` (a FIFO blocks ``open``) or read without bound. Each case here runs
``trajkit steps --json`` in a real subprocess under a timeout and a 1 GiB
address-space limit, so a regression fails (timeout, MemoryError) instead
of hanging the suite. A 2 GB sparse file named like each kind of event or
state file must be refused from its size alone.

Expected diagnostics are written from the attack, not read back from
trajkit: the file planted is the one a diagnostic must name.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from trajkit.reading import io as rio
from trajkit.reading.probe import Probe

from conftest import CORPUS, REPO

SDK_CONV = CORPUS / "openhands_v1" / "sdk_pr_artifacts" / "4f4c68c16" / "cd94562403b9487ebdd4018e3f531dfd"
V0_TRIAL = CORPUS / "openhands_v0" / "reconstructed_trials" / "game-2048-session.1-of-1.all-views"
ROLLOUT = REPO / "examples" / "rollout"

#: A ceiling far below the 1 GiB a runaway read would need.
ADDRESS_SPACE = 1 << 30
SPARSE = 2 << 30

KINDS = ("fifo", "dev-zero", "dev-urandom")


def _limit() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def steps_json(path: Path, *extra: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "trajkit", "steps", str(path), "--json", *extra],
        capture_output=True, text=True, timeout=60, cwd=REPO, preexec_fn=_limit,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, doc, proc.stderr


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for dirpath, dirnames, filenames in os.walk(dst):
        os.chmod(dirpath, 0o755)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o644)
    return dst


def plant(path: Path, kind: str) -> None:
    """Replace ``path`` by a special file of ``kind`` (or a 2 GB sparse file)."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev-urandom":
        path.symlink_to("/dev/urandom")
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(SPARSE)
    else:  # pragma: no cover
        raise ValueError(kind)


def diags_for(doc: dict, path: Path) -> list[dict]:
    return [d for d in doc.get("diagnostics", []) if d.get("file") == str(path)]


# ---------------------------------------------------------------- the primitive


@pytest.mark.parametrize("kind", KINDS)
def test_read_capped_refuses_special_files_without_blocking(tmp_path, kind):
    p = tmp_path / "x.json"
    plant(p, kind)
    out: list = []
    t = threading.Thread(target=lambda: out.append(rio.read_capped(str(p), 1 << 20)), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "read_capped blocked on a special file"
    data, why = out[0]
    assert data is None and why.code == "file.unreadable"
    assert "not a regular file" in why.reason
    assert Probe().head(p, 64) == b""
    value, diags = rio.load_json(p)
    assert [d.code for d in diags] == ["file.unreadable"] and diags[0].file == str(p)


@pytest.mark.parametrize("kind", KINDS)
def test_probe_head_in_a_listed_folder(tmp_path, kind):
    """A probe that listed the folder reads a regular file's head without
    checking its type again (the listing said so): the same bytes; a special
    file (or a symlink to one) beside it is still checked and reads as b""
    without blocking, as is a regular file swapped for a FIFO or a folder
    after the listing."""
    payload = b'{"a": 1}\n' + b"y" * 70_000
    (tmp_path / "r.json").write_bytes(payload)
    (tmp_path / "swapped.json").write_bytes(payload)
    (tmp_path / "gone.json").write_bytes(payload)
    plant(tmp_path / "x.json", kind)
    probe = Probe()
    assert probe.is_file(tmp_path / "r.json") and not probe.is_file(tmp_path / "x.json")  # lists the folder
    assert probe.is_file(tmp_path / "swapped.json") and probe.is_file(tmp_path / "gone.json")
    os.unlink(tmp_path / "swapped.json")
    os.mkfifo(tmp_path / "swapped.json")
    os.unlink(tmp_path / "gone.json")
    os.mkdir(tmp_path / "gone.json")
    out: list = []
    t = threading.Thread(target=lambda: out.append([probe.head(tmp_path / n, 64) for n in ("x.json", "swapped.json", "gone.json")]),
                         daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "Probe.head blocked on a special file"
    assert out[0] == [b"", b"", b""]
    assert probe.head(tmp_path / "r.json", 1 << 17) == payload and probe.head(tmp_path / "r.json", 8) == payload[:8]


def test_read_capped_refuses_a_sparse_file_from_its_size(tmp_path):
    p = tmp_path / "big.json"
    plant(p, "sparse")
    data, why = rio.read_capped(str(p), 1 << 30)
    assert data is None and why.code == "file.too-large" and why.size == SPARSE
    d = why.diagnostic(str(p), 1 << 30)
    assert d.code == "file.too-large" and f"{SPARSE} bytes" in d.message


def test_read_capped_reads_regular_files_whole_and_cuts_at_the_cap(tmp_path):
    p = tmp_path / "a.json"
    payload = b'{"k": "' + b"x" * 200_000 + b'"}'
    p.write_bytes(payload)
    assert rio.read_capped(str(p), len(payload)) == (payload, None)
    data, why = rio.read_capped(str(p), len(payload) - 1)
    assert data is None and why.code == "file.too-large"
    empty = tmp_path / "e.json"
    empty.write_bytes(b"")
    assert rio.read_capped(str(empty), 10) == (b"", None)
    missing = tmp_path / "nope.json"
    data, why = rio.read_capped(str(missing), 10)
    assert data is None and why.code == "file.unreadable" and "No such file" in why.reason
    data, why = rio.read_capped(str(tmp_path), 10)
    assert data is None and why.code == "file.unreadable" and "directory" in why.reason


def test_iter_jsonl_locates_cut_and_corrupt_lines(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a": 1}\n{bad\n\n{"b": 2}\n{"c": ')
    lines, diags = rio.load_jsonl(p)
    assert [ln.value for ln in lines if ln.value is not rio.MISSING] == [{"a": 1}, {"b": 2}]
    assert [(d.code, d.line, d.offset, d.file) for d in diags] == [
        ("jsonl.invalid-line", 2, 9, str(p)),
        ("jsonl.truncated-line", 5, 24, str(p)),
    ]


# ---------------------------------------------------------------- OpenHands SDK


@pytest.mark.parametrize("kind", KINDS)
def test_sdk_event_file_special(tmp_path, kind):
    conv = copy_run(SDK_CONV, tmp_path / SDK_CONV.name)
    ev = sorted((conv / "events").glob("event-00003-*.json"))[0]
    plant(ev, kind)
    code, doc, _ = steps_json(conv)
    assert code == 0
    assert [d["code"] for d in diags_for(doc, ev)] == ["sdk.event-unreadable"]


@pytest.mark.parametrize("kind", KINDS)
def test_sdk_base_state_special(tmp_path, kind):
    conv = copy_run(SDK_CONV, tmp_path / SDK_CONV.name)
    state = conv / "base_state.json"
    plant(state, kind)
    code, doc, _ = steps_json(conv)
    assert code == 0
    codes = [d["code"] for d in diags_for(doc, state)]
    assert "file.unreadable" in codes and "sdk.state-malformed" in codes
    assert len(doc["steps"]) == 2  # the events still read


@pytest.mark.parametrize("kind", KINDS)
def test_sdk_meta_special(tmp_path, kind):
    conv = copy_run(SDK_CONV, tmp_path / SDK_CONV.name)
    meta = conv / "meta.json"
    plant(meta, kind)
    code, doc, _ = steps_json(conv)
    assert code == 0
    assert {"file.unreadable", "sdk.meta-malformed"} <= {d["code"] for d in diags_for(doc, meta)}


def test_sdk_sparse_event_and_state(tmp_path):
    conv = copy_run(SDK_CONV, tmp_path / SDK_CONV.name)
    ev = sorted((conv / "events").glob("event-00005-*.json"))[0]
    plant(ev, "sparse")
    plant(conv / "base_state.json", "sparse")
    code, doc, _ = steps_json(conv)
    assert code == 0
    (d,) = diags_for(doc, ev)
    assert d["code"] == "sdk.event-too-large" and str(SPARSE) in d["message"]
    assert "file.too-large" in {x["code"] for x in diags_for(doc, conv / "base_state.json")}


# ---------------------------------------------------------------- OpenHands V0


def v0_events_only(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the real trial without its flat export, so events/ is read."""
    trial = copy_run(V0_TRIAL, tmp_path / V0_TRIAL.name)
    for p in (trial / "sessions").glob("*.json"):
        p.unlink()
    (sid,) = (trial / "sessions" / "sessions").iterdir()
    return trial, sid


@pytest.mark.parametrize("kind", KINDS + ("sparse",))
def test_v0_event_file_special(tmp_path, kind):
    trial, sid = v0_events_only(tmp_path)
    ev = sid / "events" / "7.json"
    plant(ev, kind)
    code, doc, _ = steps_json(trial)
    assert code == 0 and doc["view"] == "events"
    codes = [d["code"] for d in diags_for(doc, ev)]
    assert codes == ["file.too-large" if kind == "sparse" else "file.unreadable", "v0.malformed-event"]


@pytest.mark.parametrize("kind", KINDS + ("sparse",))
def test_v0_cache_shard_special(tmp_path, kind):
    trial, sid = v0_events_only(tmp_path)
    shutil.rmtree(sid / "events")
    shard = sid / "event_cache" / "0-25.json"
    plant(shard, kind)
    code, doc, _ = steps_json(trial)
    assert code == 0
    codes = [d["code"] for d in diags_for(doc, shard)]
    assert codes == ["file.too-large" if kind == "sparse" else "file.unreadable", "v0.malformed-shard"]


@pytest.mark.parametrize("kind", KINDS)
def test_v0_flat_export_special_falls_back_to_events(tmp_path, kind):
    trial = copy_run(V0_TRIAL, tmp_path / V0_TRIAL.name)
    (flat,) = (trial / "sessions").glob("*.json")
    plant(flat, kind)
    code, doc, _ = steps_json(trial)
    assert code == 0 and doc["view"] == "events"
    assert [d["code"] for d in diags_for(doc, flat)] == ["file.unreadable"]


@pytest.mark.parametrize("kind", KINDS)
def test_v0_results_json_special(tmp_path, kind):
    trial = copy_run(V0_TRIAL, tmp_path / V0_TRIAL.name)
    res = trial / "results.json"
    plant(res, kind)
    code, doc, _ = steps_json(trial)
    assert code == 0 and doc["steps"]
    assert [d["code"] for d in diags_for(doc, res)] == ["file.unreadable"]


# ---------------------------------------------------------------- rollout traces


@pytest.mark.parametrize("kind", KINDS)
def test_rollout_sidecar_special(tmp_path, kind):
    run = copy_run(ROLLOUT, tmp_path / "rollout")
    task = run / "task.json"
    plant(task, kind)
    code, doc, _ = steps_json(run)
    assert code == 0 and doc["steps"]
    assert [d["code"] for d in diags_for(doc, task)] == ["file.unreadable"]


@pytest.mark.parametrize("kind", KINDS)
def test_rollout_trace_special_is_not_read(tmp_path, kind):
    run = copy_run(ROLLOUT, tmp_path / "rollout")
    (run / "trace.json").unlink()
    trace = run / "trace.jsonl"
    plant(trace, kind)
    # named like a trace but not a regular file: not a rollout, and no hang
    code, _, err = steps_json(run)
    assert code == 2 and "no known format" in err
    code, doc, _ = steps_json(run, "--format", "rollout-trace")
    assert code == 0
    assert [d["code"] for d in diags_for(doc, trace)] == ["file.unreadable"]


def test_special_files_are_not_regular():
    assert stat.S_ISCHR(os.stat("/dev/zero").st_mode)  # the premise of the /dev/zero cases
