"""Benchmark: `steps` over SWE-agent `.traj` and mini-swe-agent `.traj.json`
runs against the orjson floor.

Builds (once, cached in benchmarks/_corpus_swe/) a corpus of byte copies of
the shared samples: the six SWE-agent trajectories (0.x text commands, 1.x
function calling, the history-only demonstration, the CTF and human-thought
demonstrations) and the four mini-swe-agent runs (two list-form files, two
real ``mini-swe-agent-1`` SWE-bench runs), each copied N times into its own
instance folder so no two runs share a path.

Then, in the same process, over several interleaved rounds, it times:

- trajkit: ``trajkit.read(path)`` — detection, decoding, normalization and
  the step rule, what ``trajkit steps`` does before printing;
- the floor: reading the run file's bytes and ``orjson.loads`` of them;
- for reference, the lenient decode every trajkit reader goes through
  (read + ``trajkit.jsonio.loads``: orjson plus the checks for integers
  beyond 64 bits, duplicate keys and deep nesting), so the share of the
  reader itself shows.

Times are CPU time of this process (``time.process_time``), so other
processes' load on a shared machine weighs less. It prints runs/s and MB/s,
and the ratios trajkit / floor and lenient decode / floor, min and median
over the rounds, per format and per sample. Usage:
``python benchmarks/bench_swe.py [--copies N] [--rounds R]``.
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
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"

import trajkit  # noqa: E402


def samples() -> list[Path]:
    return sorted((CORPUS / "swe_agent").rglob("*.traj")) + sorted((CORPUS / "mini_swe_agent").rglob("*.traj.json"))


def build_corpus(dest: Path, copies: int) -> list[Path]:
    marker = dest / f".built-{copies}"
    srcs = samples()
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for k in range(copies):
            for j, src in enumerate(srcs):
                d = dest / f"{k:04d}-{j:02d}"
                d.mkdir()
                shutil.copyfile(src, d / src.name)
        marker.write_text("ok")
    return sorted(p for d in sorted(dest.iterdir()) if d.is_dir() for p in d.iterdir())


def floor_read(path: Path) -> int:
    with open(path, "rb") as f:
        data = f.read()
    orjson.loads(data)
    return len(data)


def lenient_read(path: Path) -> int:
    from trajkit.jsonio import loads

    with open(path, "rb") as f:
        data = f.read()
    loads(data, str(path))
    return len(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=100, help="copies of each shared sample")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (min and median reported)")
    ap.add_argument("--corpus", type=Path, default=HERE / "_corpus_swe")
    args = ap.parse_args()
    t0 = time.perf_counter()
    runs = build_corpus(args.corpus, args.copies)
    print(f"corpus: {len(runs)} runs in {args.corpus} (built/checked in {time.perf_counter() - t0:.1f}s)")

    fmt: list[str] = []
    steps = 0
    for p in runs:  # a correctness pass, and each run's format
        s = trajkit.read(p)
        fmt.append(s.format)
        steps += len(s.steps)
    sizes = [p.stat().st_size for p in runs]

    clock = time.process_time

    def time_trajkit(idx: list[int]) -> float:
        start = clock()
        for i in idx:
            trajkit.read(runs[i])
        return clock() - start

    def time_with(fn, idx: list[int]) -> float:
        start = clock()
        for i in idx:
            fn(runs[i])
        return clock() - start

    groups = {"all": list(range(len(runs)))}
    for f in sorted(set(fmt)):
        groups[f"format={f}"] = [i for i, x in enumerate(fmt) if x == f]
    for name in sorted({p.name for p in runs}):
        groups[name] = [i for i, p in enumerate(runs) if p.name == name]
    print(f"{sum(sizes) / 1e6:.1f} MB, {steps} steps; {args.rounds} interleaved rounds, CPU time")
    print(f"{'runs':<40}{'n':>5}{'floor runs/s':>13}{'floor MB/s':>11}{'trajkit runs/s':>15}{'trajkit MB/s':>13}"
          f"{'ratio min':>10}{'median':>8}{'lenient min':>12}{'median':>8}")
    for name, idx in groups.items():
        tks, fls, lns = [], [], []
        for _ in range(args.rounds):  # interleaved, so load on the machine hits every side alike
            fls.append(time_with(floor_read, idx))
            lns.append(time_with(lenient_read, idx))
            tks.append(time_trajkit(idx))
        ratios = [t / f for t, f in zip(tks, fls)]
        lratios = [t / f for t, f in zip(lns, fls)]
        mb = sum(sizes[i] for i in idx) / 1e6
        fl, tk = min(fls), min(tks)
        print(f"{name[:39]:<40}{len(idx):>5}{len(idx) / fl:>13.1f}{mb / fl:>11.1f}{len(idx) / tk:>15.1f}{mb / tk:>13.1f}"
              f"{min(ratios):>9.2f}x{statistics.median(ratios):>7.2f}x{min(lratios):>11.2f}x{statistics.median(lratios):>7.2f}x")
    print("ratio = trajkit time / floor time per round (goal: <= 1.5x). floor = read + orjson.loads of the run file;")
    print("lenient = read + trajkit.jsonio.loads (the decode every reader does) / floor.")


if __name__ == "__main__":
    main()
