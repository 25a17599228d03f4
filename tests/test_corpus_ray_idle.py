"""The Ray engine starts no Ray when there is nothing to read (an empty ROOT,
or a re-index that finds every run unchanged), and a missing Ray is still an
error. Each case runs in a process of its own: the module-wide local Ray of
``test_corpus_ray.py`` must not be seen or touched here."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_nothing_to_read_starts_no_ray(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    example = ROOT / "examples" / "openhands-v0-trial"
    p = _python("""
        import sys
        from trajkit.corpus import run
        from trajkit.corpus.index import build
        import ray
        assert list(run(int, [], engine="ray", jobs=2)) == []
        print("after run", ray.is_initialized())
        r = build([sys.argv[1]], sys.argv[2], engine="ray", jobs=2)
        print("after empty build", r.found, ray.is_initialized())
        first = build([sys.argv[3]], sys.argv[4], engine="process", jobs=1)
        again = build([sys.argv[3]], sys.argv[4], engine="ray", jobs=2)
        print("after unchanged re-index", first.indexed, again.indexed, again.skipped, ray.is_initialized())
    """, str(empty), str(tmp_path / "out-empty"), str(example), str(tmp_path / "out-example"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "after run False"
    assert lines[1] == "after empty build 0 False"
    # the example is one trial (one run): read once by the process engine, then found unchanged
    assert lines[2] == "after unchanged re-index 1 0 1 False"


def test_a_missing_ray_is_still_an_error_with_nothing_to_read(tmp_path):
    p = _python("""
        import sys
        sys.modules["ray"] = None  # what an environment without the [ray] extra gives: import ray fails
        from trajkit.corpus import run
        from trajkit.corpus.run import EngineError
        try:
            list(run(int, [], engine="ray"))
        except EngineError as e:
            print("EngineError", e)
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("EngineError the ray engine needs Ray Data: pip install 'trajkit[ray]'")
