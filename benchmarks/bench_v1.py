"""Benchmark: a full lossless read of OpenHands SDK (V1) conversations against the orjson floor,
on a large SYNTHETIC corpus (real-sized conversations: ``bench_v1_real.py``).

Builds (once, cached in benchmarks/_corpus_v1/) a corpus of at least 1,000
conversation directories from the shared samples
(``corpus/openhands_v1``): byte copies of every real conversation (with
their sub-agents), plus longer conversations stitched from the real
1.58.2 events (the real system prompt, user message and action /
observation pairs cycled with fresh ids and a re-linked parent chain,
20 to 400 events each, real ``base_state.json`` with the leaf updated).

Then, in the same run and process, conversation by conversation (so load
from other processes hits all of them alike), it times:

- trajkit: ``openhands_sdk.read(conv)`` — listing, SDK-order scan, decoding,
  typed views, normalization, event tree, usage join, steps and sub-agents,
  exactly what ``trajkit steps`` does before printing;
- the floor: reading the same files trajkit read (``Session.files`` with
  status ``read``, sub-agents included) and decoding each with ``orjson.loads``.

It prints conversations/s and MB/s for both and the ratio trajkit/floor
(goal: within 1.5x). Usage:
``.venv/bin/python benchmarks/bench_v1.py [--conversations N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
import uuid
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, os.environ.get("TRAJKIT_SRC", str(REPO / "src")))  # TRAJKIT_SRC: another tree, for before/after
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
V1 = SHARED / "corpus" / "openhands_v1"

from trajkit.formats.openhands_sdk import find_sessions, read  # noqa: E402
from trajkit.model import ReadOptions  # noqa: E402

CORPUS = HERE / "_corpus_v1"
SOURCE = V1 / "generated" / "localconv_condensation" / "0123456789abcdef0123456789abcdef"


def _events(conv: Path) -> list[dict]:
    return [orjson.loads(p.read_bytes()) for p in sorted((conv / "events").glob("event-*.json"))]


def stitched(n_events: int, rng: random.Random, out: Path) -> None:
    """A linear conversation of about n_events built from the real events."""
    src = _events(SOURCE)
    state = orjson.loads((SOURCE / "base_state.json").read_bytes())
    head = src[:2]
    pairs = [(src[i], src[i + 1]) for i in (2, 10, 13, 16) if src[i]["kind"] == "ActionEvent"]
    events: list[dict] = []
    prev = None
    for e in head:
        e = dict(e)
        e["id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if prev is not None:
            e["parent_id"] = prev
        events.append(e)
        prev = e["id"]
    n = 0
    while len(events) < n_events:
        a, o = (dict(x) for x in rng.choice(pairs))
        n += 1
        a["id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        a["parent_id"] = prev
        call = f"call_{n}_0"
        a["tool_call_id"] = call
        a["tool_call"] = dict(a["tool_call"], id=call)
        a["llm_response_id"] = f"chatcmpl-bench-{n:05d}"
        o["id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        o["parent_id"] = a["id"]
        o["action_id"] = a["id"]
        o["tool_call_id"] = call
        events.extend([a, o])
        prev = o["id"]
    (out / "events").mkdir(parents=True)
    for i, e in enumerate(events):
        (out / "events" / f"event-{i:05d}-{e['id']}.json").write_bytes(orjson.dumps(e))
    (out / "events" / ".eventlog.lock").write_bytes(b"")
    state["leaf_event_id"] = events[-1]["id"]
    state["id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    (out / "base_state.json").write_bytes(orjson.dumps(state))


def build(n: int) -> list[Path]:
    marker = CORPUS / f".built-{n}"
    if marker.exists():
        return find_sessions(CORPUS)
    shutil.rmtree(CORPUS, ignore_errors=True)
    CORPUS.mkdir(parents=True)
    rng = random.Random(20261129)
    real = find_sessions(V1)
    made = 0
    # every real conversation, several times over (a fifth of the corpus)
    while made < n // 5:
        src = real[made % len(real)]
        shutil.copytree(src, CORPUS / f"real-{made:05d}" / src.name)
        made += 1
    while made < n:
        stitched(rng.choice([20, 40, 60, 100, 200, 400]), rng, CORPUS / f"stitched-{made:05d}" / uuid.UUID(int=rng.getrandbits(128)).hex)
        made += 1
    marker.write_text("ok")
    return find_sessions(CORPUS)


def floor_files(convs: list[Path]) -> list[list[str]]:
    out = []
    opts = ReadOptions()
    for c in convs:
        s = read(c, opts)
        out.append([f.path for sess in s.walk() for f in sess.files if f.status == "read"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    convs = build(args.conversations)
    print(f"corpus: {len(convs)} conversations in {CORPUS} (ready in {time.perf_counter() - t0:.1f}s)")
    files = floor_files(convs)
    nbytes = sum(os.path.getsize(p) for fs in files for p in fs)
    nfiles = sum(len(fs) for fs in files)
    print(f"        {nfiles} files read, {nbytes / 1e6:.1f} MB")

    loads = orjson.loads
    opts = ReadOptions()
    no_steps = ReadOptions(steps=False)

    # The three are interleaved conversation by conversation, so a busy
    # machine slows them alike; each round's totals give one ratio, and the
    # best round of each is reported too.
    def floor_one(fs: list[str]) -> None:
        for p in fs:
            with open(p, "rb") as f:
                loads(f.read())

    totals = []
    clock = time.process_time  # CPU time: on a shared machine wall time mostly measures other processes
    for _ in range(args.rounds):
        spent = [0.0, 0.0, 0.0]
        for n, (c, fs) in enumerate(zip(convs, files)):
            jobs = ((0, floor_one, fs), (1, lambda c=c: read(c, opts), None), (2, lambda c=c: read(c, no_steps), None))
            # rotate who goes first, so no one always inherits warm caches
            for k in range(3):
                slot, fn, arg = jobs[(n + k) % 3]
                t = clock()
                fn(arg) if arg is not None else fn()
                spent[slot] += clock() - t
        totals.append(tuple(spent))
    best = [min(t[k] for t in totals) for k in range(3)]
    labels = (
        "floor (open + read + orjson.loads of the same files)",
        "trajkit full read (events, views, tree, usage, steps, sub-agents)",
        "trajkit read without steps (ReadOptions(steps=False))",
    )
    for t, label in zip(best, labels):
        print(f"{t:7.3f}s  {len(convs) / t:8.1f} conversations/s  {nbytes / 1e6 / t:7.1f} MB/s  {label}")
    full = sorted(t[1] / t[0] for t in totals)
    events = sorted(t[2] / t[0] for t in totals)
    median = lambda xs: xs[len(xs) // 2]  # noqa: E731
    ratio = median(full)
    print(f"ratio full read / floor:     {ratio:.2f}x median of {len(totals)} rounds (range {full[0]:.2f}-{full[-1]:.2f}; goal: within 1.5x) -> {'OK' if ratio <= 1.5 else 'OVER'}")
    print(f"ratio without steps / floor: {median(events):.2f}x median (range {events[0]:.2f}-{events[-1]:.2f})")


if __name__ == "__main__":
    main()
