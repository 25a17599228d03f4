"""The process engine's workers never inherit the driver's thread state.

`trajkit index` finds runs in a background thread while the pool starts its
workers. A worker made by a plain ``fork`` of that driver inherits every lock
another thread held at that moment, locked, with no thread left to release
it: the worker waits forever (CI hung 300 s on it). The test holds a lock in
a driver thread for the whole run, and the task takes the same lock: a
forked worker would hang, a worker from the forkserver starts clean.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

HELPER = """
import threading
LOCK = threading.Lock()

def task(x):
    with LOCK:
        return x * 2
"""

DRIVER = """
import sys, threading
sys.path[:0] = [{here!r}, {src!r}]
import heldlock
from trajkit.corpus.run import run

held, done = threading.Event(), threading.Event()

def holder():
    with heldlock.LOCK:  # a driver thread holds it while the workers start
        held.set()
        done.wait()

if __name__ == "__main__":  # workers import the main module again, as multiprocessing's spawn does
    t = threading.Thread(target=holder, daemon=True)
    t.start()
    held.wait()
    out = []
    for b in run(heldlock.task, range(12), engine="process", jobs=2, batch_size=2):
        out.append((b.number, b.results))
    done.set()
    print(out)
"""


def test_workers_start_clean_while_a_driver_thread_holds_a_lock(tmp_path):
    (tmp_path / "heldlock.py").write_text(HELPER)
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER.format(here=str(tmp_path), src=str(REPO / "src"))))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    expect = [(n, [2 * x for x in range(2 * n, 2 * n + 2)]) for n in range(6)]
    assert p.stdout.strip() == repr(expect)
