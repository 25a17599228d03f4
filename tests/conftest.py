"""Shared test fixtures: where the shared corpus is, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The shared corpus sits beside the checkout (CI lays ../shared there too).
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"shared corpus not found at {CORPUS} (set TRAJKIT_SHARED)")
    return CORPUS


def run_cli(*args: str, check: bool = False, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m trajkit ARGS`` in a real subprocess."""
    proc = subprocess.run(
        [sys.executable, "-m", "trajkit", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        input=input,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"trajkit {' '.join(map(str, args))} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def odd_folder(tmp_path: Path) -> Path:
    """A folder of every kind of entry: files, a folder, symlinks to both, a dangling one, a FIFO
    (what the probe and the discovery walk must answer as the file system does)."""
    (tmp_path / "f.json").write_text("{}")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "inner").write_text("x")
    (tmp_path / "to-f").symlink_to(tmp_path / "f.json")
    (tmp_path / "to-d").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    return tmp_path
