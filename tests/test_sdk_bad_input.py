"""Bad input: each case reads to a Session with diagnostics, never a crash."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import orjson
import pytest

from trajkit.formats.openhands_sdk import find_sessions, read
from trajkit.formats.openhands_sdk import layout
from trajkit.model import OTHER, ReadOptions

CONV = "generated/localconv_condensation/0123456789abcdef0123456789abcdef"


@pytest.fixture
def conv(corpus: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "conversations" / "0123456789abcdef0123456789abcdef"
    shutil.copytree(corpus / "openhands_v1" / CONV, dst)
    return dst


def event_file(conv: Path, index: int) -> Path:
    return next((conv / "events").glob(f"event-{index:05d}-*.json"))


def codes(s) -> set[str]:
    return {d.code for d in s.diagnostics}


def notes(s) -> dict[str, str]:
    return {os.path.basename(f.path): f.note for f in s.files if f.role == "event"}


def test_gap_stops_reading_like_the_sdk(conv):
    event_file(conv, 5).unlink()
    s = read(conv)
    assert [e.extra["index"] for e in s.events] == [0, 1, 2, 3, 4]
    assert "sdk.event-gap" in codes(s)
    gap_files = [f for f in s.files if f.note == "gap"]
    assert len(gap_files) == 14 and all(f.status == "skipped" for f in gap_files)
    assert s.metadata["event_files"] == {"event": 5, "gap": 14}
    # the leaf named by base_state is past the gap: reported, legacy leaf used
    assert "sdk.leaf-missing" in codes(s) and s.metadata["leaf_source"] == "last-event"


def test_duplicate_index_keeps_the_first_name(conv):
    src = event_file(conv, 3)
    dup = conv / "events" / "event-00003-ffffffff-0000-4000-8000-000000000000.json"
    dup.write_bytes(src.read_bytes())
    s = read(conv)
    assert len(s.events) == 20
    assert notes(s)[dup.name] == "duplicate" and notes(s)[src.name] == "event"
    assert "sdk.event-duplicate-index" in codes(s)


def test_malformed_files_are_reported_and_the_rest_read(conv):
    event_file(conv, 2).write_bytes(b"")
    event_file(conv, 3).write_bytes(b"[1, 2, 3]")
    event_file(conv, 4).write_bytes(b"{not json")
    s = read(conv)
    assert len(s.events) == 17
    assert {notes(s)[event_file(conv, i).name] for i in (2, 3, 4)} == {"malformed"}
    assert {"sdk.event-empty", "sdk.event-not-object", "sdk.event-malformed"} <= codes(s)
    # the history is not cut at the bad files: links to them are bridged
    assert "sdk.parent-unreadable" in codes(s) and s.metadata["abandoned_event_ids"] == []
    assert s.metadata["active_branch"][-1] == s.events[-1].id
    # the action of the emptied file is gone, so its observation answers nothing: no step for it
    assert all(st.action_event_id != "e4e3548b-fca6-4764-a6d7-201338a03ae5" for st in s.steps)


def test_truncated_json_event(conv):
    p = event_file(conv, 19)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    s = read(conv)
    assert len(s.events) == 19
    d = next(d for d in s.diagnostics if d.code == "sdk.event-malformed")
    assert d.file == str(p) and d.offset is not None
    # the finish action lost its answer: not a step, listed as unanswered
    assert s.metadata["actions_without_observation"] == ["d3e03adf-89de-4e38-8488-fe7204e67214"]


def test_bad_names(conv):
    ev = conv / "events"
    (ev / "event-0001-abcdefab.json").write_bytes(b"{}")  # 4 digits
    (ev / "event-00001-not_an_id!.json").write_bytes(b"{}")  # id characters
    (ev / "notes.txt").write_text("hello")
    (ev / ".eventlog-len-99.marker").write_bytes(b"")
    s = read(conv)
    n = notes(s)
    assert n["event-0001-abcdefab.json"] == n["event-00001-not_an_id!.json"] == n["notes.txt"] == "bad-name"
    assert len(s.events) == 20
    assert sum(1 for d in s.diagnostics if d.code == "sdk.event-bad-name") == 3
    # dot-files are sidecars, ignored silently
    sidecars = [f for f in s.files if f.role == "sidecar"]
    assert {os.path.basename(f.path) for f in sidecars} >= {".eventlog-len-99.marker", ".eventlog.lock"}
    assert not any(".eventlog" in (d.file or "") for d in s.diagnostics)


def test_six_digit_indices_are_read(conv):
    ev = conv / "events"
    for p in sorted(ev.glob("event-*.json")):
        idx, rest = p.name[6:11], p.name[12:]
        p.rename(ev / f"event-0{idx}-{rest}")
    s = read(conv)
    assert len(s.events) == 20 and s.metadata["event_files"] == {"event": 20}


def test_unknown_kind_and_misfit_members_stay_events(conv):
    p = event_file(conv, 7)
    obj = orjson.loads(p.read_bytes())
    obj["kind"] = "FancyFutureEvent"
    obj["brand_new_member"] = {"x": [1, 2]}
    p.write_bytes(orjson.dumps(obj))
    q = event_file(conv, 16)
    act = orjson.loads(q.read_bytes())
    act["tool_name"] = 5
    q.write_bytes(orjson.dumps(act))
    s = read(conv)
    e = s.events[7]
    assert e.kind == OTHER and e.type == "FancyFutureEvent" and e.raw == obj and e.extra["unknown_kind"]
    assert "sdk.unknown-kind" in codes(s)
    a = s.events[16]
    assert a.extra["misfit_members"] == ["tool_name"] and a.raw["tool_name"] == 5
    assert "sdk.event-misfit" in codes(s)
    assert len(s.events) == 20


def test_missing_base_state(conv):
    (conv / "base_state.json").unlink()
    s = read(conv)
    assert "sdk.state-missing" in codes(s)
    assert len(s.events) == 20 and s.id == conv.name
    assert s.metadata["execution_status"] is None and s.metadata["leaf_source"] == "last-event"
    assert len(s.steps) == 8
    assert find_sessions(conv.parent) == [conv]  # still a conversation (it has events/)


def test_corrupt_base_state(conv):
    data = (conv / "base_state.json").read_bytes()
    (conv / "base_state.json").write_bytes(data[:100])
    s = read(conv)
    assert {"sdk.state-malformed", "json.invalid"} <= codes(s)
    state_file = next(f for f in s.files if f.role == "state")
    assert state_file.status == "skipped" and state_file.note == "malformed"
    assert len(s.events) == 20 and "state" not in s.metadata
    (conv / "base_state.json").write_bytes(b'"a string"')
    assert "sdk.state-malformed" in codes(read(conv))


def test_size_cap_is_configurable(conv):
    big = event_file(conv, 0)  # the system prompt, ~30 KB
    s = read(conv, ReadOptions(max_file_bytes=20_000))
    assert big.stat().st_size > 20_000
    d = next(d for d in s.diagnostics if d.code == "sdk.event-too-large")
    assert d.file == str(big)
    assert notes(s)[big.name] == "malformed"
    assert len(s.events) == 19
    assert len(read(conv).events) == 20


def test_symlink_loops_are_cut(conv, tmp_path):
    # a loop under the root of a directory walk
    root = conv.parent
    (root / "nest").mkdir()
    os.symlink(root, root / "nest" / "back")
    diags = []
    assert find_sessions(root, diags) == [conv]
    assert any(d.code == "sdk.symlink-loop" for d in diags)
    # a sub-agent directory that leads back to its own conversation
    (conv / "subagents").mkdir()
    os.symlink(conv, conv / "subagents" / "ffffffffffffffffffffffffffffffff")
    s = read(conv)
    assert "sdk.symlink-loop" in codes(s) and s.children == []


def test_unreadable_directory_is_skipped(conv, monkeypatch):
    root = conv.parent
    locked = root / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(layout.os, "scandir", scandir)
    diags = []
    assert find_sessions(root, diags) == [conv]
    d = next(d for d in diags if d.code == "sdk.dir-unreadable")
    assert d.file == str(locked) and "Permission denied" in d.message


def test_event_vanishing_between_listing_and_reading(conv, monkeypatch):
    victim = event_file(conv, 10)
    real = layout.scan_events

    def scan_then_delete(events_dir):
        out = real(events_dir)
        victim.unlink()
        return out

    from trajkit.formats.openhands_sdk import reader

    monkeypatch.setattr(reader.layout, "scan_events", scan_then_delete)
    s = read(conv)
    assert len(s.events) == 19 and "sdk.event-unreadable" in codes(s)


def test_conversation_written_while_read(conv, tmp_path):
    """A writer appends events (non-atomically, like a crash-prone writer) and
    rewrites base_state.json while a reader reads again and again."""
    src = sorted((conv / "events").glob("event-*.json"))
    payloads = [p.read_bytes() for p in src]
    names = [p.name for p in src]
    state = (conv / "base_state.json").read_bytes()
    live = tmp_path / "live" / conv.name
    (live / "events").mkdir(parents=True)
    (live / "base_state.json").write_bytes(state)
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer():
        try:
            for name, data in zip(names, payloads):
                p = live / "events" / name
                with open(p, "wb") as f:
                    f.write(data[: len(data) // 2])
                    f.flush()
                    time.sleep(0.002)
                    f.write(data[len(data) // 2 :])
                with open(live / "base_state.json", "wb") as f:
                    f.write(state[:50])
                    f.flush()
                    time.sleep(0.001)
                    f.write(state[50:])
        except BaseException as e:  # pragma: no cover - surfaced below
            errors.append(e)
        finally:
            stop.set()

    t = threading.Thread(target=writer)
    t.start()
    reads = 0
    try:
        while not stop.is_set():
            s = read(live)
            reads += 1
            indices = [e.extra["index"] for e in s.events]
            malformed = [f for f in s.files if f.role == "event" and f.note == "malformed"]
            # what was read is what was written, in index order
            assert indices == sorted(indices)
            for e in s.events:
                assert e.raw == orjson.loads(payloads[e.extra["index"]])
            # the one file being written may be half there: reported, never raised
            assert len(malformed) <= 1
            if malformed:
                assert malformed[0].path.endswith(names[max(indices, default=-1) + 1])
            assert all(d.severity in ("error", "warning", "info") for d in s.diagnostics)
    finally:
        t.join()
    assert not errors
    assert reads > 5
    final = read(live)
    assert len(final.events) == 20 and not [d for d in final.diagnostics if d.severity == "error"]
