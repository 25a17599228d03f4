"""Benchmark on real-sized V0 runs (issue 15): ``trajkit.read`` (detect +
read + steps) against the orjson floor and against the reference step rule
(:mod:`reference_v0`, agent-eval's ``openhands_sessions`` as the format note
states it), all three in the same process, interleaved round by round.

The corpus is the shared samples as they are, not inflated: the
reconstructed terminal-bench trials and the flat exports of
``shared/corpus/openhands_v0``, each byte-copied ``--copies`` times (cached
in ``benchmarks/_corpus_v0_real/``, git-ignored).

Timed per run, CPU time (``time.process_time``: on a shared machine wall
time mostly measures other processes), min and median over ``--rounds``:

- trajkit: ``trajkit.read(run)``, what ``trajkit steps`` does before printing;
- floor: reading the files trajkit read (``Session.files`` with status
  ``read``) and ``orjson.loads`` of each;
- named: ``trajkit.read(run, format="openhands-v0")``, the same without
  detection (what the detection share of the first line is);
- reference: :func:`reference_v0.steps_of` (stdlib ``json``);
- checked floor: the floor plus trajkit's lossless check of each decoded
  file (``jsonio.suspicious``: the proof that orjson lost no duplicate key
  and bent no integer, whose diagnostics ``trajkit steps --json`` prints),
  the least a read that decodes and checks every file costs.

Before timing, every run's steps are checked equal under both (count and
each step's action and observation event ids). Goals: trajkit <= 1.6x the
floor, and >= 3x faster than the reference.

    .venv/bin/python benchmarks/bench_v0_real.py [--copies 100] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE))
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
V0 = SHARED / "corpus" / "openhands_v0"

import reference_v0  # noqa: E402
import trajkit  # noqa: E402


def samples() -> list[Path]:
    trials = sorted(p for p in (V0 / "reconstructed_trials").iterdir() if p.is_dir())
    flats = sorted((V0 / "flat_exports").glob("*.json"))
    return trials + flats


def build(copies: int) -> list[Path]:
    out = HERE / "_corpus_v0_real" / f"x{copies}"
    stamp = out / ".done"
    srcs = samples()
    runs = [out / f"{i:04d}" / s.name for i in range(copies) for s in srcs]
    if stamp.exists():
        return runs
    shutil.rmtree(out, ignore_errors=True)
    for i in range(copies):
        for s in srcs:
            dst = out / f"{i:04d}" / s.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if s.is_dir():
                shutil.copytree(s, dst, ignore=shutil.ignore_patterns("EXPECTED.json"))
            else:
                shutil.copy2(s, dst)
    stamp.write_text("ok")
    return runs


def run_trajkit(runs):
    for r in runs:
        trajkit.read(r)


def run_named(runs):
    for r in runs:
        trajkit.read(r, format="openhands-v0")


def run_reference(runs):
    for r in runs:
        reference_v0.steps_of(str(r))


def run_floor(files_per_run):
    for files in files_per_run:
        for f in files:
            with open(f, "rb") as fh:
                orjson.loads(fh.read())


def run_checked_floor(files_per_run):
    from trajkit.jsonio import suspicious

    for files in files_per_run:
        for f in files:
            with open(f, "rb") as fh:
                data = fh.read()
            suspicious(data, orjson.loads(data))


def check(runs) -> list[list[str]]:
    """Steps equal under trajkit and the rule; returns the files each trajkit read."""
    files = []
    for r in runs:
        s = trajkit.read(r)
        ref = reference_v0.steps_of(str(r))
        got = [(st.action_event_id, st.observation_event_id) for st in s.steps]
        want = [(st["action_event_id"], st["observation_event_id"]) for st in ref]
        if got != want:
            raise SystemExit(f"{r}: trajkit and the reference rule disagree: {len(got)} vs {len(want)} steps")
        files.append([f.path for f in s.files if f.status == "read" and f.path.endswith(".json")])
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    runs = build(args.copies)
    files = check(runs)
    size = sum(os.path.getsize(f) for fs in files for f in fs)
    t: dict[str, list[float]] = {"floor": [], "trajkit": [], "named": [], "reference": [], "checked": []}
    for _ in range(args.rounds):
        for name, fn, arg in (("floor", run_floor, files), ("trajkit", run_trajkit, runs), ("named", run_named, runs),
                              ("reference", run_reference, runs), ("checked", run_checked_floor, files)):
            c0 = time.process_time()
            fn(arg)
            t[name].append(time.process_time() - c0)
    n = len(runs)
    print(f"{n} real-sized V0 runs ({len(samples())} samples x {args.copies}; {size / n / 1024:.1f} KB of JSON read per run); "
          f"CPU time per run, {args.rounds} interleaved rounds, load {os.getloadavg()[0]:.1f}")
    for name, v in t.items():
        print(f"  {name:10s} min {min(v) / n * 1e6:8.1f} us  median {statistics.median(v) / n * 1e6:8.1f} us")
    fm, fmed = min(t["floor"]), statistics.median(t["floor"])
    tm, tmed = min(t["trajkit"]), statistics.median(t["trajkit"])
    rm, rmed = min(t["reference"]), statistics.median(t["reference"])
    nm, nmed = min(t["named"]), statistics.median(t["named"])
    print(f"  trajkit / floor:     {tm / fm:.2f}x (min)  {tmed / fmed:.2f}x (median)   goal <= 1.6x")
    print(f"  named / floor:       {nm / fm:.2f}x (min)  {nmed / fmed:.2f}x (median)   (format named: no detection)")
    print(f"  reference / trajkit: {rm / tm:.2f}x (min)  {rmed / tmed:.2f}x (median)   goal >= 3x")
    cm, cmed = min(t["checked"]), statistics.median(t["checked"])
    print(f"  checked floor / floor: {cm / fm:.2f}x (min)  {cmed / fmed:.2f}x (median)   (the floor plus the lossless check)")
    print(f"  named / checked floor: {nm / cm:.2f}x (min)  {nmed / cmed:.2f}x (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
