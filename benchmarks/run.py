"""Run every benchmark in this directory, one after another (`make bench`).

Each ``bench_*.py`` builds its corpus once (cached under
``benchmarks/_corpus_*``, git-ignored) and prints its own table of
throughput against the baseline named in its docstring, measured in the same
run. Extra arguments are passed to every benchmark (e.g. ``--rounds 5``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["bench_v0.py", "bench_v1.py", "bench_export.py", "bench_certify.py", "bench_rl.py"]


def main() -> int:
    scripts = [HERE / n for n in ORDER if (HERE / n).exists()]
    scripts += sorted(p for p in HERE.glob("bench_*.py") if p.name not in ORDER)
    failed = 0
    for s in scripts:
        print(f"=== {s.name}", flush=True)
        rc = subprocess.call([sys.executable, str(s), *sys.argv[1:]])
        if rc != 0:
            print(f"{s.name} exited {rc}", flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
