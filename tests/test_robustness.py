"""Damaged runs of every format go through the whole pipeline without raising.

Each case copies a real run from the shared corpus (or a shipped example),
damages a few of its JSON files with a seeded random mutation (cut short,
non-UTF-8 bytes, members deleted or replaced by values of the wrong type),
then reads it, renders its steps, exports it to ASF and ATIF, and certifies
it. Any exception is a failure: bad data must become diagnostics.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

import trajkit
from trajkit.certify.pipeline import certify
from trajkit.export.convert import convert

from conftest import CORPUS, REPO

SOURCES = {
    "openhands-v0": sorted(p for p in (CORPUS / "openhands_v0" / "reconstructed_trials").iterdir() if p.is_dir()),
    "openhands-sdk": sorted(p.parent for p in (CORPUS / "openhands_v1").rglob("base_state.json") if "subagents" not in p.parts),
    "rollout-trace": [REPO / "examples" / "rollout"],
}
CASES = [(fmt, seed) for fmt in SOURCES for seed in range(40)]


def _mutate(value, rng: random.Random):
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
        r = rng.random()
        if r < 0.2:
            del value[key]
        elif r < 0.4:
            value[key] = rng.choice([None, 1, "x", [], {}, True, -5, 1.5, "\n", [1, 2]])
        else:
            _mutate(value[key], rng)
    elif isinstance(value, list) and value:
        i = rng.randrange(len(value))
        r = rng.random()
        if r < 0.2:
            del value[i]
        elif r < 0.4:
            value[i] = rng.choice([None, 1, "x", [], {}])
        else:
            _mutate(value[i], rng)


def _damage(run: Path, rng: random.Random) -> None:
    files = sorted(p for p in run.rglob("*.json*") if p.is_file())
    for p in rng.sample(files, min(len(files), rng.randint(1, 6))):
        data = p.read_bytes()
        r = rng.random()
        if r < 0.25:
            p.write_bytes(data[: rng.randrange(len(data) + 1)])
        elif r < 0.35:
            p.write_bytes(b"\xff\xfe" + data[:50])
        else:
            try:
                value = json.loads(data)
            except ValueError:
                continue
            for _ in range(rng.randint(1, 8)):
                _mutate(value, rng)
            p.write_text(json.dumps(value))


@pytest.mark.parametrize("fmt,seed", CASES, ids=[f"{f}-{s}" for f, s in CASES])
def test_damaged_run_goes_through_every_stage(tmp_path, fmt, seed):
    rng = random.Random(f"{fmt}-{seed}")
    run = tmp_path / "run"
    shutil.copytree(rng.choice(SOURCES[fmt]), run)
    _damage(run, rng)
    session = trajkit.read(run, format=fmt)
    json.dumps(session.to_dict(events=True, raw=True), default=str)
    for step in session.steps:
        assert step.action.strip(), "a step never renders blank"
    for target in ("asf", "atif"):
        convert(session, target, tmp_path / target)
    cert = certify(run)
    assert cert.state in ("Succeeded", "FailedUnverifiable", "FailedBlocked", "FailedBudget", "FailedSafety",
                          "FailedSpecGap", "AbortedByHuman")
