"""The documented example: a real opencode (npm ``opencode-ai``) runs headless
through ``trajkit proxy`` against a local vLLM-like stub, and ``trajkit turns``
derives its training turns.

Runs when npm can install opencode-ai (or ``$OPENCODE_BIN`` names a binary);
otherwise it is skipped and says why. The npm install goes to
``$TRAJKIT_OPENCODE_NPM_PREFIX`` (default ``~/.cache/trajkit/opencode-npm``) so
the ~185 MB binary is fetched once. This is the one rl test that uses the
network (the npm registry; opencode itself also looks up its provider package
there at start-up).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "opencode-proxy" / "run_example.py"
VERSION = "1.18.33"


def opencode_binary() -> str:
    """An opencode binary, installing it with npm if needed; skips with the reason when impossible."""
    env_bin = os.environ.get("OPENCODE_BIN")
    if env_bin:
        if not os.access(env_bin, os.X_OK):
            pytest.fail(f"$OPENCODE_BIN={env_bin} is not an executable file")
        return env_bin
    if not shutil.which("npm"):
        pytest.skip("skipped: npm is not installed, so opencode-ai cannot be installed (set $OPENCODE_BIN to run it)")
    # opencode fetches its provider package from the npm registry at start-up, so the
    # registry must be reachable even when the binary is already installed
    try:
        v = subprocess.run(["npm", "view", f"opencode-ai@{VERSION}", "version"], capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.skip("skipped: the npm registry did not answer `npm view opencode-ai` within 90 s")
    if v.returncode != 0 or VERSION not in v.stdout:
        pytest.skip(f"skipped: the npm registry is not reachable (`npm view opencode-ai` exited {v.returncode}): "
                    f"{v.stderr.strip()[-300:]}")
    prefix = Path(os.environ.get("TRAJKIT_OPENCODE_NPM_PREFIX", "~/.cache/trajkit/opencode-npm")).expanduser()
    found = sorted(glob.glob(str(prefix / "node_modules/opencode-linux-*/bin/opencode")))
    if found:
        return found[0]
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"opencode-ai@{VERSION}"],
            capture_output=True, text=True, timeout=900,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("skipped: `npm install opencode-ai` did not finish in 15 minutes (registry unreachable?)")
    if r.returncode != 0:
        pytest.skip(f"skipped: `npm install opencode-ai@{VERSION}` failed ({r.returncode}): {r.stderr.strip()[-600:]}")
    found = sorted(glob.glob(str(prefix / "node_modules/opencode-*/bin/opencode")))
    if not found:
        pytest.skip("skipped: npm installed opencode-ai but no prebuilt binary for this platform came with it")
    return found[0]


def test_real_opencode_through_the_capture_proxy(tmp_path, cli):
    binary = opencode_binary()
    out = tmp_path / "run"
    r = subprocess.run(
        [sys.executable, str(EXAMPLE), "--out", str(out), "--opencode", binary, "--timeout", "240"],
        capture_output=True, text=True, timeout=420, cwd=REPO,
    )
    assert r.returncode == 0, f"example failed ({r.returncode}):\n{r.stderr[-4000:]}"
    doc = json.loads(r.stdout)
    assert doc["opencode_exit"] == 0
    assert doc["hello_txt"] == "hello-from-trajkit\n"  # bash really ran

    rollout = out / "rollout"
    recs = [json.loads(x) for x in (rollout / "trace.jsonl").read_text().splitlines()]
    # opencode's title call plus two agent turns, all streamed, all with token ids
    assert len(recs) == 3
    assert all(r["request"]["stream"] is True for r in recs)
    assert all(r["request"]["logprobs"] is True for r in recs)
    assert "tools" not in recs[0]["request"]
    assert recs[0]["request"]["messages"][0]["content"].startswith("You are a title generator")
    assert all(r["completion_token_ids"] and len(r["completion_token_ids"]) == len(r["per_token_logps"]) for r in recs)

    s = doc["summary"]
    assert (s["raw_turns"], s["kept_turns"], s["trained_turns"]) == (3, 2, 1)
    assert s["tool_calls_by_tool"] == {"bash": 1}
    assert s["prompt_sources"] == {"captured": 2}
    report = json.loads((out / "turns_report.json").read_text())
    assert [d["purpose"] for d in report["dropped"]] == ["title"]
    # opencode re-serialises tool-call arguments compactly when it sends the
    # history back, so the second prompt drifts from prompt + generated output
    drift = [d for d in report["diagnostics"] if d["code"] == "turns.prompt-drift"]
    assert [d["event_id"] for d in drift] == ["turn-3"]

    rows = [json.loads(x) for x in (out / "turns.jsonl").read_text().splitlines()]
    assert [r["trained"] for r in rows] == [True, False]
    assert rows[0]["output_ids"] == recs[1]["completion_token_ids"]
    assert rows[0]["prompt_ids"] == recs[1]["prompt_token_ids"]
    generated = bytes(i for i in rows[0]["output_ids"] if i < 256).decode()
    assert "echo hello-from-trajkit > hello.txt" in generated
    assert rows[0]["mask"] == [0] * len(rows[0]["prompt_ids"]) + [1] * len(rows[0]["output_ids"])

    # the rollout is a session like any other
    r = cli("steps", rollout, "--json")
    assert r.returncode == 0, r.stderr
    steps = json.loads(r.stdout)["steps"]
    assert len(steps) == 1 and steps[0]["tool_type"] == "bash"
    assert steps[0]["action"] == "echo hello-from-trajkit > hello.txt && cat hello.txt"
    assert "hello-from-trajkit" in steps[0]["observation"]
