"""Benchmark: the Codex rollout reader against the orjson floor and a peer reader.

Builds (once, cached in benchmarks/_corpus_codex/) a ``sessions/YYYY/MM/DD``
tree of rollouts stitched from the lines of trajkit's own synthetic Codex
fixture (no real, unsanitised rollout is public under a usable licence; see
``shared/corpus/SOURCES.md``): each rollout repeats the fixture's turn
pattern (reasoning with encrypted content, a shell call, ``token_count``, its
output, an ``apply_patch``, the ``event_msg`` duplicates) with fresh call ids,
running totals and shell outputs of 0.2–6 KB, 40 to 4,000 lines each; a few
day folders hold a parent with a sub-agent thread.

Then, in the same run and process, rollout by rollout, in interleaved rounds
(so load from other processes hits all of them alike), it times:

- trajkit: ``codex.read(path)``: decoding, events, call pairing with
  re-minting, per-call usage, steps and the sub-agent scan of the day folder,
  what ``trajkit steps`` does before printing;
- the floor: reading the file and ``orjson.loads`` on every line;
- the peer, atif-make 0.10.0's ``parse_codex_rollout(path)`` (its rollout →
  ATIF converter, which also scans the day's rollouts for child threads),
  when ``atif_make`` is importable. atif-make needs Python >= 3.12; trajkit's
  reader needs only orjson, so run this script with such an interpreter::

      python3.12 -m venv benchmarks/_venv_peer
      benchmarks/_venv_peer/bin/pip install orjson atif-make==0.10.0
      benchmarks/_venv_peer/bin/python benchmarks/bench_codex.py

Times are CPU time of this process (``time.process_time``), so that the
other processes of a shared machine weigh less on the ratios. It prints
rollouts/s, lines/s and MB/s for each, and the ratios
trajkit/floor and trajkit/peer (per rollout medians summed, and the best
round). Usage: ``python benchmarks/bench_codex.py [--rollouts N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

from trajkit.formats.codex import reader as codex  # noqa: E402
from trajkit.model import ReadOptions  # noqa: E402

CORPUS = HERE / "_corpus_codex"
SOURCE = next((REPO / "src/trajkit/formats/fixtures/codex/sessions/2026/04/01").glob("rollout-*5f0c2a4e*.jsonl"))
VERSION = "1"  # bump when the generator changes


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def stitched(n_lines: int, rng: random.Random, thread: str, parent: str | None, day: str) -> list[dict]:
    """A rollout of about ``n_lines`` lines in the fixture's shapes."""
    src = _lines(SOURCE)
    by_type = {}
    for v in src:
        key = v["type"] + "/" + str(v["payload"].get("type"))
        by_type.setdefault(key, v)
    meta = json.loads(json.dumps(src[0]))
    meta["payload"]["id"] = thread
    meta["payload"]["timestamp"] = f"{day}T08:00:00.000Z"
    if parent:
        meta["payload"]["parent_thread_id"] = parent
        meta["payload"]["thread_source"] = "subagent"
    out = [meta, src[1], src[2], src[3], src[4], src[5], src[6]]
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": 0}
    n = 0
    words = "the quick brown fox jumps over the lazy dog and runs the tests again".split()
    while len(out) < n_lines:
        n += 1
        cid = f"call_{n}"
        out.append(by_type["response_item/reasoning"])
        out.append({"timestamp": f"{day}T08:{n % 60:02d}:00.000Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell_command", "call_id": cid,
            "arguments": json.dumps({"command": f"grep -rn {rng.choice(words)} src/ | head -{rng.randint(5, 80)}", "workdir": "/home/agent/proj"})}})
        last = {"input_tokens": rng.randint(2000, 90000), "cached_input_tokens": rng.randint(0, 2000), "output_tokens": rng.randint(20, 900),
                "reasoning_output_tokens": rng.randint(0, 300)}
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for k in total:
            total[k] += last[k]
        out.append({"timestamp": f"{day}T08:{n % 60:02d}:01.000Z", "type": "event_msg", "payload": {
            "type": "token_count", "info": {"last_token_usage": dict(last), "total_token_usage": dict(total), "model_context_window": 272000},
            "rate_limits": {"primary": {"used_percent": 3.0}}}})
        body = " ".join(rng.choice(words) for _ in range(rng.randint(30, 1000)))
        out.append({"timestamp": f"{day}T08:{n % 60:02d}:02.000Z", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": cid, "output": body}})
        if n % 4 == 0:
            out.append(dict(by_type["response_item/custom_tool_call"], payload=dict(by_type["response_item/custom_tool_call"]["payload"], call_id=f"p_{n}")))
            out.append(dict(by_type["response_item/custom_tool_call_output"], payload=dict(by_type["response_item/custom_tool_call_output"]["payload"], call_id=f"p_{n}")))
            out.append(by_type["event_msg/patch_apply_end"])
        if n % 7 == 0:
            msg = "Progress: " + " ".join(rng.choice(words) for _ in range(40))
            out.append({"timestamp": f"{day}T08:{n % 60:02d}:03.000Z", "type": "response_item", "payload": {
                "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": msg}]}})
            out.append({"timestamp": f"{day}T08:{n % 60:02d}:03.000Z", "type": "event_msg", "payload": {"type": "agent_message", "message": msg}})
    out.append(src[-1])
    return out


def build(n: int) -> list[Path]:
    stamp = CORPUS / f".built-{VERSION}-{n}"
    if stamp.exists():
        return sorted(CORPUS.rglob("rollout-*.jsonl"))
    import shutil

    shutil.rmtree(CORPUS, ignore_errors=True)
    rng = random.Random(20261201)
    import uuid

    for i in range(n):
        day = f"2026-{1 + i % 12:02d}-{1 + (i // 12) % 28:02d}"
        folder = CORPUS / "sessions" / day[:4] / day[5:7] / day[8:10]
        folder.mkdir(parents=True, exist_ok=True)
        thread = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        size = int(min(4000, max(40, rng.lognormvariate(6.3, 0.9))))
        lines = stitched(size, rng, thread, None, day)
        (folder / f"rollout-{day}T08-00-00-{thread}.jsonl").write_bytes(b"".join(orjson.dumps(v) + b"\n" for v in lines))
        if i % 10 == 0:
            child = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            lines = stitched(60, rng, child, thread, day)
            (folder / f"rollout-{day}T08-05-00-{child}.jsonl").write_bytes(b"".join(orjson.dumps(v) + b"\n" for v in lines))
    stamp.touch()
    return sorted(CORPUS.rglob("rollout-*.jsonl"))


def floor(path: Path) -> int:
    data = path.read_bytes()
    n = 0
    for line in data.split(b"\n"):
        if line:
            orjson.loads(line)
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rollouts", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    files = build(args.rollouts)
    try:
        from atif_make.parsers.codex import parse_codex_rollout  # type: ignore[import-not-found]
    except ImportError:
        parse_codex_rollout = None
        print("atif-make not importable here (it needs Python >= 3.12): timing trajkit against the floor only; "
              "see the docstring for the peer venv", file=sys.stderr)
    opts = ReadOptions()
    size = sum(p.stat().st_size for p in files)
    nlines = sum(floor(p) for p in files)
    # one warm-up pass each (imports, caches: the day-folder parent cache is part of trajkit's steady state)
    for p in files:
        codex.read(p, opts)
        if parse_codex_rollout is not None:
            parse_codex_rollout(p)
    tools = {"floor": floor, "trajkit": lambda p: codex.read(p, opts)}
    if parse_codex_rollout is not None:
        tools["atif-make"] = parse_codex_rollout
    per: dict[str, list[list[float]]] = {k: [[] for _ in files] for k in tools}
    rounds: dict[str, list[float]] = {k: [] for k in tools}
    names = list(tools)
    for r in range(args.rounds):
        totals = dict.fromkeys(tools, 0.0)
        for i, p in enumerate(files):
            order = names[r % len(names):] + names[: r % len(names)]  # rotate who goes first
            for k in order:
                t0 = time.process_time()
                tools[k](p)
                dt = time.process_time() - t0
                per[k][i].append(dt)
                totals[k] += dt
        for k in tools:
            rounds[k].append(totals[k])
    med = {k: sum(statistics.median(x) for x in per[k]) for k in tools}
    best = {k: min(rounds[k]) for k in tools}
    print(f"{len(files)} rollouts, {nlines:,} lines, {size / 1e6:.1f} MB; {args.rounds} interleaved rounds; python {sys.version.split()[0]}")
    print(f"{'reader':<10} {'rollouts/s':>11} {'lines/s':>12} {'MB/s':>8} {'x floor':>8}" + (f" {'x atif-make':>12}" if "atif-make" in tools else ""))
    for k in tools:
        row = f"{k:<10} {len(files) / med[k]:>11.1f} {nlines / med[k]:>12,.0f} {size / 1e6 / med[k]:>8.1f} {med[k] / med['floor']:>8.2f}"
        if "atif-make" in tools:
            row += f" {med[k] / med['atif-make']:>12.2f}"
        print(row)
    print("best round: " + ", ".join(f"{k} {best[k]:.3f}s" for k in tools)
          + f"; trajkit/floor {best['trajkit'] / best['floor']:.2f}"
          + (f", trajkit/atif-make {best['trajkit'] / best['atif-make']:.2f}" if "atif-make" in tools else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
