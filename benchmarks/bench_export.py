"""Benchmark: conversion throughput (MB/s of source) to ASF and ATIF, beside the read.

Sources: OpenHands V0 trials and SDK (V1) conversations. By default the
corpora the read benchmarks build (``benchmarks/_corpus_v0`` and
``_corpus_v1``, made by ``bench_v0.py`` / ``bench_v1.py``) are sampled; when
they are absent, every V0/V1 run of the shared corpus is used, repeated.

In the same run and process, per source set, it times:

- read (the baseline): ``trajkit.registry.read(src)`` — what every verb does first;
- ASF: read + ``session_to_asf`` + ``write_asf`` (the bytes ``convert --to asf`` writes);
- ATIF: read + ``session_to_asf`` + the projection + JSON encoding (``convert --to atif``);
- verify: ``read_asf`` + ``verify`` (ids, parents, request hashes) of the written ASF.

MB of source = the bytes of the native files the reader read (``Session.files``
with status ``read``, sub-agents included). It prints MB/s for each and the
ratio of each conversion's time to the read's. Usage:
``.venv/bin/python benchmarks/bench_export.py [--runs N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"

from trajkit.export import to_asf, to_atif  # noqa: E402
from trajkit.spec import asf  # noqa: E402
from trajkit.jsonio import dumps  # noqa: E402
from trajkit.registry import read  # noqa: E402


def shared_sources() -> dict[str, list[Path]]:
    v0 = CORPUS / "openhands_v0"
    v1 = CORPUS / "openhands_v1"
    return {
        "v0": sorted((v0 / "flat_exports").glob("*.json")) + sorted(p for p in (v0 / "reconstructed_trials").iterdir() if p.is_dir()),
        "v1": sorted(p for p in (v1 / "generated").glob("*/*") if p.is_dir())
        + sorted(p for p in (v1 / "sdk_pr_artifacts").glob("*/*") if p.is_dir()),
    }


def sources(n: int, seed: int = 7) -> dict[str, list[Path]]:
    rng = random.Random(seed)
    out = {}
    shared = shared_sources()
    for name in ("v0", "v1"):
        built = HERE / f"_corpus_{name}"
        pool: list[Path] = []
        if built.is_dir() and name == "v0":
            pool = sorted(p for p in built.iterdir() if p.is_dir())
        elif built.is_dir():
            from trajkit.formats.openhands_sdk import find_sessions

            pool = sorted(find_sessions(built))
        if pool:
            out[name] = rng.sample(pool, min(n, len(pool)))
        else:
            base = shared[name]
            out[name] = [base[i % len(base)] for i in range(max(n, len(base)))]
    return out


def source_bytes(session) -> int:
    total = 0
    for s in session.walk():
        for f in s.files:
            if f.status == "read":
                try:
                    total += os.path.getsize(f.path)
                except OSError:
                    pass
    return total


def timed(fn, items) -> float:
    t = time.perf_counter()
    for x in items:
        fn(x)
    return time.perf_counter() - t


def to_asf_bytes(src: Path) -> list[bytes]:
    x = to_asf.session_to_asf(read(src))
    return [asf.write_asf(f) for f in x.files]


def to_atif_bytes(src: Path) -> list[bytes]:
    x = to_asf.session_to_asf(read(src))
    by_id = {f.header["id"]: f for f in x.files}
    return [dumps(doc, indent=True) for _, doc in to_atif.project_session(x.root, by_id.get)]


def verify_all(blobs: list[bytes]) -> None:
    for b in blobs:
        f = asf.read_asf(b)
        errs = [d for d in asf.verify(f) if d.severity == "error"]
        if errs:
            raise SystemExit(f"written ASF does not verify: {errs[0]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="runs per source set (default 200)")
    ap.add_argument("--rounds", type=int, default=3, help="best of R rounds (default 3)")
    args = ap.parse_args()
    sets = sources(args.runs)
    print(f"{'set':4} {'runs':>5} {'MB':>8}  {'read MB/s':>10} {'asf MB/s':>9} {'x read':>7} {'atif MB/s':>10} {'x read':>7} {'verify MB/s':>12}")
    for name, srcs in sets.items():
        mb = sum(source_bytes(read(s)) for s in srcs) / 1e6
        blobs = [b for s in srcs for b in to_asf_bytes(s)]
        asf_mb = sum(len(b) for b in blobs) / 1e6
        best = {"read": 1e9, "asf": 1e9, "atif": 1e9, "verify": 1e9}
        for _ in range(args.rounds):
            best["read"] = min(best["read"], timed(read, srcs))
            best["asf"] = min(best["asf"], timed(to_asf_bytes, srcs))
            best["atif"] = min(best["atif"], timed(to_atif_bytes, srcs))
            best["verify"] = min(best["verify"], timed(lambda b: verify_all([b]), blobs))
        print(
            f"{name:4} {len(srcs):5d} {mb:8.1f}  {mb / best['read']:10.1f} {mb / best['asf']:9.1f} {best['asf'] / best['read']:7.2f}"
            f" {mb / best['atif']:10.1f} {best['atif'] / best['read']:7.2f} {asf_mb / best['verify']:12.1f}"
        )
    print("MB/s are of native source bytes read (verify: of ASF bytes); 'x read' = conversion time / read time (read included).")


if __name__ == "__main__":
    main()
