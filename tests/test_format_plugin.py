"""The example plugin (examples/format-plugin) installs on its own and works.

The package is built and installed offline into a temporary folder (``pip
install --no-deps --no-build-isolation --no-index --target``), never into the
test environment; each verb then runs as a real ``python -m trajkit``
subprocess with that folder on ``PYTHONPATH``, so ``importlib.metadata``
finds the plugin's entry point exactly as it would after ``pip install``.
Expected values are computed here from the sample file's lines, not by
trajkit's reader.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

PLUGIN = REPO / "examples" / "format-plugin"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("plugin")
    src = tmp / "src"
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))  # build out of tree
    target = tmp / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert list(target.glob("trajkit_jsonl_demo-*.dist-info/entry_points.txt"))
    return target


def run(site: Path, *args, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "trajkit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def sample(site) -> Path:
    return site / "trajkit_jsonl_demo" / "sample" / "run.demo.jsonl"


@pytest.fixture(scope="module")
def expected(sample) -> dict:
    """What the sample holds, read line by line with json alone."""
    recs = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    calls = {r["id"]: r for r in recs if r["type"] == "call"}
    steps, seen = [], set()
    for r in recs:
        if r["type"] == "result" and r["id"] in calls and r["id"] not in seen:
            seen.add(r["id"])
            c = calls[r["id"]]
            args = {k: v for k, v in c["args"].items() if k != "thought"}
            action = args["command"] if c["tool"] == "shell" else f"{c['tool']}({json.dumps(args, ensure_ascii=False)})"
            steps.append({"tool_type": c["tool"], "action": action, "observation": r["output"], "thinking": c.get("thought")})
    task = next(r for r in recs if r["type"] == "task")
    end = next(r for r in recs if r["type"] == "end")
    return {"events": len(recs), "steps": steps, "task": task["text"], "id": task["id"], "calls": len(calls),
            "end_status": end["status"]}


def test_adding_the_plugin_touches_no_trajkit_file():
    """trajkit's sources never name the plugin: the entry point is the only link."""
    hits = [p for p in (REPO / "src").rglob("*.py") if "jsonl-demo" in p.read_text(encoding="utf-8") or
            "trajkit_jsonl_demo" in p.read_text(encoding="utf-8")]
    assert hits == []
    assert 'jsonl-demo = "trajkit_jsonl_demo:FORMAT"' in (PLUGIN / "pyproject.toml").read_text()


def test_detect(site, sample):
    p = run(site, "detect", sample, "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert (d["format"], d["root"], d["strength"]) == ("jsonl-demo", str(sample), "strong")
    # without the plugin on the path, the same file is no known format
    bare = subprocess.run([sys.executable, "-m", "trajkit", "detect", str(sample)], capture_output=True, text=True,
                          cwd=REPO, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=300)
    assert bare.returncode == 2 and "no known format" in bare.stdout


def test_steps(site, sample, expected):
    p = run(site, "steps", sample, "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["format"] == "jsonl-demo" and d["id"] == expected["id"] and d["task"] == expected["task"]
    assert d["step_count"] == len(expected["steps"])
    got = [{k: s.get(k) for k in ("tool_type", "action", "observation", "thinking")} for s in d["steps"]]
    assert got == expected["steps"]
    assert [s["step_id"] for s in d["steps"]] == list(range(1, len(expected["steps"]) + 1))


def test_convert_asf_and_verify(site, sample, expected, tmp_path):
    p = run(site, "convert", sample, "--to", "asf", "--out", tmp_path / "asf", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["ok"] and d["problems"] == [] and d["unaccounted"] == []
    assert d["summary"]["events"] == d["summary"]["events_placed"] == expected["events"]
    (out,) = d["outputs"]
    v = run(site, "verify", out, "--json")
    assert v.returncode == 0, v.stdout + v.stderr
    entries = [json.loads(line) for line in Path(out).read_text(encoding="utf-8").splitlines()]
    calls = [e for e in entries if e.get("type") == "item" and (e.get("item") or {}).get("type") == "function_call"]
    assert len(calls) == expected["calls"], [e.get("type") for e in entries]


def test_convert_atif_validates(site, sample, expected, tmp_path):
    atif = pytest.importorskip("atif")
    p = run(site, "convert", sample, "--to", "atif", "--out", tmp_path / "atif", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["ok"] and d["problems"] == []
    (out,) = d["outputs"]
    doc = json.loads(Path(out).read_text(encoding="utf-8"))
    atif.Trajectory.model_validate(doc)
    tool_calls = [c for st in doc["steps"] for c in st.get("tool_calls") or []]
    assert len(tool_calls) == expected["calls"]
    assert [c["function_name"] for c in tool_calls] == [s["tool_type"] for s in expected["steps"]]


def test_certify(site, sample, expected):
    from trajkit.certify.states import TERMINAL_STATES

    p = run(site, "certify", sample, "--json")
    assert p.returncode == 0, p.stderr
    c = json.loads(p.stdout)
    assert c["state"] in TERMINAL_STATES
    assert c["run"]["format"] == "jsonl-demo"
    assert (c["run"]["events"], c["run"]["steps"]) == (expected["events"], len(expected["steps"]))
    # the end line's status is the run's own claim, read through Session.outcome
    assert c["claimed_success"] is (expected["end_status"] == "success")


def test_conformance_suite_covers_the_plugin(site):
    """tests/conformance picks the plugin's examples up by itself once it is installed."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance", "-k", "jsonl-demo"],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    # one case per check that runs over every (format, example) pair
    checks = (REPO / "tests" / "conformance" / "test_formats.py").read_text().count('@pytest.mark.parametrize("fmt,run", CASES)')
    assert checks >= 7 and f"{checks} passed" in p.stdout, p.stdout[-2000:]
