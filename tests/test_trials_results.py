"""``vocab.trials.find_results`` looks for the terminal-bench and the harbor
results in one breadth-first walk; each must be what a walk of its own finds
(the first dict, breadth first, holding one of its kind's members)."""

import random

from trajkit.vocab import trials as T


def _first_with(md, keys, depth):
    """One kind's own walk, written out plainly: the reference."""
    level = [md]
    for _ in range(depth):
        nxt = []
        for m in level:
            if any(k in m for k in keys):
                return m
            nxt.extend(v for v in m.values() if isinstance(v, dict))
        level = nxt
    return None


def _metadata(rnd, names, depth=0):
    m = {}
    for _ in range(rnd.randint(0, 4)):
        key = rnd.choice(names) + ("" if rnd.random() < 0.5 else str(rnd.randint(0, 3)))
        m[key] = _metadata(rnd, names, depth + 1) if depth < 4 and rnd.random() < 0.6 else rnd.choice([1, "x", None, [1]])
    return m


def test_one_walk_finds_what_each_kind_finds_alone():
    rnd = random.Random(15)
    names = list(T.TB_KEYS + T.HARBOR_KEYS) + ["results", "result", "config"]
    found_both = 0
    for _ in range(3000):
        md = _metadata(rnd, names)
        paths = {k: f"/trial/{k}.json" for k in md if rnd.random() < 0.5}
        for depth in (1, 2, 3, 4):
            want = []
            for kind, keys in ((T.TERMINAL_BENCH, T.TB_KEYS), (T.HARBOR, T.HARBOR_KEYS)):
                hit = _first_with(md, keys, depth)
                if hit is not None:
                    want.append((kind, next((p for k, p in paths.items() if md.get(k) is hit), None), id(hit)))
            got = [(r.kind, r.path, id(r.data)) for r in T.find_results(md, paths, depth)]
            assert got == want, (md, depth)
            found_both += len(want) == 2
    assert found_both > 100  # the walks met metadata holding both kinds, not only one or none
