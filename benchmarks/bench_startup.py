"""Startup cost of a whole ``trajkit`` process (issue 15): ``trajkit steps``
on a small run against ``python -c "import trajkit"``.

Each command runs as a fresh process; its CPU time (user + system, from
``getrusage(RUSAGE_CHILDREN)``) is what is compared, since on a shared,
loaded machine wall time mostly measures the other processes. The commands
are interleaved round by round, and min / median per command are reported,
with each one's ratio to ``import trajkit``.

``--src DIR`` adds a second set of the same commands run against another
source tree (``PYTHONPATH=DIR``, e.g. a worktree of the commit before a
change), interleaved with the first, so before and after are measured
under the same load.

Bytecode: an installed package runs from cached ``.pyc`` files (pip compiles
them at install; Python writes them on first import). A process started with
``PYTHONDONTWRITEBYTECODE=1`` and no cache compiles every module it imports
from source, every time, which is a measure of the compiler, not of trajkit:
it more than doubles ``trajkit steps`` (which imports far more source than
``import trajkit``). So by default the commands run with a bytecode cache of
their own (``PYTHONPYCACHEPREFIX``, a temporary folder; nothing is written
into the source trees), filled by one warm-up round that is not counted.
``--no-bytecode-cache`` measures the environment as it is (``PYTHONDONTWRITEBYTECODE``
honoured, no warm-up), for comparison.

``--instructions`` also counts each command's instructions once under
valgrind's callgrind (when installed): a count that does not move with the
machine's load, so a change can be judged on a busy machine too (CPU time
under load inflates every process, and the ratios with it). The verdict
stays the CPU figures on a quiet machine.

    .venv/bin/python benchmarks/bench_startup.py --rounds 15
    .venv/bin/python benchmarks/bench_startup.py --rounds 15 --src /tmp/base/src
    .venv/bin/python benchmarks/bench_startup.py --rounds 5 --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "examples" / "openhands-v0-trial"


def commands(py: str, run: Path) -> dict[str, list[str]]:
    cli = [py, "-m", "trajkit"]
    return {
        "python -c pass": [py, "-c", "pass"],
        "import trajkit": [py, "-c", "import trajkit"],
        "import + formats()": [py, "-c", "import trajkit.registry as r; r.formats()"],
        "trajkit --version": cli + ["--version"],
        "steps (table)": cli + ["steps", str(run)],
        "steps --json": cli + ["steps", str(run), "--json"],
        "steps --jsonl": cli + ["steps", str(run), "--jsonl"],
    }


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-500:]}")
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def instructions_of(cmd: list[str], env: dict[str, str]) -> int:
    """The instructions ``cmd`` executes (callgrind's total; the process
    alone, as run under valgrind)."""
    with tempfile.TemporaryDirectory(prefix="trajkit-bench-cg-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO)
        if p.returncode != 0:
            raise SystemExit(f"valgrind {' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-500:]}")
        with open(out) as f:
            m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
    if m is None:
        raise SystemExit(f"no instruction total in callgrind's output for {' '.join(cmd)}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--run", type=Path, default=RUN, help="the small run `steps` reads (default: examples/openhands-v0-trial)")
    ap.add_argument("--src", type=Path, default=None, help="also time this source tree (PYTHONPATH), interleaved")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="run in the environment as it is (with PYTHONDONTWRITEBYTECODE=1 every module is compiled "
                         "from source in every process), without the warm-up round")
    ap.add_argument("--instructions", action="store_true",
                    help="also count each command's instructions once under valgrind's callgrind (load-independent)")
    args = ap.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind (callgrind) on PATH")
    with tempfile.TemporaryDirectory(prefix="trajkit-bench-pyc-") as cache:
        return _run(args, None if args.no_bytecode_cache else cache)


def _run(args: argparse.Namespace, cache: str | None) -> int:
    py = sys.executable
    base = dict(os.environ)
    if cache is not None:
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = cache
    sets = {"this tree": dict(base, PYTHONPATH=str(REPO / "src"))}
    if args.src is not None:
        sets[f"--src {args.src}"] = dict(base, PYTHONPATH=str(args.src))
    cmds = commands(py, args.run.resolve())
    times: dict[tuple[str, str], list[float]] = {(s, c): [] for s in sets for c in cmds}
    if cache is not None:  # the warm-up round: every module each command imports gets its .pyc
        for cmd in cmds.values():
            for env in sets.values():
                cpu_of(cmd, env)
    for r in range(args.rounds):
        for c, cmd in cmds.items():
            for s, env in sets.items():
                times[(s, c)].append(cpu_of(cmd, env))
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    counts: dict[tuple[str, str], int] = {}
    if args.instructions:
        for c, cmd in cmds.items():
            for s, env in sets.items():
                counts[(s, c)] = instructions_of(cmd, env)
    load = os.getloadavg()[0]
    how = "bytecode cached (one warm-up round)" if cache is not None else "environment as it is, no warm-up"
    print(f"CPU ms per process (user+sys), {args.rounds} interleaved rounds, {how}, "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    for s in sets:
        base = times[(s, "import trajkit")]
        bmin, bmed = min(base), statistics.median(base)
        print(f"\n{s}")
        print(f"{'command':22s} {'min':>7s} {'median':>7s}  {'x import (min/median)':>22s}")
        for c in cmds:
            v = times[(s, c)]
            print(f"{c:22s} {min(v) * 1000:7.1f} {statistics.median(v) * 1000:7.1f}  "
                  f"{min(v) / bmin:9.2f} / {statistics.median(v) / bmed:4.2f}")
        if counts:
            ibase = counts[(s, "import trajkit")]
            print(f"\n{'command':22s} {'instructions (M)':>17s}  {'x import':>8s}   (callgrind, one run each)")
            for c in cmds:
                print(f"{c:22s} {counts[(s, c)] / 1e6:17.1f}  {counts[(s, c)] / ibase:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
