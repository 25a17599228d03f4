"""The V0 reader's fast path (issue 15): reading a run and its steps derives
no event in full, the facts it takes straight from the event dicts are the
ones :func:`full_event` derives, and a flat export detection already read
whole is not opened again."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

import trajkit
from trajkit.formats.openhands_v0 import reader as v0
from trajkit.model import ACTION, MESSAGE, Usage

V0 = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "openhands_v0"
RUNS = (
    [p for p in sorted((V0 / "reconstructed_trials").iterdir()) if p.is_dir()] + sorted((V0 / "flat_exports").glob("*.json"))
    if V0.is_dir()
    else []
)
pytestmark = pytest.mark.skipif(not RUNS, reason="the shared V0 corpus is not there")


def _raw_events(run: Path) -> list[Any]:
    """The event dicts of every view of ``run``, decoded here with orjson."""
    if run.is_file():
        return orjson.loads(run.read_bytes())
    out: list[Any] = []
    for f in sorted(run.rglob("*.json")):
        if f.parent.name in ("events", "event_cache") or (f.parent.name == "sessions" and f.parent.parent == run):
            value = orjson.loads(f.read_bytes())
            out.extend(value if isinstance(value, list) else [value])
    return out


def _derived(e) -> bool:
    return object.__getattribute__(e, "_derive") is None


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_read_and_steps_derive_no_event_in_full(run):
    s = trajkit.read(run)
    assert s.events
    assert [e.id for e in s.events if _derived(e)] == []
    # the fields read derives nothing for are still there on demand, as full_event gives them
    for e in s.events:
        full = v0.full_event(e.raw, e.ref)
        assert (e.source, e.text, e.response_id, e.timestamp, e.extra) == (full.source, full.text, full.response_id, full.timestamp, full.extra)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_facts_from_the_dicts_are_full_events(run):
    raws = [r for r in _raw_events(run) if isinstance(r, dict)]
    assert raws
    for raw in raws:
        full = v0.full_event(raw, None)
        if full.kind in (ACTION, MESSAGE):
            assert v0._response_id(raw) == full.response_id
        if full.kind == ACTION:
            assert (v0._model_of(raw) or None) == (full.extra.get("model") or None)


def _usage_the_old_way(events):
    """attribute_usage as it was written over fully derived events (the independent route)."""
    prev: dict[str, Any] = {}
    seen: set[str] = set()
    out = {}
    for e in events:
        if type(e.raw) is not dict or "llm_metrics" not in e.raw:
            continue
        totals = e.extra.get("cumulative_usage")
        if totals is None:
            continue
        rid = e.response_id
        if rid is None or rid not in seen:
            usage = {k: (v - prev.get(k, 0) if type(v) in (int, float) else v) for k, v in totals.items()}
            out[id(e)] = (usage, Usage.from_counts(usage, "llm_metrics (difference of running totals)"))
        if rid:
            seen.add(rid)
        prev = totals
    return out


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_usage_from_the_dicts_equals_usage_from_full_events(run):
    raws = _raw_events(run)
    full = [v0.full_event(r, None) for r in raws]
    want = _usage_the_old_way(full)
    lazy = [v0.to_event(r, None) for r in raws]
    v0.attribute_usage(lazy)
    got = [(e.usage, e.model_usage) for e in lazy]
    assert got == [want.get(id(e), (None, None)) for e in full]
    assert any(u is not None for u, _ in got) == bool(want)


@pytest.mark.parametrize("run", [r for r in RUNS if r.is_file()] or [None], ids=lambda p: getattr(p, "name", "none"))
def test_flat_export_is_opened_once(monkeypatch, run):
    if run is None:
        pytest.skip("no flat export in the corpus")
    opens: Counter[str] = Counter()
    real_open = os.open

    def counting_open(p, flags, *a, **k):
        opens[os.fspath(p)] += 1
        return real_open(p, flags, *a, **k)

    monkeypatch.setattr(os, "open", counting_open)
    s = trajkit.read(run)
    assert s.view == "flat_export" and s.events
    assert os.path.getsize(run) < 1 << 16  # detection's head read holds the whole file
    real = os.path.realpath(run)  # ../shared may be a symlink: count opens of this file under any name
    assert sum(n for p, n in opens.items() if os.path.realpath(p) == real) == 1, opens


def test_probe_whole_only_for_a_file_read_whole(tmp_path):
    from trajkit.reading.probe import Probe

    small, big, empty = tmp_path / "small.json", tmp_path / "big.json", tmp_path / "empty.json"
    small.write_bytes(b"[1, 2]")
    big.write_bytes(b"[" + b"1," * 50_000 + b"1]")
    empty.write_bytes(b"")
    probe = Probe()
    assert probe.whole(small, 1 << 20) is None  # no head read yet
    for p in (small, big, empty):
        probe.head(p, 256)
    assert probe.whole(small, 1 << 20) == b"[1, 2]"
    assert probe.whole(str(small), 1 << 20) == b"[1, 2]"
    assert probe.whole(small, 3) is None  # over the cap: the reader reads (and refuses) it itself
    assert probe.whole(big, 1 << 30) is None  # the head is only its start
    assert probe.whole(empty, 1 << 20) is None


@pytest.mark.parametrize("choices", [5, True, [{"message": {"tool_calls": 7}}], [{"message": {"tool_calls": [{"id": "c1", "function": "ls"}]}}]])
def test_malformed_model_response_derives_without_raising(tmp_path, choices):
    """Fields are derived after the read, on first access: a malformed
    ``model_response`` must give no tool-call facts from it, not an exception."""
    action = {
        "id": 1, "source": "agent", "action": "run", "args": {"command": "ls", "thought": ""},
        "tool_call_metadata": {"tool_call_id": "c1", "function_name": "execute_bash",
                               "model_response": {"id": "r1", "model": "m", "choices": choices}},
    }
    obs = {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a b", "extras": {}}
    f = tmp_path / "run.json"
    f.write_bytes(orjson.dumps([action, obs]))
    s = trajkit.read(f)
    assert [st.action for st in s.steps] == ["ls"]
    e = s.events[0]
    assert e.response_id == "r1" and e.extra.get("model") == "m"
    assert [c.name for c in e.tool_calls] == ["execute_bash"]
    assert e.tool_calls[0].arguments == {"command": "ls"}  # the action's args without thought: no model arguments found
