"""The house lenient JSON decode against the orjson floor (issue 15): every
``*.json`` / ``*.traj`` / ``*.jsonl`` under ``../shared/corpus``, as it is, by shape.

Shapes: ``compact`` (the file is byte for byte what ``orjson.dumps`` writes
back), ``indent2`` (what ``orjson.dumps(..., OPT_INDENT_2)`` writes back:
``json.dump(indent=2)`` of ASCII text), ``pretty`` (any other layout:
indent 4 or 1, ``", "`` separators, ``ensure_ascii`` escapes) and ``jsonl``.

Timed, CPU time (``time.process_time``; on a shared machine wall time mostly
measures the other processes), each shape's files decoded ``--reps`` times
per round, min and median over ``--rounds`` interleaved rounds:

- floor: ``orjson.loads`` of each file (of each non-blank line for JSON Lines);
- house: ``trajkit.jsonio.loads(data, file)`` (``reading.io.iter_jsonl`` for
  JSON Lines): the decode every reader uses, with its checks for duplicate
  keys, integers beyond 64 bits, NaN/Infinity and over-deep nesting;
- base (with ``--base DIR``): the same from another source tree (``DIR`` holds
  the ``trajkit`` package, e.g. ``git archive main src/trajkit`` extracted),
  imported under another name in this process, so before and after are
  measured under the same load.

Before timing, the house decode (and the base's) is checked to give the same
values as the floor for every file it does not flag.

    .venv/bin/python benchmarks/bench_jsonio.py [--rounds 7] [--reps 5] [--base /tmp/base/src]
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
CORPUS = REPO.parent / "shared" / "corpus"


def shape_of(path: Path, data: bytes) -> str | None:
    if path.suffix == ".jsonl":
        return "jsonl"
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    body = data.rstrip()
    try:
        if body == orjson.dumps(value):
            return "compact"
        if body == orjson.dumps(value, option=orjson.OPT_INDENT_2):
            return "indent2"
    except TypeError:
        pass
    return "pretty"


def load_corpus(root: Path) -> dict[str, list[tuple[str, bytes]]]:
    shapes: dict[str, list[tuple[str, bytes]]] = {"compact": [], "indent2": [], "pretty": [], "jsonl": []}
    for p in sorted(root.rglob("*")):
        if p.suffix not in (".json", ".traj", ".jsonl") or not p.is_file():
            continue
        data = p.read_bytes()
        shape = shape_of(p, data)
        if shape is not None:
            shapes[shape].append((str(p), data))
    return shapes


def import_base(src: Path):
    """The ``trajkit`` package under ``src``, imported as ``trajkit_base``."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-jsonio-"))
    shutil.copytree(src / "trajkit", tmp / "trajkit_base")
    sys.path.insert(0, str(tmp))
    return importlib.import_module("trajkit_base.jsonio"), importlib.import_module("trajkit_base.reading.io")


def floor_json(files):
    loads = orjson.loads
    for _, data in files:
        loads(data)


def floor_jsonl(files):
    loads = orjson.loads
    for _, data in files:
        for line in data.split(b"\n"):
            if line.strip():
                try:
                    loads(line)
                except orjson.JSONDecodeError:
                    pass


def house_json(jsonio):
    loads = jsonio.loads

    def run(files):
        for path, data in files:
            loads(data, path)

    return run


def house_jsonl(rio):
    it = rio.iter_jsonl

    def run(files):
        for path, data in files:
            for _ in it(data, path, []):
                pass

    return run


def check(name, jsonio, rio, shapes) -> None:
    """Same values as orjson wherever the house decode flags nothing."""
    for shape, files in shapes.items():
        for path, data in files:
            if shape == "jsonl":
                diags: list = []
                got = [jl.value for jl in rio.iter_jsonl(data, path, diags)]
                want = []
                for line in data.split(b"\n"):
                    if line.strip():
                        try:
                            want.append(orjson.loads(line))
                        except orjson.JSONDecodeError:
                            want.append(jsonio.MISSING)
                if not diags and got != want:
                    raise SystemExit(f"{name}: {path}: values differ from orjson's")
            else:
                value, d = jsonio.loads(data, path)
                if d is None and value != orjson.loads(data):
                    raise SystemExit(f"{name}: {path}: value differs from orjson's")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=5, help="decodes of each shape's files per round")
    ap.add_argument("--base", type=Path, default=None, help="a source dir holding another trajkit package, timed interleaved")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)

    from trajkit import jsonio
    from trajkit.reading import io as rio

    shapes = load_corpus(args.corpus)
    impls = {"house": (jsonio, rio)}
    if args.base is not None:
        impls["base"] = import_base(args.base)
    for name, (j, r) in impls.items():
        check(name, j, r, shapes)

    timers: dict[str, dict[str, object]] = {}
    for shape in shapes:
        jl = shape == "jsonl"
        timers[shape] = {"floor": floor_jsonl if jl else floor_json}
        for name, (j, r) in impls.items():
            timers[shape][name] = house_jsonl(r) if jl else house_json(j)

    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for shape, files in shapes.items():
            for name, fn in timers[shape].items():
                t0 = time.process_time()
                for _ in range(args.reps):
                    fn(files)  # type: ignore[operator]
                times.setdefault((shape, name), []).append((time.process_time() - t0) / args.reps)

    load = os.getloadavg()
    print(f"bench_jsonio: {args.rounds} rounds x {args.reps} reps, CPU ms per pass over the shape's files; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{'shape':8} {'files':>5} {'MB':>6} {'impl':6} {'min ms':>8} {'med ms':>8} {'x floor min':>11} {'x floor med':>11}")
    for shape, files in shapes.items():
        mb = sum(len(d) for _, d in files) / 1e6
        fmin = min(times[(shape, "floor")])
        fmed = statistics.median(times[(shape, "floor")])
        for name in timers[shape]:
            ts = times[(shape, name)]
            print(f"{shape:8} {len(files):5} {mb:6.2f} {name:6} {min(ts) * 1e3:8.2f} {statistics.median(ts) * 1e3:8.2f} "
                  f"{min(ts) / fmin:11.2f} {statistics.median(ts) / fmed:11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
