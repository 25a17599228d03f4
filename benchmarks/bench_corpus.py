"""Benchmark: `trajkit index` over 10,000 mixed runs (issue 12).

Builds (once, cached in benchmarks/_corpus_index/) a corpus of N runs (default
10,000) from every run that :func:`trajkit.corpus.discover` finds in the
shared samples (``../shared/corpus``: OpenHands V0 trials and flat exports,
SDK conversations, rollout traces, and every newer format as it lands),
copied round-robin (hard links) into ``runs/gNNN/`` folders of 100 runs.

Then, in the same run, each in a fresh driver process (so each driver's
peak RSS is its own):

- discovery of all N runs (``discover``);
- a full index with ``--engine serial`` and with ``process -j2``: the ratio
  (goal: process at least 1.8x faster);
- re-indexing the unchanged corpus (goal: at most 5% of the full index);
- the driver's peak RSS indexing the first 1,000 runs and all N (goal: at
  most 10% growth);
- ``--engine ray`` (local, 2 CPUs) against ``process -j2``: Ray's overhead on
  one machine (reported, expected to lose).

Bytecode: an installed trajkit runs from cached ``.pyc`` files (pip compiles
them at install). With ``PYTHONDONTWRITEBYTECODE=1`` and no cache (as in this
environment) every process compiles every module it imports from source, every
time: about 0.4 s of CPU per process, paid once by the serial engine and again by
the process engine's forkserver and workers. So by default every driver runs
with a bytecode cache of its own (``PYTHONPYCACHEPREFIX``, a temporary folder,
filled by a warm-up that is not counted; nothing is written into the source
tree); ``--no-bytecode-cache`` measures the environment as it is.

``--rounds N`` repeats the discovery / serial / process / re-index steps N times,
interleaved (each round indexes into fresh folders), and reports min and
median of each figure: on a shared machine the minimum wall time is the one
least disturbed by the other processes.

Usage: ``.venv/bin/python benchmarks/bench_corpus.py [--runs N] [--rounds N] [--no-ray] [--no-bytecode-cache]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
CORPUS = HERE / "_corpus_index"

DRIVER = r"""
import json, resource, sys, time
sys.path.insert(0, {src!r})
what, roots, out, engine, jobs = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
t = time.perf_counter()
if what == "discover":
    from trajkit.corpus import discover
    n = len(discover(roots))
    extra = {{}}
else:
    from trajkit.corpus.index import build
    r = build(roots, out, engine=engine, jobs=jobs)
    n = r.found
    extra = {{"indexed": r.indexed, "skipped": r.skipped, "runs_read": r.runs_read, "unreadable": r.unreadable}}
dt = time.perf_counter() - t
self_ru = resource.getrusage(resource.RUSAGE_SELF)
cpu = self_ru.ru_utime + self_ru.ru_stime
print(json.dumps({{"n": n, "seconds": dt, "driver_cpu": cpu, "rss_mb": self_ru.ru_maxrss / 1024, **extra}}))
"""


def samples() -> list[Path]:
    sys.path.insert(0, str(REPO / "src"))
    from trajkit.corpus import discover
    from trajkit.registry import split_member

    out: list[Path] = []
    for r in discover([SHARED / "corpus"]):
        p = Path(os.path.abspath(split_member(r.path)[0]))  # a container's sessions: the container, once
        if p not in out:
            out.append(p)
    return out


def build_corpus(n: int) -> Path:
    root = CORPUS / f"runs-{n}"
    stamp = root / ".built"
    if stamp.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    src = samples()
    print(f"building {n} runs from {len(src)} samples into {root} ...", flush=True)
    for i in range(n):
        s = src[i % len(src)]
        d = root / f"g{i // 100:03d}" / f"r{i:05d}-{s.name}"
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d, copy_function=os.link, symlinks=True)
        else:
            os.link(s, d)
    stamp.write_text(json.dumps({"runs": n, "samples": [str(p) for p in src]}))
    return root


def _subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), so the
    CPU time of the process engine's workers is counted: they are started by a
    forkserver, not by the driver, and the forkserver outlives the driver by a
    moment, so neither the driver's RUSAGE_CHILDREN nor ours would see them."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return False


def _reap(limit: float = 30.0) -> None:
    """Wait (at most ``limit`` seconds) for every descendant left to us: the
    forkserver, which exits once the driver is gone."""
    end = time.monotonic() + limit
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > end:
                return
            time.sleep(0.02)


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


ENV: dict[str, str] = dict(os.environ)


def drive(what: str, roots: list[str], out: str = "", engine: str = "process", jobs: int = 2) -> dict:
    code = DRIVER.format(src=str(REPO / "src"))
    _reap()
    before = _children_cpu()
    p = subprocess.run([sys.executable, "-c", code, what, json.dumps(roots), out, engine, str(jobs)],
                       capture_output=True, text=True, cwd=REPO, env=ENV)
    _reap()
    if p.returncode != 0:
        raise SystemExit(f"{what} {engine} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["cpu"] = _children_cpu() - before  # the driver and every process it started (workers via the forkserver)
    return r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds of serial / process / re-index")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="run the drivers in the environment as it is (with PYTHONDONTWRITEBYTECODE=1 every "
                         "process compiles every module it imports)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="trajkit-bench-pyc-") as cache:
        if not a.no_bytecode_cache:
            ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            ENV["PYTHONPYCACHEPREFIX"] = cache
        return _main(a)


def _main(a: argparse.Namespace) -> int:
    counted = _subreaper()
    root = build_corpus(a.runs)
    groups = sorted(str(p) for p in root.iterdir() if p.is_dir())
    first_1k = groups[: max(1, 1000 // 100)]
    work = CORPUS / "out"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if not a.no_bytecode_cache:  # the warm-up: every module a driver, the forkserver and a worker import
        drive("index", first_1k[:1], str(work / "warm"), "process", 2)
        drive("index", first_1k[:1], str(work / "warm-serial"), "serial", 1)
    rounds: dict[str, list[dict]] = {}

    def step(name: str, *args: object) -> None:
        rounds.setdefault(name, []).append(drive(*args))  # type: ignore[arg-type]

    for i in range(max(1, a.rounds)):
        step("discover", "discover", [str(root)])
        step("serial", "index", [str(root)], str(work / f"serial-{i}"), "serial", 1)
        step("process", "index", [str(root)], str(work / f"process-{i}"), "process", 2)
        step("reindex", "index", [str(root)], str(work / f"process-{i}"), "process", 2)
    step("process_1k", "index", first_1k, str(work / "p1k"), "process", 2)
    if not a.no_ray:
        step("ray", "index", [str(root)], str(work / "ray"), "ray", 2)

    def best(k: str) -> dict:  # the least disturbed round: the fastest
        return min(rounds[k], key=lambda r: r["seconds"])

    res = {k: best(k) for k in rounds}
    n = res["serial"]["n"]
    print(f"\n{n:,} runs ({res['serial']['runs_read']:,} read, {res['serial']['unreadable']} unreadable); "
          f"{max(1, a.rounds)} round(s), the fastest of each step shown"
          f"{'' if a.no_bytecode_cache else '; bytecode cached'}")
    print(f"{'step':<16}{'wall s':>10}{'runs/s':>10}{'CPU s (all procs)':>20}{'driver CPU s':>14}{'driver RSS MB':>15}")
    for k in res:
        r = res[k]
        print(f"{k:<16}{r['seconds']:>10.2f}{r['n'] / r['seconds']:>10.0f}{r['cpu']:>20.2f}{r['driver_cpu']:>14.2f}"
              f"{r['rss_mb']:>15.0f}")
    if not counted:  # pragma: no cover - not Linux
        print("(not a Linux subreaper: 'all procs' misses the process engine's forkserver workers)")
    print(f"(load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")

    speedups = [rounds["serial"][i]["seconds"] / rounds["process"][i]["seconds"] for i in range(len(rounds["serial"]))]
    reind = [rounds["reindex"][i]["seconds"] / rounds["process"][i]["seconds"] * 100 for i in range(len(rounds["serial"]))]
    reind_cpu = [rounds["reindex"][i]["cpu"] / rounds["serial"][i]["cpu"] * 100 for i in range(len(rounds["serial"]))]
    growth = res["process"]["rss_mb"] / res["process_1k"]["rss_mb"] - 1
    many = len(speedups) > 1
    print()
    print(f"process -j2 vs serial: {max(speedups):.2f}x"
          + (f" best round, {statistics.median(speedups):.2f}x median of {len(speedups)}" if many else "")
          + " (goal >= 1.8x)")
    # CPU against the serial index: the process engine's workers come from a forkserver, not from the
    # driver, so the driver's rusage does not count them
    print(f"re-index unchanged: {min(reind):.1f}% of the full index"
          + (f" best round, {statistics.median(reind):.1f}% median" if many else "")
          + f" (goal <= 5%); CPU: {min(reind_cpu):.1f}% of the serial index's CPU")
    print(f"driver peak RSS 1k -> {n // 1000}k: {res['process_1k']['rss_mb']:.0f} -> {res['process']['rss_mb']:.0f} MB, "
          f"{growth * 100:+.1f}% (goal <= 10%)")
    disc = [r["seconds"] for r in rounds["discover"]]
    print(f"discovery of {n:,} runs: {min(disc):.2f}s"
          + (f" best round, {statistics.median(disc):.2f}s median" if many else "")
          + f"; CPU {min(r['cpu'] for r in rounds['discover']):.2f}s best (goal <= 2 s; the driver's import of trajkit counted)")
    if "ray" in res:
        print(f"ray (local, 2 CPUs) vs process -j2: {res['ray']['seconds'] / res['process']['seconds']:.2f}x the time "
              f"(+{res['ray']['seconds'] - res['process']['seconds']:.1f}s)")
    (work / "results.json").write_text(json.dumps(rounds, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
