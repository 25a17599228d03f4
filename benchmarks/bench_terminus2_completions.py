"""Benchmark: read + steps of Terminus-2 trials and OpenHands completion-log folders against the orjson floor.

Builds (once, cached in benchmarks/_corpus_tb2comp/) two corpora from the
samples:

- ``terminus2``: trials stitched from the episodes of the shipped synthetic
  trials (no real episode folder is public; ``formats/terminus2.md`` §8):
  10 to 200 episodes each, the prompt / response / debug.json files of the
  samples cycled and renumbered, with their ``results.json``, panes and
  recordings;
- ``openhands-completions``: byte copies of the real SDK logs in
  ``corpus/openhands_completions`` (the three phases as one folder) and of
  the shipped folders, plus V0 folders stitched from the V0 sample's calls:
  5 to 60 calls, each file repeating the whole context so far, as OpenHands
  writes them (the corpus grows quadratically with the calls, like real ones).

Then, in the same run and process, run by run and interleaved (the order
rotates, so load from other processes hits all alike), it times:

- trajkit: ``registry.read(path)`` (detection, the read, steps), what
  ``trajkit steps`` does before printing;
- the floor: reading the same files trajkit read (``Session.files`` with
  status ``read``) and decoding each JSON file (``.json`` and
  ``response.txt``) with ``orjson.loads`` (text files are read and decoded
  as UTF-8).

It prints, per format, the min and median over the rounds of each side and
of the per-round ratio trajkit / floor. Usage:
``.venv/bin/python benchmarks/bench_terminus2_completions.py [--runs N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
PHASES = SHARED / "corpus" / "openhands_completions" / "OpenHands+software-agent-sdk@d25a022a2" / ".pr" / "artifacts" / "20260121-223755"

from trajkit import registry  # noqa: E402
from trajkit.model import ReadOptions  # noqa: E402

FIX = REPO / "src" / "trajkit" / "formats" / "fixtures"
CORPUS = HERE / "_corpus_tb2comp"
_EP = re.compile(r"^episode-(\d+)$")


def _trials() -> list[Path]:
    return sorted(p for sub in (FIX / "terminus2").iterdir() if sub.is_dir() for p in sub.iterdir() if p.is_dir())


def stitched_trial(n_episodes: int, rng: random.Random, out: Path) -> None:
    """A trial of ``n_episodes`` episodes cycled from the samples' episodes."""
    src = [t for t in _trials() if (t / "agent-logs" / "episode-0" / "response.txt").exists()]
    base = rng.choice(src)
    shutil.copytree(base, out, ignore=shutil.ignore_patterns("agent-logs"))
    pool = [d for t in src for d in sorted((t / "agent-logs").iterdir(), key=lambda d: int(_EP.match(d.name).group(1)))]
    first = base / "agent-logs" / "episode-0"
    for n in range(n_episodes):
        d = first if n == 0 else pool[(n * 7 + rng.randrange(len(pool))) % len(pool)]
        dst = out / "agent-logs" / f"episode-{n}"
        dst.mkdir(parents=True)
        for f in d.iterdir():
            if f.name == "debug.json" and n % 10:
                continue
            shutil.copy(f, dst / f.name)


def stitched_completions(n_calls: int, rng: random.Random, out: Path) -> None:
    """A V0 instance folder of ``n_calls`` calls cycled from the V0 sample,
    each file holding the whole context so far."""
    src = FIX / "openhands-completions" / "v0-instance"
    recs = [orjson.loads(p.read_bytes()) for p in sorted(src.glob("openai__*.json"))]
    last = recs[-1]["messages"]
    head = last[:2]
    turns = []  # (assistant message, its tool results)
    i = 2
    while i < len(last):
        m = last[i]
        j = i + 1
        while j < len(last) and last[j].get("role") == "tool":
            j += 1
        turns.append((m, last[i + 1:j]))
        i = j
    out.mkdir(parents=True)
    msgs = list(head)
    t = 1730000000.0 + rng.randrange(10**6)
    for k in range(n_calls):
        a, results = turns[k % len(turns)]
        a = json.loads(json.dumps(a))
        results = json.loads(json.dumps(results))
        for tc in a.get("tool_calls") or []:
            old = tc["id"]
            tc["id"] = f"toolu_{k:04d}_{old[-2:]}"
            for r in results:
                if r.get("tool_call_id") == old:
                    r["tool_call_id"] = tc["id"]
        rec = dict(recs[k % len(recs)])
        rec["messages"] = list(msgs)
        resp = json.loads(json.dumps(rec["response"]))
        resp["choices"][0]["message"] = {"content": a.get("content"), "role": "assistant", "tool_calls": a.get("tool_calls")}
        rec["response"] = resp
        t += 2.5 + rng.random() * 5
        rec["timestamp"] = t
        (out / f"openai__gpt-4o-2024-08-06-{t:.2f}.json").write_bytes(orjson.dumps(rec))
        msgs += [a, *results]


def build(n: int) -> dict[str, list[Path]]:
    marker = CORPUS / f".built-{n}"
    runs = {"terminus2": [], "openhands-completions": []}
    if not marker.exists():
        shutil.rmtree(CORPUS, ignore_errors=True)
        rng = random.Random(20261201)
        for k in range(n):
            if k < len(_trials()) * 3:
                t = _trials()[k % len(_trials())]
                shutil.copytree(t, CORPUS / "terminus2" / f"{k:05d}" / t.name)
            else:
                stitched_trial(rng.choice([10, 20, 50, 100, 200]), rng, CORPUS / "terminus2" / f"{k:05d}" / "trial")
        samples = sorted(p for p in (FIX / "openhands-completions").iterdir() if p.is_dir())
        for k in range(n):
            out = CORPUS / "openhands-completions" / f"{k:05d}"
            if k % 10 == 0:
                out.mkdir(parents=True)
                for ph in sorted(PHASES.glob("telemetry_phase_*")):
                    for f in ph.iterdir():
                        shutil.copy(f, out / f.name)
            elif k % 10 == 1:
                s = samples[(k // 10) % len(samples)]
                shutil.copytree(s, out)
            else:
                stitched_completions(rng.choice([5, 10, 20, 40, 60]), rng, out)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("ok")
    for k in sorted((CORPUS / "terminus2").iterdir()):
        runs["terminus2"].append(next(k.iterdir()))
    runs["openhands-completions"] = sorted((CORPUS / "openhands-completions").iterdir())
    return runs


def floor_files(runs: list[Path]) -> list[list[str]]:
    out = []
    for r in runs:
        s = registry.read(r)
        out.append([f.path for f in s.files if f.status == "read"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300, help="runs per format")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    corpora = build(args.runs)
    print(f"corpus: {CORPUS} (ready in {time.perf_counter() - t0:.1f}s)")
    loads = orjson.loads
    opts = ReadOptions()
    clock = time.perf_counter
    for name, runs in corpora.items():
        files = floor_files(runs)
        nbytes = sum(os.path.getsize(p) for fs in files for p in fs)
        nsteps = sum(len(registry.read(r).steps) for r in runs)
        print(f"\n{name}: {len(runs)} runs, {sum(map(len, files))} files read, {nbytes / 1e6:.1f} MB, {nsteps} steps")

        def floor_one(fs: list[str]) -> None:
            for p in fs:
                with open(p, "rb") as f:
                    data = f.read()
                if p.endswith((".json", "response.txt")):
                    try:
                        loads(data)
                    except orjson.JSONDecodeError:
                        pass
                else:
                    data.decode("utf-8", errors="replace")

        rounds = []
        for _ in range(args.rounds):
            spent = [0.0, 0.0]
            for n, (r, fs) in enumerate(zip(runs, files)):
                jobs = ((0, lambda fs=fs: floor_one(fs)), (1, lambda r=r: registry.read(r, options=opts)))
                for k in range(2):
                    slot, fn = jobs[(n + k) % 2]
                    t = clock()
                    fn()
                    spent[slot] += clock() - t
            rounds.append(tuple(spent))
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        floor = [x[0] for x in rounds]
        tk = [x[1] for x in rounds]
        ratios = sorted(x[1] / x[0] for x in rounds)
        print(f"  floor   min {min(floor):.3f}s  median {med(floor):.3f}s  ({len(runs) / min(floor):.0f} runs/s, {nbytes / 1e6 / min(floor):.0f} MB/s)")
        print(f"  trajkit min {min(tk):.3f}s  median {med(tk):.3f}s  ({len(runs) / min(tk):.0f} runs/s, {nbytes / 1e6 / min(tk):.0f} MB/s)")
        print(f"  ratio trajkit / floor: min {ratios[0]:.2f}x  median {med(ratios):.2f}x  (of {len(rounds)} rounds)")


if __name__ == "__main__":
    main()
