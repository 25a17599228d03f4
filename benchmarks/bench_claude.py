"""Benchmark: reading Claude Code transcripts, against the orjson floor per
line and against a peer reader from PyPI (``claude-code-log``).

Builds (once, cached in benchmarks/_corpus_claude/) a corpus of project
folders from the shared samples (``corpus/claude_code/…/real_projects``):
byte copies of the real 2.1.17 / 2.1.42 sessions (with their sub-agent
folders), plus long sessions stitched from the real sub-agent file (its
rows cycled with fresh ``uuid`` / ``message.id`` / ``tool_use`` ids and a
re-linked ``parentUuid`` chain, 500 to 3,000 lines each).

Then, in the same run, it times per line:

- trajkit: ``claude_code.read(session)``: decoding, events, the row tree,
  usage once per response, pairing, steps and sub-agents;
- the floor: the same files' bytes read and every line decoded with
  ``orjson.loads``;
- the peer: ``claude_code_log.converter.load_transcript(path, silent=True)``
  (pydantic models of every row, its DAG and sub-agent loading), run in the
  peer's own interpreter (a throwaway venv: the peer is no dependency of
  trajkit) together with the same orjson floor there, so both ratios are
  to a floor measured in the same process and run.

Usage::

    python3 -m venv /tmp/cc-peer && /tmp/cc-peer/bin/pip install claude-code-log==1.7.0 orjson
    .venv/bin/python benchmarks/bench_claude.py [--rounds R] [--peer-python /tmp/cc-peer/bin/python]

Without the peer interpreter only the trajkit / floor ratio is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
REAL = SHARED / "corpus" / "claude_code" / "iansherr+claude-code-log" / "test" / "test_data" / "real_projects"
AGENT = REAL / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20" / "subagents" / "agent-a2271d1.jsonl"

from trajkit.formats.claude_code import read  # noqa: E402
from trajkit.model import ReadOptions  # noqa: E402

CORPUS = HERE / "_corpus_claude"
VERSION = "1"

PEER_SCRIPT = r"""
import json, sys, time, orjson
from pathlib import Path
from claude_code_log.converter import load_transcript
sessions = json.loads(sys.stdin.read())
out = {"peer": [], "floor": []}
clock = time.perf_counter
for main, files in sessions:
    t = clock(); load_transcript(Path(main), silent=True); out["peer"].append(clock() - t)
    t = clock()
    for f in files:
        for line in Path(f).read_bytes().split(b"\n"):
            if line.strip():
                orjson.loads(line)
    out["floor"].append(clock() - t)
print("\nBENCH-RESULT " + json.dumps(out))
"""


def _stitched(n_lines: int, rng: random.Random, out: Path) -> None:
    rows = [orjson.loads(x) for x in AGENT.read_bytes().splitlines() if x.strip()]
    sid = str(uuid.UUID(int=rng.getrandbits(128)))
    lines = []
    prev = None
    k = 0
    while len(lines) < n_lines:
        k += 1
        ids: dict[str, str] = {}
        for r in rows:
            r = json.loads(json.dumps(r))
            r.pop("isSidechain", None)
            r.pop("agentId", None)
            r["sessionId"] = sid
            r["uuid"] = str(uuid.UUID(int=rng.getrandbits(128)))
            r["parentUuid"] = prev
            prev = r["uuid"]
            msg = r.get("message") if isinstance(r.get("message"), dict) else {}
            if isinstance(msg.get("id"), str):
                msg["id"] = ids.setdefault(msg["id"], f"msg_{k}_{len(ids)}")
            for b in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    b["id"] = ids.setdefault(b["id"], f"toolu_{k}_{len(ids)}")
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    b["tool_use_id"] = ids.setdefault(b["tool_use_id"], f"toolu_{k}_{len(ids)}")
            lines.append(orjson.dumps(r))
    (out / f"{sid}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def build(copies: int, long_sessions: int) -> list[Path]:
    stamp = CORPUS / f".built-{VERSION}-{copies}-{long_sessions}"
    if not stamp.exists():
        shutil.rmtree(CORPUS, ignore_errors=True)
        CORPUS.mkdir(parents=True)
        for i in range(copies):
            for proj in sorted(REAL.iterdir()):
                shutil.copytree(proj, CORPUS / f"{proj.name}-{i:03d}")
        rng = random.Random(7)
        for i in range(long_sessions):
            d = CORPUS / f"-long-{i:03d}"
            d.mkdir()
            _stitched(rng.randrange(500, 3000), rng, d)
        stamp.write_text("")
    return sorted(p for d in sorted(CORPUS.iterdir()) if d.is_dir() for p in d.glob("*.jsonl"))


def _lines(files: list[str]) -> tuple[int, int]:
    n = b = 0
    for f in files:
        data = Path(f).read_bytes()
        b += len(data)
        n += sum(1 for x in data.split(b"\n") if x.strip())
    return n, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=40, help="copies of each real project folder")
    ap.add_argument("--long", type=int, default=20, help="long stitched sessions")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer-python", default="/tmp/cc-peer/bin/python")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sessions = build(args.copies, args.long)
    opts = ReadOptions()
    files = []
    for s in sessions:
        sess = read(s, opts)
        files.append([f.path for x in sess.walk() for f in x.files if f.status == "read"])
    n_lines, n_bytes = _lines([f for fs in files for f in fs])
    print(f"corpus: {len(sessions)} sessions, {n_lines} lines, {n_bytes / 1e6:.1f} MB in {CORPUS} (ready in {time.perf_counter() - t0:.1f}s)")
    peer_ok = Path(args.peer_python).exists()
    payload = json.dumps([[str(s), fs] for s, fs in zip(sessions, files)])
    res: dict[str, list[float]] = {"trajkit": [], "floor": [], "peer": [], "peer_floor": []}
    clock = time.perf_counter
    for _ in range(args.rounds):
        t = clock()
        for s in sessions:
            read(s, opts)
        res["trajkit"].append(clock() - t)
        t = clock()
        for fs in files:
            for f in fs:
                for line in Path(f).read_bytes().split(b"\n"):
                    if line.strip():
                        orjson.loads(line)
        res["floor"].append(clock() - t)
        if peer_ok:
            p = subprocess.run([args.peer_python, "-c", PEER_SCRIPT], input=payload, capture_output=True, text=True, timeout=3600)
            if p.returncode != 0:
                print(f"peer failed: {p.stderr[-2000:]}", file=sys.stderr)
                peer_ok = False
            else:
                got = json.loads(p.stdout.rsplit("BENCH-RESULT ", 1)[1])
                res["peer"].append(sum(got["peer"]))
                res["peer_floor"].append(sum(got["floor"]))

    def per_line(v: float) -> str:
        return f"{n_lines / v:,.0f} lines/s ({v / n_lines * 1e6:.1f} us/line)"

    med = {k: statistics.median(v) for k, v in res.items() if v}
    print(f"trajkit full read:   {per_line(med['trajkit'])}")
    print(f"orjson floor:        {per_line(med['floor'])}")
    print(f"ratio trajkit / floor: {med['trajkit'] / med['floor']:.2f}x (median of {args.rounds} rounds)")
    if "peer" in med:
        print(f"claude-code-log 1.7.0 load_transcript: {per_line(med['peer'])}")
        print(f"orjson floor in the peer's process:   {per_line(med['peer_floor'])}")
        print(f"ratio peer / its floor: {med['peer'] / med['peer_floor']:.2f}x")
        print(f"ratio peer / trajkit:   {med['peer'] / med['trajkit']:.2f}x (trajkit is {'faster' if med['peer'] > med['trajkit'] else 'slower'})")
    else:
        print("peer not measured: create it with `python3 -m venv /tmp/cc-peer && /tmp/cc-peer/bin/pip install claude-code-log==1.7.0 orjson`")


if __name__ == "__main__":
    main()
