"""Benchmark: `steps` over OpenHands V0 trial directories against the orjson floor.

Builds (once, cached in benchmarks/_corpus_v0/) a corpus of trial
directories from the shared samples: copies of the three reconstructed
terminal-bench trials, and harbor / terminal-bench trials whose streams are
stitched from the real OpenHands test trajectories (ids renumbered, causes
remapped) to realistic lengths, in every view combination (flat + events +
cache, killed runs with events only, cache-only).

Then, in the same run and process, it times:

- trajkit: ``trajkit.read(trial)`` — detection, view choice, decoding,
  normalization and step enumeration, exactly what ``trajkit steps`` does
  before printing;
- the floor: reading the same files trajkit read (``Session.files`` with
  status ``read``) and decoding each with ``orjson.loads``.

It prints trials/s and MB/s for both and the ratio trajkit/floor (goal:
within 1.5x). Usage: ``python benchmarks/bench_v0.py [--trials N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
V0 = SHARED / "corpus" / "openhands_v0"

import trajkit  # noqa: E402


def stitched_stream(n_events: int, rng: random.Random) -> list[dict]:
    """A contiguous V0 stream of about n_events, stitched from real complete streams."""
    base = json.loads((V0 / "flat_exports" / "basic_gui_mode.json").read_text())
    out: list[dict] = []
    while len(out) < n_events:
        off = len(out) - base[0]["id"]
        for e in base:
            e = json.loads(json.dumps(e))
            e["id"] += off
            if isinstance(e.get("cause"), int):
                e["cause"] += off
            out.append(e)
    return out


def flat_of(stream: list[dict]) -> list[dict]:
    return [e for e in stream if e.get("action") not in ("null", "change_agent_state")
            and e.get("observation") not in ("null", "agent_state_changed")]


def write_trial(root: Path, layout: str, stream: list[dict], views: set[str], sid: str) -> None:
    root.mkdir(parents=True)
    if layout == "tb":
        sess = root / "sessions"
        sdir = sess / "sessions" / sid
        flat_path = sess / f"{sid}.json"
        (root / "results.json").write_text(json.dumps({"instruction": "bench", "failure_mode": "unset"}, indent=4))
        sess.mkdir(parents=True)
        (sess / "agent.cast").write_text('{"version": 2}\n')
    else:
        sdir = root / "agent" / "sessions" / sid
        flat_path = root / "agent" / "openhands.trajectory.json"
        (root / "agent").mkdir(parents=True)
        (root / "result.json").write_text(json.dumps({"verifier_result": {"rewards": {"reward": 1.0}}}))
        (root / "config.json").write_text(json.dumps({"agent": {"name": "openhands"}}))
    if "flat" in views:
        flat_path.write_text(json.dumps(flat_of(stream), indent=4))
    if "events" in views:
        (sdir / "events").mkdir(parents=True)
        for e in stream:
            (sdir / "events" / f"{e['id']}.json").write_text(json.dumps(e))
    if "cache" in views:
        (sdir / "event_cache").mkdir(parents=True)
        for start in range(0, len(stream) - len(stream) % 25, 25):
            (sdir / "event_cache" / f"{start}-{start + 25}.json").write_text(json.dumps(stream[start : start + 25]))


def build_corpus(dest: Path, n: int, seed: int = 7) -> list[Path]:
    marker = dest / f".built-{n}"
    if marker.exists():
        return sorted(p for p in dest.iterdir() if p.is_dir())
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    rng = random.Random(seed)
    recon = sorted(p for p in (V0 / "reconstructed_trials").iterdir() if p.is_dir())
    combos = [{"flat", "events", "cache"}, {"flat", "events", "cache"}, {"events", "cache"}, {"events"}, {"cache"}]
    trials = []
    for i in range(n):
        t = dest / f"trial-{i:05d}"
        if i % 5 == 0:
            shutil.copytree(recon[i % len(recon)], t)
        else:
            stream = stitched_stream(rng.randint(40, 400), rng)
            write_trial(t, "tb" if i % 2 else "harbor", stream, combos[i % len(combos)], f"{i:016x}-{i:015x}")
        trials.append(t)
    for root, dirs, files in os.walk(dest):
        os.chmod(root, 0o755)
    marker.write_text("ok")
    return trials


def floor_read(paths: list[str]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        orjson.loads(data)
        n += len(data)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3, help="best of R rounds for each side")
    ap.add_argument("--corpus", type=Path, default=HERE / "_corpus_v0")
    args = ap.parse_args()
    t0 = time.perf_counter()
    trials = build_corpus(args.corpus, args.trials)
    print(f"corpus: {len(trials)} trial dirs in {args.corpus} (built/checked in {time.perf_counter() - t0:.1f}s)")

    # What trajkit reads per trial, for the floor (and a correctness pass).
    files: list[list[str]] = []
    views: list[str] = []
    steps = 0
    for t in trials:
        s = trajkit.read(t)
        files.append([f.path for f in s.files if f.status == "read"])
        views.append(s.view or "none")
        steps += len(s.steps)
    sizes = [sum(os.path.getsize(p) for p in fs) for fs in files]

    def time_trajkit(idx: list[int]) -> float:
        start = time.perf_counter()
        for i in idx:
            trajkit.read(trials[i])
        return time.perf_counter() - start

    def time_floor(idx: list[int]) -> float:
        start = time.perf_counter()
        for i in idx:
            floor_read(files[i])
        return time.perf_counter() - start

    groups = {"all": list(range(len(trials)))}
    for v in sorted(set(views)):
        groups[f"view={v}"] = [i for i, x in enumerate(views) if x == v]
    print(f"files read: {sum(map(len, files))}, {sum(sizes) / 1e6:.1f} MB, {steps} steps; best of {args.rounds} interleaved rounds")
    print(f"{'trials':<22}{'n':>6}{'floor trials/s':>16}{'floor MB/s':>12}{'trajkit trials/s':>18}{'trajkit MB/s':>14}{'ratio':>8}")
    for name, idx in groups.items():
        tk = fl = float("inf")
        for _ in range(args.rounds):  # interleaved, so load on the machine hits both sides alike
            fl = min(fl, time_floor(idx))
            tk = min(tk, time_trajkit(idx))
        mb = sum(sizes[i] for i in idx) / 1e6
        print(f"{name:<22}{len(idx):>6}{len(idx) / fl:>16.1f}{mb / fl:>12.1f}{len(idx) / tk:>18.1f}{mb / tk:>14.1f}{tk / fl:>7.2f}x")
    print("ratio = trajkit time / floor time (goal: <= 1.5x). floor = read + orjson.loads of the files trajkit read.")


if __name__ == "__main__":
    main()
