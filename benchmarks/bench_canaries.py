"""Benchmark: canary search must grow with the text, not with canaries x text.

Builds protected-file canaries shaped like real ones (distinctive test lines
with quoted literals and numbers, hex markers) and observations shaped like
``cat -n`` output of similar test files with a few canaries planted, then
times :func:`trajkit.certify.canary.find_canaries` with 3,000 and with 30,000
canaries over the same 60 observations, and the all-pairs reference
(``canary in text`` for every pair) on a slice, extrapolated.

The checks (exit status 1 when one fails):

- the search over the observations (index built, then every text) costs
  about the same with 30,000 canaries as with 3,000: the ratio of the
  per-text search times stays under ``--max-ratio`` (default 2; all-pairs is
  ~10x). Building the index is linear in the canaries' total length and is
  reported apart;
- the whole search with 30,000 canaries takes under ``--max-share`` (default
  0.2) of the all-pairs time;
- the hits equal the all-pairs reference.

Usage: ``.venv/bin/python benchmarks/bench_canaries.py [--obs-kb 100]``.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time

from trajkit.certify.canary import Canary, find_canaries


def _line(rnd: random.Random) -> str:
    name = "".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(4, 10)))
    return f"assert compute_{name}({rnd.randint(100, 99999)}, '{''.join(rnd.choices(string.ascii_letters, k=8))}') == '{''.join(rnd.choices(string.ascii_letters, k=10))}'"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--canaries", type=int, default=30_000)
    ap.add_argument("--observations", type=int, default=60)
    ap.add_argument("--obs-kb", type=int, default=100)
    ap.add_argument("--max-ratio", type=float, default=2.0)
    ap.add_argument("--max-share", type=float, default=0.2)
    args = ap.parse_args()
    rnd = random.Random(11)
    canaries = [Canary(_line(rnd), f"tests/holdout/test_{i // 200}.py", i % 200 + 1) for i in range(args.canaries)]
    canaries += [Canary("".join(rnd.choices("0123456789abcdef", k=32)), "tests/holdout/keys.py", i, "marker") for i in range(50)]
    texts = []
    for i in range(args.observations):
        rows, size = [], 0
        while size < args.obs_kb * 1024:
            row = f"{len(rows) + 1:6d}\t    {_line(rnd)}"
            rows.append(row)
            size += len(row) + 1
        for c in rnd.sample(canaries, 3):
            rows.insert(rnd.randrange(len(rows)), f"{0:6d}\t    {c.text}")
        texts.append(({"event_id": i}, "\n".join(rows)))
    small = canaries[: args.canaries // 10]
    for c in rnd.sample(small, 5):  # planted where the small set can see them too
        texts[0] = (texts[0][0], texts[0][1] + "\n" + c.text)

    from trajkit.certify.canary import CanaryMatcher

    def timed(cs: list[Canary]) -> tuple[float, float, list]:
        t0 = time.perf_counter()
        m = CanaryMatcher([c.text for c in cs])
        t1 = time.perf_counter()
        found = [(cs[i], w) for w, text in texts for i in m.find(text)]
        return t1 - t0, time.perf_counter() - t1, found

    b_small, s_small, hits_small = timed(small)
    b_big, s_big, hits = timed(canaries)
    t = time.perf_counter()
    assert find_canaries(canaries, texts) == hits
    t_all = time.perf_counter() - t

    # the all-pairs reference on a slice of the observations, extrapolated
    k = max(1, args.observations // 20)
    t = time.perf_counter()
    ref = [(c, w) for w, text in texts[:k] for c in canaries if c.text in text]
    t_ref = (time.perf_counter() - t) * args.observations / k
    same = [h for h in hits if h[1]["event_id"] < k] == ref
    mb = sum(len(x) for _, x in texts) / 1e6
    ratio = s_big / s_small if s_small else float("inf")
    share = t_all / t_ref if t_ref else 0.0
    print(f"observations {args.observations} x {args.obs_kb} KB ({mb:.1f} MB of text)")
    print(f"{len(small):>7} canaries: index {b_small:6.2f} s, search {s_small:6.2f} s  ({len(hits_small)} hits)")
    print(f"{len(canaries):>7} canaries: index {b_big:6.2f} s, search {s_big:6.2f} s  ({len(hits)} hits); find_canaries {t_all:.2f} s")
    print(f"all-pairs reference for {len(canaries)} canaries (extrapolated from {k} observations): {t_ref:7.1f} s")
    print(f"search ratio {len(canaries)} / {len(small)} canaries: {ratio:.2f}x (all-pairs ~{len(canaries) / len(small):.0f}x; limit {args.max_ratio}x)")
    print(f"find_canaries / all-pairs: {share:.3f} (limit {args.max_share})")
    print(f"hits equal to the all-pairs reference: {'yes' if same else 'NO'}")
    return 0 if same and ratio <= args.max_ratio and share <= args.max_share else 1


if __name__ == "__main__":
    sys.exit(main())
