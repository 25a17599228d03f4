"""The README's examples run as written and print what it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO

README = (REPO / "README.md").read_text()


def console_examples() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every `$ ` line of ```console blocks."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif line.strip() and out:
                out[-1][1].append(line.rstrip())
    return out


EXAMPLES = console_examples()


def test_readme_has_examples():
    assert len(EXAMPLES) >= 5
    assert "make demo" in README and "make test" in README


def test_readme_console_examples_in_order(tmp_path):
    # In order, as a reader would type them: later examples use earlier outputs.
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env["COLUMNS"] = "200"
    for d in ("/tmp/trajkit-asf", "/tmp/trajkit-atif", "/tmp/trajkit-demo", "/tmp/trajkit-index"):
        subprocess.run(["rm", "-rf", d])
    for command, expected in EXAMPLES:
        p = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, f"{command!r} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
        out = p.stdout + p.stderr
        for line in expected:
            assert line.strip() in out, f"{command!r}: expected {line!r} in output:\n{out}"


def test_readme_python_examples():
    for code in re.findall(r"```python\n(.*?)```", README, re.S):
        p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr


def test_make_demo_commands_run():
    # `make demo` runs these; the venv is the one running the tests.
    makefile = (REPO / "Makefile").read_text()
    demo = re.search(r"^demo:.*?\n((?:\t.*\n)+)", makefile, re.M).group(1)
    for line in demo.strip().splitlines():
        cmd = line.strip().replace("$(BIN)/", "")
        env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        p = subprocess.run(["bash", "-c", cmd], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, f"{cmd}: {p.stderr}"
