"""Benchmark: indexing runs inside a run archive against the same runs on disk.

Builds (once, cached in ``benchmarks/_corpus_archive/``) byte copies of the
shared corpus' real runs, not inflated: the three real OpenHands SDK
conversations (``openhands_v1/sdk_pr_artifacts/*``) and the three
reconstructed OpenHands V0 trials, each copied ``--copies`` times, as a
folder ``runs/`` and as ``runs.tar.gz`` and ``runs.zip`` of that folder.

Then, in one process, round by round (interleaved, so load from other
processes hits every side alike), it times the index task
(:class:`trajkit.corpus.tasks.IndexTask`, what ``trajkit index`` runs in
each worker) over:

- ``disk``: every run of the folder, one unit each (found by ``discover``
  beforehand, outside the timing);
- ``disk+find``: the same, ``discover`` over the folder included (what an
  index of the folder costs in all: the driver finds, the workers read);
- ``tar.gz`` / ``zip``: the archive as one unit: its members are
  decompressed, grouped, and each group's runs found and read in memory.

It prints per-run CPU microseconds (``time.process_time``: this process
only, system time included) as min and median over the rounds, and each
archive's ratio to ``disk+find``. The archive's extra is decompression and
the grouping of the members. ``--src`` imports trajkit from
another checkout (e.g. the commit before a change) so before/after figures
come from the same script. Usage:
``.venv/bin/python benchmarks/bench_archive.py [--copies N] [--rounds R] [--src DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tarfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
SDK_REAL = SHARED / "corpus" / "openhands_v1" / "sdk_pr_artifacts"
V0_REAL = SHARED / "corpus" / "openhands_v0" / "reconstructed_trials"


def build(dest: Path, copies: int) -> Path:
    """``dest/x<copies>/`` holding ``runs/``, ``runs.tar.gz`` and ``runs.zip``."""
    out = dest / f"x{copies}"
    if (out / ".built").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    runs = out / "runs"
    sdk = sorted(p.parent for p in SDK_REAL.glob("*/*/base_state.json"))
    v0 = sorted(p for p in V0_REAL.iterdir() if p.is_dir())
    for i in range(copies):
        for r in sdk:
            shutil.copytree(r, runs / f"sdk-{i:04d}" / r.name)
        for r in v0:
            shutil.copytree(r, runs / f"v0-{i:04d}" / r.name)
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tf:
        tf.add(runs, arcname="runs")
    with zipfile.ZipFile(out / "runs.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(runs.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(out).as_posix())
    (out / ".built").write_text("ok")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=20, help="copies of each real run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--src", type=Path, default=REPO / "src", help="import trajkit from this src/ directory")
    ap.add_argument("--corpus", type=Path, default=HERE / "_corpus_archive")
    args = ap.parse_args()
    sys.path.insert(0, str(args.src))
    import trajkit
    from trajkit.corpus.discover import discover
    from trajkit.corpus.index import unit_of
    from trajkit.corpus.tasks import IndexOptions, IndexTask, Unit

    base = build(args.corpus, args.copies)
    runs = base / "runs"
    units = [unit_of(ref, str(runs)) for ref in discover([runs])]
    arcs = {k: Unit(path=str(base / f"runs.{k}"), source=f"x/runs.{k}", root=str(base), rel=f"runs.{k}", archive=True)
            for k in ("tar.gz", "zip")}
    task = IndexTask(IndexOptions())
    n = len(units)

    def disk() -> int:
        return sum(task(u).runs for u in units)

    def disk_find() -> int:
        return sum(task(unit_of(ref, str(runs))).runs for ref in discover([runs]))

    sides = {"disk": disk, "disk+find": disk_find, **{k: (lambda u=u: task(u).runs) for k, u in arcs.items()}}
    for name, fn in sides.items():  # warm up, and check every side reads every run
        got = fn()
        if got != n:
            print(f"{name}: {got} runs read, {n} expected", file=sys.stderr)
            return 1
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            gc.collect()
            t0 = time.process_time()
            fn()
            times[name].append((time.process_time() - t0) / n * 1e6)
    load = os.getloadavg()[0]
    print(f"trajkit from {Path(trajkit.__file__).parent}")
    print(f"{n} real-sized runs ({args.copies} copies of 3 SDK conversations and 3 V0 trials); index task CPU time per run, "
          f"{args.rounds} interleaved rounds, load {load:.1f}")
    for name, ts in times.items():
        print(f"  {name:9s} min {min(ts):8.1f} us  median {statistics.median(ts):8.1f} us")
    for name in arcs:
        print(f"  {name} / disk+find: {min(times[name]) / min(times['disk+find']):.2f}x (min)  "
              f"{statistics.median(times[name]) / statistics.median(times['disk+find']):.2f}x (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
