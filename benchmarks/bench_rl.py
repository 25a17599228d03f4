"""Benchmark: rollout traces (read, turns) and the capture proxy, each against
a baseline measured in the same run.

Builds (once, cached in ``benchmarks/_corpus_rl/``) rollouts of realistic
size: each has a title call and ``--turns`` agent turns whose outputs are a
few hundred captured ``token_id:N`` tokens with logprob entries (top-5), and
prompts captured as ids, in the OpenEnv proxy record shape. Then it times:

1. read: ``trajkit.registry.read(rollout)`` (decode, classify, unroll events,
   steps) against the floor, ``orjson.loads`` of every line of the same file;
2. turns: ``derive_turns`` on captured prompt ids (no tokenizer) against the
   read alone (what deriving adds to reading);
3. proxy: ``--calls`` streaming chat calls, ``--concurrency`` at a time, to
   the stdlib vLLM stand-in of ``examples/opencode-proxy/stub_vllm.py``,
   directly and through ``trajkit proxy`` (a subprocess) — the ratio is the
   proxy's overhead on wall time, records fsync'd included.

Usage: ``.venv/bin/python benchmarks/bench_rl.py [--rollouts N] [--turns T]
[--calls C] [--concurrency K]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

import orjson  # noqa: E402

from trajkit.registry import read  # noqa: E402
from trajkit.rl.turns import derive_turns  # noqa: E402

CORPUS = HERE / "_corpus_rl"
SYS = "You are opencode, an interactive CLI tool that helps users with software engineering tasks. " * 40
TOOLS = [{"type": "function", "function": {"name": n, "description": f"The {n} tool. " * 30,
                                          "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
         for n in ("bash", "read", "edit", "write", "glob", "grep")]


def entry(tid: int, rng: random.Random) -> dict:
    lp = -rng.random() * 3
    return {"token": f"token_id:{tid}", "logprob": lp, "bytes": None,
            "top_logprobs": [{"token": f"token_id:{tid + k}", "logprob": lp - k, "bytes": None} for k in range(5)]}


def build_rollout(path: Path, turns: int, seed: int) -> None:
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    lines = []
    prompt = [rng.randrange(150000) for _ in range(3000)]
    messages = [{"role": "system", "content": SYS}, {"role": "user", "content": "Fix the failing test in src/app.py."}]
    title_ids = [rng.randrange(150000) for _ in range(12)]
    ents = [entry(t, rng) for t in title_ids]
    lines.append({"turn": 1, "request": {"model": "m", "messages": [{"role": "system", "content": "You are a title generator."},
                                                                    {"role": "user", "content": "x"}], "stream": True},
                  "response": {"id": "t", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Title"},
                                                                                      "finish_reason": "stop", "logprobs": {"content": ents}}],
                               "usage": {"completion_tokens": 12}},
                  "logprobs": ents, "completion_tokens": [e["token"] for e in ents], "completion_token_ids": [],
                  "per_token_logps": [e["logprob"] for e in ents], "finish_reason": "stop", "latency_s": 0.1, "timestamp": 1.0})
    for k in range(turns):
        last = k == turns - 1
        out = [rng.randrange(150000) for _ in range(rng.randrange(80, 600))]
        ents = [entry(t, rng) for t in out]
        tcs = [] if last else [{"id": f"call_{k}", "type": "function",
                                "function": {"name": rng.choice(["bash", "read", "edit"]), "arguments": json.dumps({"x": "y" * 40})}}]
        msg = {"role": "assistant", "content": "Working on it. " * 5}
        if tcs:
            msg["tool_calls"] = tcs
        lines.append({
            "turn": k + 2,
            "request": {"model": "m", "messages": list(messages), "tools": TOOLS, "stream": True, "logprobs": True, "top_logprobs": 5},
            "response": {"id": f"r{k}", "object": "chat.completion",
                         "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if tcs else "stop",
                                      "logprobs": {"content": ents}}],
                         "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(out)}, "prompt_token_ids": list(prompt)},
            "logprobs": ents, "completion_tokens": [e["token"] for e in ents], "completion_token_ids": [],
            "per_token_logps": [e["logprob"] for e in ents], "finish_reason": "tool_calls" if tcs else "stop",
            "latency_s": 1.0, "timestamp": 2.0 + k, "prompt_token_ids": list(prompt),
        })
        tail = [rng.randrange(150000) for _ in range(rng.randrange(50, 400))]
        prompt = prompt + out + tail
        if tcs:
            messages = messages + [dict(msg), {"role": "tool", "tool_call_id": f"call_{k}", "content": "output line\n" * rng.randrange(5, 60)}]
    with open(path / "trace.jsonl", "wb") as f:
        for rec in lines:
            f.write(orjson.dumps(rec) + b"\n")


def corpus(n: int, turns: int) -> list[Path]:
    stamp = CORPUS / f".built-{n}-{turns}"
    if not stamp.exists():
        shutil.rmtree(CORPUS, ignore_errors=True)
        for i in range(n):
            build_rollout(CORPUS / f"rollout-{i:03d}", turns, i)
        stamp.write_text("ok")
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


def timed(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_read_turns(rollouts: list[Path], rounds: int) -> None:
    size = sum((p / "trace.jsonl").stat().st_size for p in rollouts) / 1e6

    def floor():
        for p in rollouts:
            for line in (p / "trace.jsonl").read_bytes().splitlines():
                orjson.loads(line)

    def reading():
        for p in rollouts:
            read(p)

    def turning():
        for p in rollouts:
            derive_turns(read(p), None)

    t_floor, t_read, t_turns = timed(floor, rounds), timed(reading, rounds), timed(turning, rounds)
    print(f"trace data: {len(rollouts)} rollouts, {size:.1f} MB")
    print(f"  floor  orjson.loads per line : {t_floor:7.3f}s  {size / t_floor:7.1f} MB/s")
    print(f"  read   trajkit read          : {t_read:7.3f}s  {size / t_read:7.1f} MB/s   read/floor  = {t_read / t_floor:5.2f}x")
    print(f"  turns  read + derive_turns   : {t_turns:7.3f}s  {size / t_turns:7.1f} MB/s   turns/read  = {t_turns / t_read:5.2f}x")


def _stream_call(port: int, k: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = {"model": "stub-model", "stream": True, "stream_options": {"include_usage": True}, "tools": TOOLS[:1],
            "logprobs": True, "return_tokens_as_token_ids": True,
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": f"task {k}"}]}
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    n = 0
    for line in r:
        if line.startswith(b"data:"):
            n += 1
            if line.strip() == b"data: [DONE]":
                break
    conn.close()
    return n


def _wait_file(path: Path, proc: subprocess.Popen) -> str:
    for _ in range(1200):
        if path.exists() and path.read_text().strip():
            return path.read_text()
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[:3]} exited {proc.returncode}")
        time.sleep(0.05)
    raise SystemExit(f"{path} never appeared")


def bench_proxy(calls: int, concurrency: int, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="trajkit-bench-rl-"))
    stub = proxy = None
    try:
        stub = subprocess.Popen([sys.executable, str(REPO / "examples/opencode-proxy/stub_vllm.py"),
                                 "--port-file", str(work / "stub.port"), "--max-seconds", "900"], stdout=subprocess.DEVNULL)
        up_port = int(_wait_file(work / "stub.port", stub))
        proxy = subprocess.Popen([sys.executable, "-m", "trajkit", "proxy", "--upstream", f"http://127.0.0.1:{up_port}/v1",
                                  "--out", str(work / "rollout"), "--port", "0", "--quiet", "--max-runtime", "900"],
                                 stderr=subprocess.DEVNULL, cwd=REPO)
        px_port = json.loads(_wait_file(work / "rollout" / "proxy.json", proxy))["port"]

        def run(port):
            with ThreadPoolExecutor(concurrency) as pool:
                chunks = list(pool.map(lambda k: _stream_call(port, k), range(calls)))
            assert all(c > 3 for c in chunks)

        run(up_port), run(px_port)  # warm up
        t_direct = timed(lambda: run(up_port), rounds)
        t_proxy = timed(lambda: run(px_port), rounds)
        recs = (work / "rollout" / "trace.jsonl").read_bytes().count(b"\n")
        print(f"proxy: {calls} streaming calls, {concurrency} at a time ({recs} records written in all)")
        print(f"  direct to upstream : {t_direct:7.3f}s  {calls / t_direct:7.1f} calls/s")
        print(f"  through the proxy  : {t_proxy:7.3f}s  {calls / t_proxy:7.1f} calls/s   proxy/direct = {t_proxy / t_direct:5.2f}x")
        print(f"  added latency per call: {(t_proxy - t_direct) / calls * concurrency * 1000:.1f} ms "
              "(the stub answers in ~1 ms; a real model call takes seconds)")
    finally:
        for p in (proxy, stub):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", type=int, default=20)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--skip-proxy", action="store_true")
    args = ap.parse_args()
    bench_read_turns(corpus(args.rollouts, args.turns), args.rounds)
    if not args.skip_proxy:
        bench_proxy(args.calls, args.concurrency, args.rounds)


if __name__ == "__main__":
    main()
