"""Benchmark: `trajkit view` pages of 1k, 5k and 20k steps, opened in headless Chromium.

Builds (once, cached in benchmarks/_corpus_view/) OpenHands V0 flat exports
of 1,000, 5,000 and 20,000 steps from the real corpus pairs
(tests/view_shapes.py: the V0 flat exports' run / read / edit action and
observation events, copied with fresh ids; every observation is made unique
by its step number so no two steps are the same text), writes each page with
``trajkit.view.html.render`` and times, in Debian's ``chromium`` driven by
Playwright (a fresh browser context per load, one warm-up load first):

- **load**: from navigation to the first timeline page drawn (the page sets
  ``body[data-ready]``), best and median of ``--rounds``, wall clock as
  Playwright sees it (stderr also shows the page's own
  ``performance.now()`` at that moment, without the driver's round trips);
- **deep link**: the same, opening ``#step-<last>`` (the last timeline page
  inflated and scrolled to);
- **filter**: typing a query that matches one step (every page inflated and
  searched).

Goal (issue 13): the 20,000-step page opens in <= 3 s. It also prints the
page size and the time Python took to write it. Usage:
``python benchmarks/bench_view.py [--rounds N] [--sizes 1000,5000,20000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))

import trajkit  # noqa: E402
from trajkit.view.html import render  # noqa: E402
from trajkit.view.transcript import transcript  # noqa: E402
from view_shapes import long_v0_run  # noqa: E402

CORPUS_DIR = HERE / "_corpus_view"


def build(n: int) -> Path:
    dest = CORPUS_DIR / f"v0-{n}.json"
    if not dest.exists():
        def unique(i, a, o):
            o["content"] = f"{o.get('content') or ''}\n[step {i + 1}]"
        long_v0_run(dest, n, unique)
    return dest


def wait_ready(page, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not page.evaluate("document.body.dataset.ready === '1'"):
        if time.monotonic() > end:
            raise TimeoutError("page never became ready")
        page.wait_for_timeout(10)


def timed_open(browser, url: str) -> float:
    ctx = browser.new_context(viewport={"width": 1100, "height": 700})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    t = time.perf_counter()
    page.goto(url, wait_until="commit")
    wait_ready(page)
    took = time.perf_counter() - t
    in_page = int(page.evaluate("document.body.dataset.readyMs")) / 1000
    ctx.close()
    if errors:
        raise RuntimeError(errors)
    return took, in_page


def timed_filter(browser, url: str, query: str) -> float:
    ctx = browser.new_context(viewport={"width": 1100, "height": 700})
    page = ctx.new_page()
    page.goto(url)
    wait_ready(page)
    t = time.perf_counter()
    page.fill("#filter", query)
    end = time.monotonic() + 120
    while page.evaluate("document.querySelectorAll('#timeline > .step').length") != 1:
        if time.monotonic() > end:
            raise TimeoutError("filter never narrowed")
        page.wait_for_timeout(10)
    took = time.perf_counter() - t
    ctx.close()
    return took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="1000,5000,20000")
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    CORPUS_DIR.mkdir(exist_ok=True)
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
        for n in (int(x) for x in args.sizes.split(",")):
            run = build(n)
            t = time.perf_counter()
            session = trajkit.read(run)
            read_s = time.perf_counter() - t
            t = time.perf_counter()
            html = render(transcript(session))
            render_s = time.perf_counter() - t
            page = CORPUS_DIR / f"v0-{n}.html"
            page.write_text(html, encoding="utf-8")
            assert len(session.steps) == n
            url = page.resolve().as_uri()
            timed_open(browser, url)  # warm-up
            loads = [timed_open(browser, url) for _ in range(args.rounds)]
            deep = [timed_open(browser, url + f"#step-{n}") for _ in range(args.rounds)]
            print(f"{n}: load (wall, in page) {loads}; deep link {deep}", file=sys.stderr)
            loads, deep = [x[0] for x in loads], [x[0] for x in deep]
            filt = timed_filter(browser, url, f"[step {n}]")
            rows.append((n, page.stat().st_size, read_s, render_s, loads, deep, filt))
        browser.close()
    print(f"{'steps':>7} {'page MB':>8} {'read s':>7} {'write s':>8} {'load best/med s':>16} {'deep link best/med s':>21} {'filter s':>9}")
    for n, size, read_s, render_s, loads, deep, filt in rows:
        print(f"{n:>7} {size / 1e6:>8.1f} {read_s:>7.2f} {render_s:>8.2f} {min(loads):>7.2f} / {statistics.median(loads):<6.2f}"
              f" {min(deep):>11.2f} / {statistics.median(deep):<6.2f} {filt:>9.2f}")
    worst = max(statistics.median(r[4]) for r in rows)
    print(f"goal: the largest page opens in <= 3 s (median load {worst:.2f} s)")
    print(json.dumps({"chromium": os.path.basename(chromium), "rounds": args.rounds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
