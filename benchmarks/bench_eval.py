"""Benchmark: read + steps of OpenHands evaluation outputs (``output.jsonl``) against the orjson floor.

Builds (in a temporary directory) two ``output.jsonl`` files from the shared
corpus with ``tests/openhands_eval_build.py``: one of V0 histories and one of
SDK histories, ``--records`` records each. As in ``bench_v1.py``, a fifth
are the corpus's own streams / conversations (with their metrics) under
fresh instance ids, the rest longer histories stitched from their real
events (the real head, then real action / observation pairs cycled with
fresh ids, 20 to 400 events), the size of real SWE-bench runs.

Then, in the same process, it times in interleaved rounds (floor, trajkit,
floor, trajkit, ...; a busy machine slows both alike):

- the floor: read the file's bytes and ``orjson.loads`` every line;
- trajkit: what ``trajkit steps output.jsonl`` does before printing: list the
  members (``registry.members``: the record index, built cold each round)
  and read every record with its steps (``registry.read_all``).

It prints records/s and MB/s of both and the ratio trajkit / floor per
round, then the minimum and median. Usage:
``.venv/bin/python benchmarks/bench_eval.py [--records 400] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))

import openhands_eval_build as build  # noqa: E402
from trajkit import registry  # noqa: E402
from trajkit.formats.openhands_eval import index as eval_index  # noqa: E402


SIZES = (20, 40, 60, 100, 200, 400)


def stitched_v0(src: list[dict], n: int, rng: random.Random) -> list[dict]:
    """A V0 history of about ``n`` events: the head of ``src``, then its cause-paired (action, observation) pairs cycled."""
    by_id = {e["id"]: e for e in src}
    pairs = [(by_id[o["cause"]], o) for o in src if "observation" in o and o.get("cause") in by_id and "action" in by_id[o["cause"]]]
    out = [dict(e) for e in src[:2]]
    nid = max(e["id"] for e in out) + 1
    while len(out) < n:
        a, o = (dict(x) for x in rng.choice(pairs))
        a["id"], o["id"], o["cause"] = nid, nid + 1, nid
        nid += 2
        out += [a, o]
    return out


def stitched_sdk(src: list[dict], n: int, rng: random.Random) -> list[dict]:
    """An SDK history of about ``n`` events: the head of ``src``, then its answered actions cycled, re-linked."""
    by_id = {e["id"]: e for e in src}
    pairs = [(by_id[o["action_id"]], o) for o in src if o.get("kind") == "ObservationEvent" and o.get("action_id") in by_id]
    out = [dict(e) for e in src[:2]]
    k = 0
    while len(out) < n:
        a, o = (dict(x) for x in rng.choice(pairs))
        k += 1
        a["id"], o["id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4)), str(uuid.UUID(int=rng.getrandbits(128), version=4))
        call = f"call_{k}"
        a["tool_call_id"], a["llm_response_id"] = call, f"chatcmpl-bench-{k:05d}"
        if isinstance(a.get("tool_call"), dict):
            a["tool_call"] = dict(a["tool_call"], id=call)
        o["action_id"], o["tool_call_id"] = a["id"], call
        a.pop("parent_id", None)
        o.pop("parent_id", None)
        out += [a, o]
    return out


def make(path: Path, records: list[dict], n: int, stitch, source: list[dict]) -> Path:
    rng = random.Random(20261201)
    out = []
    for i in range(n):
        r = dict(records[i % len(records)])
        if i >= n // 5:
            r["history"] = stitch(source, rng.choice(SIZES), rng)
            r["metrics"] = None
        r["instance_id"] = f"{r['instance_id']}__{i:05d}"
        out.append(r)
    return build.write_jsonl(path, out)


def floor(path: Path) -> int:
    loads = orjson.loads
    n = 0
    with open(path, "rb") as f:
        data = f.read()
    for line in data.split(b"\n"):
        if line:
            loads(line)
            n += 1
    return n


def trajkit_steps(path: Path) -> int:
    eval_index._INDEXES.clear()  # cold: the index is built in the timed read
    steps = 0
    for s in registry.read_all(path, format="openhands-eval"):
        steps += len(s.steps)
    return steps


def bench(name: str, path: Path, rounds: int) -> dict:
    size = path.stat().st_size
    n = floor(path)
    trajkit_steps(path)  # warm imports and caches of the code, not of the file
    ratios, tf, tt = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        floor(path)
        t1 = time.perf_counter()
        trajkit_steps(path)
        t2 = time.perf_counter()
        tf.append(t1 - t0)
        tt.append(t2 - t1)
        ratios.append((t2 - t1) / (t1 - t0))
    print(f"{name}: {n} records, {size / 1e6:.1f} MB")
    print(f"  floor   best {min(tf) * 1000:8.1f} ms  {n / min(tf):9.0f} records/s  {size / 1e6 / min(tf):7.1f} MB/s")
    print(f"  trajkit best {min(tt) * 1000:8.1f} ms  {n / min(tt):9.0f} records/s  {size / 1e6 / min(tt):7.1f} MB/s")
    print(f"  ratio per round: {', '.join(f'{r:.2f}' for r in ratios)}; min {min(ratios):.2f}, median {statistics.median(ratios):.2f}")
    return {"records": n, "bytes": size, "ratio_min": min(ratios), "ratio_median": statistics.median(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        v0s = build.v0_samples()
        sdks = build.sdk_samples()
        v0 = make(Path(d) / "v0" / "output.jsonl", [build.v0_record(k, n, e) for k, (n, e) in enumerate(v0s)], args.records,
                  stitched_v0, dict(v0s)["game-2048-session"])
        sdk = make(Path(d) / "sdk" / "output.jsonl", [build.sdk_record(k, n, e, m) for k, (n, e, m) in enumerate(sdks)],
                   args.records, stitched_sdk, next(e for n, e, _ in sdks if n == "0123456789abcdef0123456789abcdef"))
        bench("V0 histories", v0, args.rounds)
        bench("SDK histories", sdk, args.rounds)


if __name__ == "__main__":
    main()
