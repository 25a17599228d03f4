"""`convert DIR` says what it skipped and why (issue 14, item 7)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from conftest import REPO, run_cli


def _tree(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(REPO / "examples" / "openhands-v0-trial", runs / "trial")
    # A folder of JSON Lines no format reads.
    cc = runs / "claude-project"
    cc.mkdir()
    (cc / "events.jsonl").write_text('{"kind": "tick", "n": 1}\n{"kind": "tick", "n": 2}\n')
    (runs / "notes.txt").write_text("not a run\n")
    # A symlinked folder is not walked (a link could lead anywhere, or loop).
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "inner").mkdir(parents=True)
    (elsewhere / "inner" / "README").write_text("x\n")
    os.symlink(elsewhere, runs / "linked-folder")
    (runs / ".hidden").mkdir()
    return runs


def test_convert_dir_lists_what_it_skipped(tmp_path):
    runs = _tree(tmp_path)
    r = run_cli("convert", str(runs), "--to", "asf", "--out", str(tmp_path / "out"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["runs"] == 1
    skipped = {Path(s["path"]).name: s["reason"] for s in doc["skipped"]}
    # Exactly the three visible entries that hold no run; the trial and the hidden folder are not listed.
    assert set(skipped) == {"claude-project", "notes.txt", "linked-folder"}
    assert "no known format" in skipped["claude-project"]
    assert skipped["notes.txt"] == "no known format"
    assert "symlink" in skipped["linked-folder"]


def test_convert_dir_text_summary_names_skips_on_stderr(tmp_path):
    runs = _tree(tmp_path)
    r = run_cli("convert", str(runs), "--to", "atif", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "3 skipped" in r.stderr
    assert f"skipped {runs / 'claude-project'}: no known format" in r.stderr
    # stdout holds only the written files.
    for line in r.stdout.splitlines():
        assert Path(line).is_file()
