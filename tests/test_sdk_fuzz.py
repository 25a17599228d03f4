"""Odd members of every type, everywhere: the reader, the steps and the
context rebuild never raise (seeded mutations of real conversations)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import orjson

from trajkit.formats.openhands_sdk import read, rebuild_context
from trajkit.formats.openhands_sdk.context import ContextUnavailable

CONVS = [
    "generated/localconv_condensation/0123456789abcdef0123456789abcdef",
    "generated/localconv_subagent_confirm/fedcba9876543210fedcba9876543210",
    "generated/agent_server/aaaaaaaabbbbccccddddeeeeeeeeeeee",
]
ODD = [None, 0, -1, 1.5, True, "", "x", [], [1, "a"], {}, {"kind": 3}, "__root__"]


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _mutate(obj, rng: random.Random):
    if isinstance(obj, dict) and obj and rng.random() < 0.5:
        # a whole member of the event (or state) at once
        key = rng.choice(sorted(obj))
        obj[key] = orjson.loads(orjson.dumps(rng.choice(ODD)))
        return obj
    paths = list(_paths(obj))
    if not paths:
        return obj
    path = rng.choice(paths)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[key]
    else:
        parent[key] = orjson.loads(orjson.dumps(rng.choice(ODD)))  # a fresh copy each time
    return obj


def test_mutated_conversations_never_raise(corpus: Path, tmp_path: Path):
    rng = random.Random(15)
    for round_ in range(80):
        src = corpus / "openhands_v1" / CONVS[round_ % len(CONVS)]
        dst = tmp_path / f"r{round_}" / src.name
        shutil.copytree(src, dst)
        targets = sorted(dst.rglob("event-*.json")) + sorted(dst.rglob("base_state.json"))
        for p in rng.sample(targets, k=min(6, len(targets))):
            obj = orjson.loads(p.read_bytes())
            for _ in range(rng.randint(1, 4)):
                obj = _mutate(obj, rng)
            p.write_bytes(orjson.dumps(obj))
        s = read(dst)
        assert s.format == "openhands-sdk"
        for sess in s.walk():
            try:
                entries = rebuild_context(sess)
            except ContextUnavailable:
                continue
            for e in entries:
                assert isinstance(e["messages"], list)
            sess.to_dict(events=True, raw=True)
