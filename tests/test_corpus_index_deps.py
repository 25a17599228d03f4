"""``trajkit index`` and its optional dependency: pyarrow is looked for, not
imported, before any work (an index of an unchanged corpus writes nothing and
never imports it), and a missing or broken pyarrow is a clear message with
exit code 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "examples" / "openhands-v0-trial"


def _index(out: Path, prelude: str = "", env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """``trajkit index ROOT --out OUT --json -j 1`` as a process; prints, at
    exit, whether pyarrow was imported (last line of stderr)."""
    code = (
        "import atexit, sys\n" + prelude +
        "atexit.register(lambda: sys.stderr.write('\\npyarrow-imported=' + str(sys.modules.get('pyarrow') is not None) + '\\n'))\n"
        "sys.argv = ['trajkit', 'index', sys.argv[1], '--out', sys.argv[2], '--json', '-j', '1']\n"
        "from trajkit.cli import run\nrun()\n"
    )
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", code, str(ROOT), str(out)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)


def test_a_reindex_of_an_unchanged_corpus_imports_no_pyarrow(tmp_path):
    out = tmp_path / "idx"
    first = _index(out)
    assert first.returncode == 0, first.stderr
    assert first.stderr.rstrip().endswith("pyarrow-imported=True")  # the first index writes tables
    again = _index(out)
    assert again.returncode == 0, again.stderr
    assert '"skipped_unchanged": 1' in again.stdout and '"indexed": 0' in again.stdout
    assert again.stderr.rstrip().endswith("pyarrow-imported=False")


def test_no_pyarrow_is_a_message_and_exit_2(tmp_path):
    p = _index(tmp_path / "idx", prelude="sys.modules['pyarrow'] = None\n")
    assert p.returncode == 2
    assert "trajkit index needs pyarrow: pip install 'trajkit[tables]'" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "idx").exists() or not any((tmp_path / "idx").rglob("*.parquet"))


def test_a_broken_pyarrow_is_a_message_and_exit_2(tmp_path):
    fake = tmp_path / "site" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libarrow.so: cannot open shared object file')\n")
    p = _index(tmp_path / "idx", env_extra={"PYTHONPATH": str(tmp_path / "site")})
    assert p.returncode == 2, p.stderr
    assert "trajkit index needs a working pyarrow (libarrow.so: cannot open shared object file)" in p.stderr
    assert "Traceback" not in p.stderr


def _progress(env_extra: dict, quiet: bool) -> str:
    """Whether a LiveProgress on a piped stderr imported rich.console, and whether it draws."""
    code = ("import sys\nfrom trajkit.cli._common import LiveProgress\n"
            f"with LiveProgress(rate=True, quiet={quiet!r}) as bar:\n    pass\n"
            "print('rich.console' in sys.modules, bar.enabled)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       env=dict(env, **env_extra), timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_the_progress_bar_imports_rich_only_when_it_may_draw():
    # a piped stderr (as in a script or CI) or --quiet: no rich import (a re-index of an unchanged corpus
    # is over in a fraction of a second); a variable that makes rich draw on a pipe still does
    assert _progress({}, quiet=False) == "False False"
    assert _progress({"FORCE_COLOR": "1"}, quiet=True) == "False False"
    assert _progress({"FORCE_COLOR": "1"}, quiet=False) == "True True"
    assert _progress({"TTY_COMPATIBLE": "1"}, quiet=False) == "True True"


def test_may_be_terminal_is_never_false_where_rich_says_terminal(monkeypatch):
    from rich.console import Console

    from trajkit.cli._common import _may_be_terminal

    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

        def write(self, s):
            return len(s)

        def flush(self):
            pass

    envs = [{}, {"FORCE_COLOR": ""}, {"FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "0"}, {"TTY_COMPATIBLE": "1"}]
    seen = set()
    for env in envs:
        for tty in (False, True):
            for k in ("FORCE_COLOR", "TTY_COMPATIBLE"):
                monkeypatch.delenv(k, raising=False)
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            rich_says = Console(file=Stream(tty)).is_terminal
            if rich_says:
                assert _may_be_terminal(Stream(tty)), (env, tty)
            seen.add(rich_says)
            if not env:
                assert _may_be_terminal(Stream(tty)) == tty  # no variable: the TTY alone decides
    assert seen == {True, False}
