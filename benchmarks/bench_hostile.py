"""Benchmark: what hostile-but-readable input costs (issue 16 items 11, 23, 24).

1. An unreadable parent. A conversation of N SDK events (default 20,000)
   that all name one parent is read twice: once with that parent readable,
   once with its event file cut (every event is then bridged to the event
   read before the lost file). The ratio unreadable/readable must stay near
   1 (it was 13x at 20,000 events while the bridge scanned every earlier
   event for each child: quadratic).
2. The cheap JSON checks. ``jsonio.fast_loads`` (orjson plus the checks for
   integers beyond 64 bits, duplicate keys and deep nesting) against plain
   ``orjson.loads`` over every event file of the SDK benchmark corpus and the
   JSON files of the shared corpus (compact and pretty-printed).

Usage: ``.venv/bin/python benchmarks/bench_hostile.py [--events N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

from trajkit import jsonio  # noqa: E402
from trajkit.formats import openhands_sdk  # noqa: E402

EXAMPLE = REPO / "examples" / "openhands-sdk-conversation"
SHARED = REPO.parent / "shared" / "corpus"


def build(dst: Path, n: int) -> tuple[Path, str]:
    """A conversation whose first event is followed by ``n`` events naming it as parent."""
    shutil.copytree(EXAMPLE, dst)
    events = dst / "events"
    first = sorted(events.glob("event-*.json"))
    template = orjson.loads(first[1].read_bytes())
    for p in first[2:]:
        p.unlink()
    parent = first[1]
    pid = template["id"]
    for k in range(n):
        eid = str(uuid.UUID(int=k + 1))
        ev = dict(template, id=eid, parent_id=pid)
        (events / f"event-{k + 2:05d}-{eid}.json").write_bytes(orjson.dumps(ev))
    state = orjson.loads((dst / "base_state.json").read_bytes())
    state.pop("leaf_event_id", None)
    (dst / "base_state.json").write_bytes(orjson.dumps(state))
    return parent, pid


def time_read(conv: Path, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        openhands_sdk.read(conv)
        best = min(best, time.perf_counter() - t)
    return best


def bench_unreadable_parent(n: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "readable"
        parent, _ = build(good, n)
        bad = Path(tmp) / "unreadable"
        shutil.copytree(good, bad)
        (bad / "events" / parent.name).write_bytes(b'{"id": "cut')
        s = openhands_sdk.read(bad)
        bridged = sum(d.code == "sdk.parent-unreadable" for d in s.diagnostics)
        assert bridged == n, bridged
        a = time_read(good, rounds)
        b = time_read(bad, rounds)
        print(f"{n} events sharing one parent: readable {a:.3f}s, unreadable {b:.3f}s, ratio {b / a:.2f}x (was 13x)")


def bench_json_checks(rounds: int) -> None:
    files = sorted((HERE / "_corpus_v1").rglob("*.json"))[:20000] if (HERE / "_corpus_v1").is_dir() else []
    files += sorted(SHARED.rglob("*.json"))
    datas = []
    for p in files:
        data = p.read_bytes()
        try:
            orjson.loads(data)
        except ValueError:
            continue
        datas.append(data)
    mb = sum(map(len, datas)) / 1e6

    def run(f) -> float:
        t = time.perf_counter()
        for d in datas:
            try:
                f(d)
            except ValueError:
                pass
        return time.perf_counter() - t

    ratios = []
    for _ in range(rounds):
        a = run(orjson.loads)
        b = run(jsonio.fast_loads)
        ratios.append(b / a)
    ratios.sort()
    suspicious = sum(1 for d in datas if jsonio.suspicious(d, orjson.loads(d)))
    print(
        f"{len(datas)} JSON files, {mb:.1f} MB: fast_loads / orjson.loads median {ratios[len(ratios) // 2]:.2f}x "
        f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}); {suspicious} file(s) decoded a second time"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    bench_unreadable_parent(a.events, a.rounds)
    bench_json_checks(max(a.rounds, 5))


if __name__ == "__main__":
    main()
