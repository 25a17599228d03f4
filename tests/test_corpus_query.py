"""`trajkit query`: every worked query of docs/index.md runs against an
index of the shared corpus (with --certify), through the real CLI, and the
answers are checked against the raw files or another verb where one gives
the same figure by its own route."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO, run_cli

DOC = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
QUERIES = dict(re.findall(r"### ([^\n]+)\n(?:(?!### ).)*?```sql\n(.*?)```", DOC.split("## Worked queries", 1)[1], re.S))


@pytest.fixture(scope="module")
def idx(tmp_path_factory, corpus) -> Path:
    out = tmp_path_factory.mktemp("q") / "idx"
    run_cli("index", corpus, "--out", out, "--certify", "-q", check=True)
    return out


@pytest.fixture(scope="module")
def manifest_dir(tmp_path_factory, corpus) -> Path:
    """A CodeTraceBench-style manifest written from the trials' EXPECTED.json (a separate script's counts)."""
    d = tmp_path_factory.mktemp("m")
    rows = []
    for exp in sorted((corpus / "openhands_v0" / "reconstructed_trials").glob("*/EXPECTED.json")):
        e = json.loads(exp.read_text())
        rows.append({"trial_name": e["trial"], "step_count": str(e["expected_step_count"])})
    (d / "ctb_manifest.json").write_text(json.dumps(rows))
    return d


def q(idx: Path, title: str, cwd: Path | None = None) -> list[dict]:
    p = run_cli("query", idx, QUERIES[title], "--json", cwd=cwd, check=True)
    return json.loads(p.stdout)


def test_the_docs_carry_the_six_worked_queries():
    assert set(QUERIES) == {"Cost per model", "Steps against the benchmark's `step_count`",
                            "False-completion rate per model (`--certify`)", "Tool error rate", "Failure modes",
                            "The slowest runs"}


def test_cost_per_model(idx, corpus):
    rows = q(idx, "Cost per model")
    by = {r["model"]: r for r in rows}
    import pyarrow.parquet as pq

    runs = [r for f in sorted((Path(idx) / "runs").glob("*.parquet")) for r in pq.read_table(f).to_pylist() if r["read_ok"]]
    assert sum(r["runs"] for r in rows) == len(runs) > 20
    # the flat exports record no cost: their model's cost is NULL (not 0), or only the price table's flagged estimate
    claude = by["claude-3-5-sonnet-20241022"]
    mine = [r for r in runs if r["model"] == "claude-3-5-sonnet-20241022"]
    assert claude["runs"] == len(mine) and claude["runs_with_cost"] == sum(r["cost_usd"] is not None for r in mine)
    assert all(r["cost_estimated"] for r in mine if r["cost_usd"] is not None)
    # the real SDK run's accumulated cost, read from base_state.json's own stats
    base = json.loads((corpus / "openhands_v1/sdk_pr_artifacts/4f4c68c16/cd94562403b9487ebdd4018e3f531dfd/base_state.json").read_text())
    cost = base["stats"]["usage_to_metrics"]["agent"]["accumulated_cost"]
    assert by["openai/gpt-4o-mini"]["cost_usd"] == pytest.approx(cost)


def test_steps_against_benchmark_step_count(idx, manifest_dir):
    rows = q(idx, "Steps against the benchmark's `step_count`", cwd=manifest_dir)
    assert len(rows) == 3 and all(r["difference"] == 0 for r in rows)


def test_fcr_per_model_agrees_with_the_fcr_verb(idx, corpus):
    rows = q(idx, "False-completion rate per model (`--certify`)")
    fcr = json.loads(run_cli("fcr", corpus, "--json", "-j", "2").stdout)
    assert sum(r["claims"] for r in rows) == fcr["claims"]
    assert sum(r["verified_true"] for r in rows) == fcr["verified_true"]
    assert sum(r["verified_false"] for r in rows) == fcr["verified_false"]
    assert sum(r["unverifiable"] for r in rows) == fcr["unverifiable_claims"]
    for r in rows:
        verified = r["verified_true"] + r["verified_false"]
        assert r["fcr"] == (None if verified == 0 else pytest.approx(r["verified_false"] / verified))


def test_tool_error_rate(idx):
    rows = q(idx, "Tool error rate")
    total = run_cli("query", idx, "SELECT count(*) AS n, count(*) FILTER (WHERE answered) AS a FROM tool_calls", "--json", check=True)
    t = json.loads(total.stdout)[0]
    assert sum(r["calls"] for r in rows) == t["n"] and sum(r["answered"] for r in rows) == t["a"]
    for r in rows:
        assert r["error_rate"] is None if r["answered"] == 0 else 0 <= r["error_rate"] <= 1


def test_failure_modes(idx, corpus):
    rows = {r["mode"]: r["runs"] for r in q(idx, "Failure modes")}
    results = json.loads((corpus / "openhands_v0/reconstructed_trials/vue-todo-app.1-of-1.killed-run/results.json").read_text())
    assert rows.get(results["failure_mode"], 0) >= 1
    # the certifier fixture blocked by an authentication error
    assert rows.get("external error", 0) >= 1


def test_slowest_runs(idx, corpus):
    rows = q(idx, "The slowest runs")
    assert 0 < len(rows) <= 10
    durations = [r["duration_s"] for r in rows]
    assert durations == sorted(durations, reverse=True)
    # the killed trial's duration from its results.json timestamps
    from datetime import datetime

    res = json.loads((corpus / "openhands_v0/reconstructed_trials/vue-todo-app.1-of-1.killed-run/results.json").read_text())
    killed = next((r for r in rows if r["source"].endswith("vue-todo-app.1-of-1.killed-run")), None)
    if killed is not None:
        want = (datetime.fromisoformat(res["trial_ended_at"]) - datetime.fromisoformat(res["trial_started_at"])).total_seconds()
        assert killed["duration_s"] == pytest.approx(want)


def test_query_errors_and_outputs(idx, tmp_path):
    bad = run_cli("query", idx, "SELECT nope FROM runs")
    assert bad.returncode == 2 and "nope" in bad.stderr
    p = run_cli("query", tmp_path, "SELECT 1")
    assert p.returncode == 2 and "not a trajkit index" in p.stderr
    csv = run_cli("query", idx, "SELECT format, count(*) AS n FROM runs GROUP BY format ORDER BY format", "--csv", check=True)
    assert csv.stdout.splitlines()[0] == "format,n"
    # the optional tables exist as (empty) views with their columns even when not built
    out = tmp_path / "plain"
    run_cli("index", REPO / "src" / "trajkit" / "formats" / "fixtures", "--out", out, "-q", check=True)
    turns = json.loads(run_cli("query", out, "SELECT count(*) AS n FROM turns", "--json", check=True).stdout)
    assert turns == [{"n": 0}]
