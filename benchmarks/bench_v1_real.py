"""Benchmark on real-sized OpenHands SDK (V1) conversations (issue 15):
``trajkit.read`` (detect + the full lossless read: events, views, tree,
usage, steps, sub-agents) against the orjson floor and, when the SDK is
installed, against openhands-sdk's own ``EventLog``, in the same process,
interleaved round by round.

The corpus is the shared corpus' real conversations as they are, not
inflated: the three of ``openhands_v1/sdk_pr_artifacts`` (3-11 events) and the
three written by openhands-sdk 1.58.2 in ``openhands_v1/generated`` (12-20
events, one with a sub-agent), each byte-copied ``--copies`` times (cached in
``benchmarks/_corpus_v1_real/``, git-ignored). ``bench_v1.py`` keeps the
large synthetic corpus (20-400 stitched events) as a second figure.

Timed per conversation, CPU time (``time.process_time``: on a shared machine
wall time mostly measures other processes), min and median over ``--rounds``
interleaved rounds whose order rotates:

- trajkit: ``trajkit.read(conv)``, what ``trajkit steps`` does before printing;
- floor: reading the files trajkit read (``Session.files`` with status
  ``read``, sub-agents included) and ``orjson.loads`` of each;
- checked floor: the floor plus trajkit's lossless check of each decoded
  file (``jsonio.suspicious``: orjson writes it back and compares), the
  least a read that proves every file lost nothing costs;
- named: ``trajkit.read(conv, format="openhands-sdk")``, no detection;
- EventLog (Python >= 3.12 with ``openhands-sdk`` and ``openhands-tools``):
  ``list(EventLog(LocalFileStore(conv), "events"))`` for the conversation and
  each sub-agent, every event validated into the SDK's pydantic classes (the
  tool classes imported first, as the SDK needs to resolve action and
  observation kinds), in its steady state (imported and warmed up). It does
  not read ``base_state.json`` nor build steps, so it does less than trajkit.

The EventLog needs Python >= 3.12, trajkit's venv may be older: the script
then re-executes itself under ``--sdk-python`` (default
``/work/venv-ohsdk/bin/python``, or ``$TRAJKIT_SDK_PYTHON``), with this
tree's ``src`` first on ``sys.path``, and that process times all three on the
same copies. Make that venv with
``python3.12 -m venv V && V/bin/pip install openhands-sdk openhands-tools``
(trajkit's core dependencies come with it or are installed with
``V/bin/pip install orjson click rich rfc8785``). Without it the comparison
is skipped with a note.

Goals (CPU medians): trajkit <= 1.5x the floor, and >= 3x faster than the EventLog.

Peak memory (``--memory 1000,4000,16000``, the default; ``--memory 0`` skips
it): a fresh process reads that many distinct conversations one after the
other (the six samples again, each conversation in its own folder, its files
hard links to one copy: cached in ``benchmarks/_corpus_v1_real/mem``), as a
batch that keeps no session does, and reports its peak RSS (``ru_maxrss``)
once each count is reached, and the same before the first read (imports and
the run list). Goal: flat, the peak does not grow with the number read.

    .venv/bin/python benchmarks/bench_v1_real.py [--copies 100] [--rounds 7] [--src DIR] [--no-sdk] [--memory N,N,...]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
V1 = SHARED / "corpus" / "openhands_v1"
SDK_PYTHON = os.environ.get("TRAJKIT_SDK_PYTHON", "/work/venv-ohsdk/bin/python")


def samples() -> list[Path]:
    """The real conversations of the shared corpus (not the hand-built certifier fixtures)."""
    out = sorted(p.parent for p in (V1 / "sdk_pr_artifacts").glob("*/*/base_state.json"))
    out += sorted(p.parent for p in (V1 / "generated").glob("*/*/base_state.json"))
    return out


def build(copies: int) -> list[Path]:
    out = HERE / "_corpus_v1_real" / f"x{copies}"
    stamp = out / ".done"
    srcs = samples()
    # keep each conversation's own directory name (its id)
    runs = [out / f"{i:04d}" / f"{k}" / s.name for i in range(copies) for k, s in enumerate(srcs)]
    if stamp.exists():
        return runs
    shutil.rmtree(out, ignore_errors=True)
    for dst, s in zip(runs, srcs * copies):
        shutil.copytree(s, dst)
    stamp.write_text("ok")
    return runs


def build_many(n: int) -> list[Path]:
    """``n`` distinct conversation folders (the samples in turn), every file
    a hard link to the sample's (a byte copy when links are refused)."""
    out = HERE / "_corpus_v1_real" / "mem"
    srcs = samples()
    runs = [out / f"{i // 1000:03d}" / f"{i:05d}" / srcs[i % len(srcs)].name for i in range(n)]
    stamp = out / f".done-{n}"
    if stamp.exists():
        return runs
    for dst, s in zip(runs, srcs * (n // len(srcs) + 1)):
        if dst.exists():
            continue
        shutil.copytree(s, dst, copy_function=_link)
    stamp.write_text("ok")
    return runs


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def memory_child(counts: list[int]) -> dict:
    """Peak RSS (KiB) before reading and once each count of conversations is read."""
    import resource

    import trajkit

    runs = build_many(max(counts))
    for r in runs:  # a Path keeps its text and parts once asked: ask now, so the list's own growth is not counted
        str(r), r.parts
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # noqa: E731 (KiB on Linux)
    out = {"python": sys.version.split()[0], "start": peak(), "peaks": [], "cpu": []}
    read = trajkit.read
    done = 0
    c0 = time.process_time()
    for n in sorted(counts):
        for r in runs[done:n]:
            read(r)
        done = n
        out["peaks"].append((n, peak()))
        out["cpu"].append((n, time.process_time() - c0))
    return out


def memory(counts: list[int], src: Path) -> dict | None:
    """:func:`memory_child` in a fresh process (this one has held the timing corpus)."""
    cmd = [sys.executable, __file__, "--memory-child", ",".join(map(str, counts)), "--src", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"\nmemory measure failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report_memory(res: dict, out=sys.stdout) -> None:
    p = lambda *a: print(*a, file=out)  # noqa: E731
    start = res["start"] / 1024
    p(f"\nPeak memory (Python {res['python']}, a fresh process reading distinct conversations one after the other, none kept):")
    p(f"  before the first read: peak RSS {start:.1f} MB")
    prev = None
    for (n, kib), (_, cpu) in zip(res["peaks"], res["cpu"]):
        mb = kib / 1024
        grow = f"  ({mb - prev:+.1f} MB since the previous count)" if prev is not None else ""
        p(f"  after {n:6d} conversations: peak RSS {mb:.1f} MB, {mb - start:.1f} MB over the start{grow}; {cpu / n * 1e6:.0f} us CPU per conversation so far")
        prev = mb
    first, last = res["peaks"][0][1] / 1024, res["peaks"][-1][1] / 1024
    p(f"  peak {res['peaks'][0][0]} -> {res['peaks'][-1][0]} conversations: {first:.1f} -> {last:.1f} MB ({last - first:+.1f} MB)   goal: flat")


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def measure(runs: list[Path], rounds: int, with_sdk: bool) -> dict:
    import orjson

    import trajkit
    from trajkit.jsonio import suspicious

    loads = orjson.loads
    refused: list[str] = []
    if with_sdk:
        # the EventLog only reads what its own SDK version knows: a conversation
        # holding a newer event kind is left out of all three sides alike
        runs, refused = sdk_readable(runs)
    files = []
    events = 0
    for r in runs:
        s = trajkit.read(r)
        if s.format != "openhands-sdk":
            raise SystemExit(f"{r}: read as {s.format}")
        files.append([f.path for x in s.walk() for f in x.files if f.status == "read"])
        events += sum(len(x.events) for x in s.walk())
    size = sum(os.path.getsize(f) for fs in files for f in fs)

    def t_floor() -> None:
        for fs in files:
            for f in fs:
                with open(f, "rb") as fh:
                    loads(fh.read())

    def t_checked() -> None:
        for fs in files:
            for f in fs:
                with open(f, "rb") as fh:
                    data = fh.read()
                suspicious(data, loads(data))

    def t_trajkit() -> None:
        read = trajkit.read
        for r in runs:
            read(r)

    def t_named() -> None:
        read = trajkit.read
        for r in runs:
            read(r, format="openhands-sdk")

    jobs = {"floor": t_floor, "checked": t_checked, "trajkit": t_trajkit, "named": t_named}
    if with_sdk:
        jobs["eventlog"] = eventlog_job(runs, events)
    times: dict[str, list[float]] = {k: [] for k in jobs}
    names = list(jobs)
    for k in names:  # warm up: imports, caches, the SDK's discriminated unions
        jobs[k]()
    gc.collect()
    for i in range(rounds):
        for j in range(len(names)):
            k = names[(i + j) % len(names)]
            c0 = time.process_time()
            jobs[k]()
            times[k].append(time.process_time() - c0)
    return {
        "python": sys.version.split()[0],
        "trajkit": str(Path(trajkit.__file__).parent),
        "runs": len(runs),
        "events": events,
        "files": sum(len(fs) for fs in files),
        "bytes": size,
        "rounds": rounds,
        "load": os.getloadavg()[0],
        "times": times,
        "refused": refused,
    }


def _sdk_imports():
    import openhands.tools  # noqa: F401  (the tool classes: the SDK resolves action and observation kinds among them)
    from openhands.sdk.conversation.event_store import EventLog
    from openhands.sdk.io import LocalFileStore

    for mod in ("openhands.tools.preset.default", "openhands.tools.file_editor", "openhands.tools.terminal",
                "openhands.tools.task_tracker", "openhands.tools.delegate", "openhands.tools.task"):
        try:
            __import__(mod)
        except ImportError:
            pass
    return EventLog, LocalFileStore


def _sdk_dirs(r: Path) -> list[str]:
    """The conversation and its sub-agents, as the SDK would open each."""
    out = [str(r)]
    sub = r / "subagents"
    if sub.is_dir():
        out.extend(str(p) for p in sorted(sub.iterdir()) if (p / "events").is_dir())
    return out


def sdk_readable(runs: list[Path]) -> tuple[list[Path], list[str]]:
    """The runs whose every event the installed SDK validates, and why the others are not."""
    EventLog, LocalFileStore = _sdk_imports()
    ok, refused, verdict = [], [], {}
    for r in runs:
        key = r.name  # copies of one sample share its verdict
        if key not in verdict:
            try:
                for c in _sdk_dirs(r):
                    list(EventLog(LocalFileStore(c), "events"))
                verdict[key] = None
            except Exception as e:  # noqa: BLE001 - the SDK's own validation error
                verdict[key] = f"{key}: {type(e).__name__}: {str(e).splitlines()[1].strip() if len(str(e).splitlines()) > 1 else e}"
                refused.append(verdict[key][:240])
        if verdict[key] is None:
            ok.append(r)
    return ok, refused


def eventlog_job(runs: list[Path], trajkit_events: int):
    """The SDK's own read of each conversation's events (and its sub-agents'):
    a fresh ``LocalFileStore`` (its read cache is per instance) and ``EventLog``
    per directory, every event validated into the SDK's classes."""
    EventLog, LocalFileStore = _sdk_imports()
    convs = [c for r in runs for c in _sdk_dirs(r)]
    n = sum(len(list(EventLog(LocalFileStore(c), "events"))) for c in convs)
    if n != trajkit_events:
        raise SystemExit(f"the EventLog read {n} events, trajkit {trajkit_events}: not the same work")

    def t_eventlog() -> None:
        for c in convs:
            for _ in EventLog(LocalFileStore(c), "events"):
                pass

    return t_eventlog


def report(res: dict, out=sys.stdout) -> None:
    n = res["runs"]
    t = res["times"]
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"Python {res['python']}, trajkit from {res['trajkit']}")
    for why in res.get("refused") or ():
        p(f"  left out (the installed SDK cannot read it): {why}")
    p(f"{n} real SDK conversations ({len(samples()) - len(res.get('refused') or ())} samples; {res['events'] / n:.1f} events, {res['files'] / n:.1f} files, "
      f"{res['bytes'] / n / 1024:.1f} KB of JSON read per conversation); CPU time per conversation, "
      f"{res['rounds']} interleaved rounds, load {res['load']:.1f}")
    for k, v in t.items():
        p(f"  {k:9s} min {min(v) / n * 1e6:8.1f} us  median {median(v) / n * 1e6:8.1f} us")
    fm, fmed = min(t["floor"]), median(t["floor"])
    tm, tmed = min(t["trajkit"]), median(t["trajkit"])
    ratios = sorted(a / b for a, b in zip(t["trajkit"], t["floor"]))
    p(f"  trajkit / floor:      {tm / fm:.2f}x (min)  {tmed / fmed:.2f}x (median)  per round {ratios[0]:.2f}-{ratios[-1]:.2f}   goal <= 1.5x")
    if "checked" in t:
        cm, cmed = min(t["checked"]), median(t["checked"])
        p(f"  checked floor / floor: {cm / fm:.2f}x (min)  {cmed / fmed:.2f}x (median)   (the floor plus the lossless check of each file)")
        p(f"  trajkit / checked:    {tm / cm:.2f}x (min)  {tmed / cmed:.2f}x (median)")
    if "named" in t:
        nm, nmed = min(t["named"]), median(t["named"])
        p(f"  named / floor:        {nm / fm:.2f}x (min)  {nmed / fmed:.2f}x (median)   (format named: no detection)")
    if "eventlog" in t:
        em, emed = min(t["eventlog"]), median(t["eventlog"])
        p(f"  EventLog / trajkit:   {em / tm:.2f}x (min)  {emed / tmed:.2f}x (median)   goal >= 3x")
        p(f"  EventLog / floor:     {em / fm:.2f}x (min)  {emed / fmed:.2f}x (median)")


def sdk_child(args) -> dict | None:
    """Run this script under the SDK's Python; its figures, or None with a note."""
    py = args.sdk_python
    if not (py and os.path.exists(py)):
        print(f"\nEventLog comparison skipped: no Python with openhands-sdk at {py!r} (see the docstring to make one)")
        return None
    cmd = [py, __file__, "--child", "--copies", str(args.copies), "--rounds", str(args.rounds), "--src", str(args.src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"\nEventLog comparison skipped: {py} could not run it ({' / '.join(tail)})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--src", type=Path, default=REPO / "src", help="import trajkit from this src/ directory")
    ap.add_argument("--sdk-python", default=SDK_PYTHON, help="a Python >= 3.12 with openhands-sdk and openhands-tools")
    ap.add_argument("--no-sdk", action="store_true", help="skip the EventLog comparison")
    ap.add_argument("--memory", default="1000,4000,16000", help="conversation counts for the peak-memory row (0: skip it)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.src))
    if args.memory_child:
        print(json.dumps(memory_child([int(x) for x in args.memory_child.split(",")])))
        return 0
    runs = build(args.copies)
    if args.child:
        print(json.dumps(measure(runs, args.rounds, with_sdk=True)))
        return 0
    try:
        import openhands.sdk  # noqa: F401

        here_sdk = not args.no_sdk
    except ImportError:
        here_sdk = False
    report(measure(runs, args.rounds, with_sdk=here_sdk))
    if not args.no_sdk and not here_sdk:
        res = sdk_child(args)
        if res is not None:
            print(f"\nThe same, with the EventLog, in one process under {args.sdk_python}:")
            report(res)
    counts = [int(x) for x in args.memory.split(",") if int(x) > 0]
    if counts:
        mem = memory(counts, args.src)
        if mem is not None:
            report_memory(mem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
