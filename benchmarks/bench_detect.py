"""Benchmark: what detection costs in a whole read of a real-sized run.

Builds (once, cached in ``benchmarks/_corpus_detect/``) a corpus of byte
copies of the shared corpus' *real* runs, not inflated: the three real
OpenHands SDK conversations (``openhands_v1/sdk_pr_artifacts/*``, 3 to 11
events, about 8 on average) and the three reconstructed OpenHands V0 trials
(``openhands_v0/reconstructed_trials/*``), each copied ``--copies`` times.

Then, in one process, run by run and round by round (interleaved, so load
from other processes hits every side alike), it times for each run:

- ``detect``: ``trajkit.registry.detect(path)`` on the run's root, as
  ``trajkit.read`` calls it;
- ``read``: ``trajkit.read(path)``, detection plus the format's read (steps
  included), what ``trajkit steps`` does before printing;
- ``named``: ``trajkit.read(path, format=NAME)``, which skips detection.

It prints per-run microseconds (min and median over the rounds) and
detection's share of the whole read, ``detect / read``, for the SDK and the V0
runs apart (goal: at most 10% on real-sized SDK conversations). ``--src``
imports trajkit from another checkout (e.g. the commit before a change) so
before/after figures come from the same script. Usage:
``.venv/bin/python benchmarks/bench_detect.py [--copies N] [--rounds R] [--src DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
SDK_REAL = SHARED / "corpus" / "openhands_v1" / "sdk_pr_artifacts"
V0_REAL = SHARED / "corpus" / "openhands_v0" / "reconstructed_trials"


def sources() -> dict[str, list[Path]]:
    sdk = sorted(p.parent for p in SDK_REAL.glob("*/*/base_state.json"))
    v0 = sorted(p for p in V0_REAL.iterdir() if p.is_dir())
    return {"openhands-sdk": sdk, "openhands-v0": v0}


def build_corpus(dest: Path, copies: int) -> dict[str, list[Path]]:
    marker = dest / f".built-{copies}"
    src = sources()
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        for fmt, runs in src.items():
            for i in range(copies):
                for r in runs:
                    # keep each run's own directory name (an SDK conversation's id)
                    shutil.copytree(r, dest / fmt / f"{i:04d}" / r.name)
        marker.write_text("ok")
    return {fmt: sorted((dest / fmt).glob(f"*/*")) for fmt in src}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=100, help="copies of each real run")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--src", type=Path, default=REPO / "src", help="import trajkit from this src/ directory")
    ap.add_argument("--corpus", type=Path, default=HERE / "_corpus_detect")
    args = ap.parse_args()
    sys.path.insert(0, str(args.src))
    import trajkit
    from trajkit import registry

    runs = build_corpus(args.corpus, args.copies)
    print(f"trajkit from {Path(trajkit.__file__).parent}")
    for fmt, paths in runs.items():
        print(f"corpus: {len(paths)} {fmt} runs in {args.corpus / fmt}")
        for p in paths[:1]:
            s = trajkit.read(p)
            assert s.format == fmt, (p, s.format)
    registry.formats()
    # time detection as read() runs it (newer trajkit: decide_only, which
    # skips formats a strong match already outranks)
    import inspect

    DETECT_KW = {"decide_only": True} if "decide_only" in inspect.signature(registry.detect).parameters else {}

    def t_detect(paths: list[Path]) -> float:
        t = time.process_time()
        for p in paths:
            registry.detect(p, **DETECT_KW)
        return time.process_time() - t

    def t_read(paths: list[Path]) -> float:
        t = time.process_time()
        for p in paths:
            trajkit.read(p)
        return time.process_time() - t

    def t_named(paths: list[Path], fmt: str) -> float:
        t = time.process_time()
        for p in paths:
            trajkit.read(p, format=fmt)
        return time.process_time() - t

    res: dict[str, dict[str, list[float]]] = {fmt: {"detect": [], "read": [], "named": []} for fmt in runs}
    gc.collect()
    for _ in range(args.rounds):
        for fmt, paths in runs.items():
            n = len(paths)
            res[fmt]["detect"].append(t_detect(paths) / n * 1e6)
            res[fmt]["read"].append(t_read(paths) / n * 1e6)
            res[fmt]["named"].append(t_named(paths, fmt) / n * 1e6)
    print(f"\nper run, microseconds, {args.rounds} interleaved rounds (min / median)")
    print(f"{'format':15} {'detect':>17} {'detect+read':>17} {'read, named':>17} {'detect share':>19}")
    for fmt, r in res.items():
        d, w, nm = r["detect"], r["read"], r["named"]
        shares = [a / b for a, b in zip(d, w)]
        print(
            f"{fmt:15} {min(d):8.0f} /{statistics.median(d):7.0f} {min(w):8.0f} /{statistics.median(w):7.0f} "
            f"{min(nm):8.0f} /{statistics.median(nm):7.0f} {min(shares):8.1%} /{statistics.median(shares):8.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
