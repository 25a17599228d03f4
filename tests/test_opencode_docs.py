"""docs/opencode.md: every `trajkit` line of its example block runs (a real subprocess each)."""

from __future__ import annotations

import os
import re
import shlex

import pytest

from conftest import REPO, run_cli

DOC = REPO / "docs" / "opencode.md"


def _example_lines() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```console\n\$ FIX=(\S+)\n(.*?)```", text, re.S)
    assert block, "docs/opencode.md lost its example block"
    fix = block.group(1)
    lines = [ln[2:] for ln in block.group(2).splitlines() if ln.startswith("$ trajkit ")]
    return [ln.replace("$FIX", fix) for ln in lines]


@pytest.mark.parametrize("line", _example_lines())
def test_doc_example_runs(line, tmp_path):
    args = [a.replace("/tmp/", str(tmp_path) + os.sep) for a in shlex.split(line)[1:]]
    proc = run_cli(*args)
    # certify exits 1 when its verdict is a failure; every other line must succeed
    ok = (0, 1) if args[0] == "certify" else (0,)
    assert proc.returncode in ok, f"{line}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip()
