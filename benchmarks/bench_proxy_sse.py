"""Benchmark: one huge SSE event that never ends, through ``trajkit proxy``.

An upstream (stdlib HTTP server in this process) answers a streamed chat
call with ``data: {"pad": "xxx...`` of N MB in 64 KB pieces and then closes,
without the blank line that would end the event. The client reads the whole
answer; the time is from the request to the last byte. It runs:

* ``direct``: the client against the upstream (the floor);
* ``no cap``: through the proxy with ``--max-event-bytes 0`` (the event is
  buffered whole and parsed at the end: the cost of finding event ends);
* ``capped``: through the proxy with the default cap (16 MiB; bigger events
  are passed on as they arrive and the call is recorded as cut).

Linear cost means each doubling of N doubles the time (ratio ~2.0); the
quadratic splitter this replaced gave 1.0/3.2/11.4 s for 10/20/40 MB.

Usage: ``.venv/bin/python benchmarks/bench_proxy_sse.py [--sizes 10,20,40] [--repeat 3]``
(``PYTHONPATH=OLD/src ... --modes direct,capped`` times an older trajkit).
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

PIECE = b"x" * 65536


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        n = int(body["x_size"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(b'data: {"pad": "')
        left = n
        while left > 0:
            self.wfile.write(PIECE[: min(left, len(PIECE))])
            left -= len(PIECE)
        self.wfile.flush()


def timed_call(port: int, size: int) -> tuple[float, int]:
    body = json.dumps({"model": "m", "stream": True, "messages": [], "x_size": size})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    got = 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        got += len(b)
    conn.close()
    return time.perf_counter() - t0, got


def start_proxy(upstream: str, out: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    meta = out / "proxy.json"
    proc = subprocess.Popen([sys.executable, "-m", "trajkit", "proxy", "--upstream", upstream, "--out", str(out),
                             "--port", "0", "--quiet", *extra], cwd=REPO, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        if meta.exists():
            try:
                return proc, json.loads(meta.read_text())["port"]
            except ValueError:
                pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the proxy did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,20,40", help="event sizes in MB")
    ap.add_argument("--repeat", type=int, default=3, help="best of N")
    ap.add_argument("--modes", default="direct,no cap,capped",
                    help="which of direct, no cap, capped to run (an older trajkit has no --max-event-bytes: use direct,capped)")
    args, _other = ap.parse_known_args()  # run.py passes every benchmark the same extra arguments
    sizes = [int(float(s) * 1_000_000) for s in args.sizes.split(",")]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    up_port = srv.server_address[1]
    upstream = f"http://127.0.0.1:{up_port}/v1"
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        wanted = {m.strip() for m in args.modes.split(",")}
        modes = [m for m in [("direct", None), ("no cap", ("--max-event-bytes", "0")), ("capped", ())] if m[0] in wanted]
        for name, extra in modes:
            proc = None
            port = up_port
            if extra is not None:
                proc, port = start_proxy(upstream, Path(tmp) / name.replace(" ", "-"), *extra)
            try:
                for size in sizes:
                    best = min(timed_call(port, size)[0] for _ in range(args.repeat))
                    rows.setdefault(name, []).append(best)
            finally:
                if proc is not None:
                    proc.terminate()
                    proc.wait(30)
    srv.shutdown()
    print(f"one unterminated SSE event, best of {args.repeat}; time from request to last byte")
    print(f"{'':10}" + "".join(f"{s / 1e6:>10.0f} MB" for s in sizes) + "   ratios (each size / the one before)")
    for name, ts in rows.items():
        ratios = " ".join(f"{b / a:.2f}" for a, b in zip(ts, ts[1:]))
        print(f"{name:10}" + "".join(f"{t:>12.3f}s"[:13] for t in ts) + f"   {ratios}")


if __name__ == "__main__":
    main()
