"""Benchmark: reading opencode sessions out of an SQLite store, against the query-and-decode floor.

Builds (once, cached in benchmarks/_corpus_opencode/) one ``opencode.db``
holding many sessions made from the real opencode-ai 1.18.33 rows of the
shared corpus (``corpus/opencode/opencode_db_rows_session.json``): each
session repeats the real user message, tool call and answer turns with fresh
ids, 2 to 200 model calls each, in the 1.18.33 tables.

Then, in the same run and process, session by session, it times:

- the floor: the rows of one session (``session``, ``message`` and ``part``
  selected by session id, in opencode's order) with every ``data`` column
  decoded by ``orjson.loads``, on a read-only connection opened for it;
- trajkit: ``trajkit.read(db#id, format="opencode")``: opening the store
  read-only, the schema check, the rows, decoding, events, steps, usage and
  the outcome, what ``trajkit steps`` does before printing.

It prints sessions/s and rows/s for both and the ratio trajkit/floor.
Usage: ``.venv/bin/python benchmarks/bench_opencode.py [--sessions N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))

from opencode_data import corpus_rows, make_db  # noqa: E402

from trajkit import registry  # noqa: E402

CORPUS = HERE / "_corpus_opencode"


def build(n_sessions: int, seed: int = 7) -> Path:
    db = CORPUS / f"opencode-{n_sessions}.db"
    if db.exists():
        return db
    rng = random.Random(seed)
    real = corpus_rows()
    s0, (mu, ma1, ma2) = real["session"][0], real["message"]
    parts = real["part"]
    rows: dict = {"session": [], "message": [], "part": []}
    t = 1795974304464
    for k in range(n_sessions):
        sid = f"ses_bench{k:06d}"
        calls = rng.randint(2, 200)
        rows["session"].append({**s0, "id": sid, "time_created": t, "time_updated": t + calls})
        n = 0

        def nid(prefix: str) -> str:
            nonlocal n
            n += 1
            return f"{prefix}_{k:06d}{n:06d}"

        uid = nid("msg")
        rows["message"].append({**mu, "id": uid, "session_id": sid, "time_created": t})
        rows["part"].append({**parts[0], "id": nid("prt"), "message_id": uid, "session_id": sid})
        for c in range(calls):
            last = c == calls - 1
            src_msg, src_parts = (ma2, parts[6:9]) if last else (ma1, parts[1:6])
            mid = nid("msg")
            data = json.loads(json.dumps(src_msg["data"]))
            data["parentID"] = uid
            rows["message"].append({**src_msg, "id": mid, "session_id": sid, "time_created": t + c + 1, "data": data})
            for p in src_parts:
                d = json.loads(json.dumps(p["data"]))
                if d.get("type") == "tool":
                    d["callID"] = f"call_{k}_{c}"
                rows["part"].append({**p, "id": nid("prt"), "message_id": mid, "session_id": sid, "data": d})
        t += 10_000
    CORPUS.mkdir(exist_ok=True)
    tmp = db.with_suffix(".tmp")
    make_db(tmp, rows)
    tmp.rename(db)
    return db


def floor(db: Path, sid: str) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        n = len(con.execute("SELECT * FROM session WHERE id = ?", (sid,)).fetchall())
        for r in con.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (sid,)):
            orjson.loads(r[1])
            n += 1
        for r in con.execute("SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (sid,)):
            orjson.loads(r[2])
            n += 1
        return n
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    db = build(args.sessions)
    con = sqlite3.connect(db)
    sids = [r[0] for r in con.execute("SELECT id FROM session ORDER BY id")]
    rows = sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("session", "message", "part"))
    con.close()
    size = db.stat().st_size
    print(f"store: {db.name}, {len(sids)} sessions, {rows} rows, {size / 1e6:.1f} MB")
    t_floor: list[float] = []
    t_read: list[float] = []
    steps = 0
    for _ in range(args.rounds):
        a = b = 0.0
        steps = 0
        for sid in sids:  # interleaved, session by session
            t0 = time.perf_counter()
            floor(db, sid)
            t1 = time.perf_counter()
            s = registry.read(f"{db}#{sid}", format="opencode")
            t2 = time.perf_counter()
            steps += len(s.steps)
            a += t1 - t0
            b += t2 - t1
        t_floor.append(a)
        t_read.append(b)
    fa, rb = statistics.median(t_floor), statistics.median(t_read)
    print(f"floor (query + orjson.loads of every data column): {len(sids) / fa:8.1f} sessions/s  {rows / fa:10.0f} rows/s")
    print(f"trajkit read (events, {steps} steps, usage, outcome): {len(sids) / rb:8.1f} sessions/s  {rows / rb:10.0f} rows/s")
    print(f"ratio trajkit / floor: {rb / fa:.2f}x (medians of {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
