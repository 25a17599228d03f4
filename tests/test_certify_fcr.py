"""``trajkit fcr`` (issue 14 item 13): success claims are verified true,
verified false or unverifiable; the FCR is over verifiable claims only (n/a
when there are none); a directory is walked exactly as ``convert DIR`` walks
it, single-file runs included, whether it is named by a relative or an
absolute path.

The expected counts come from how each test builds its runs (which ones have
test results, which are red), never from trajkit's reader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from certify_shapes import V1_FIXTURES, junit, v1_run
from conftest import CORPUS


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_test_results_anywhere_gives_no_fcr(cli, tmp_path):
    # three finished conversations, each claiming success, none with any test result
    runs = tmp_path / "runs"
    for n in range(3):
        v1_run(runs / f"conv{n}", [{"terminal": "ls", "output": "README.md"}])
    doc = _json(cli("fcr", runs, "--json"))
    assert doc["runs"] == 3 and doc["claims"] == 3
    assert (doc["verified_true"], doc["verified_false"], doc["unverifiable_claims"], doc["verified_claims"]) == (0, 0, 3, 0)
    assert doc["false_completion_rate"] is None
    assert {r["claim"] for r in doc["runs_detail"]} == {"unverifiable"}
    out = cli("fcr", runs).stdout
    assert "false-completion rate n/a (no claim could be verified)" in out
    assert "claimed success 3: verified true 0, verified false 0, unverifiable 3" in out
    assert "1.000" not in out


def test_claims_are_split_into_verified_true_false_and_unverifiable(cli, tmp_path):
    green = junit(tmp_path / "green.xml", {"t1": "passed", "t2": "passed"})
    red = junit(tmp_path / "red.xml", {"t1": "passed", "t2": "failed"})
    fin = V1_FIXTURES / "conversations" / "finished"
    certs = tmp_path / "certs"
    # verified true: both sets green
    assert cli("certify", fin, "--visible", green, "--holdout", green, "--out", certs / "a.json").returncode == 0
    # verified false: holdout red
    assert cli("certify", fin, "--visible", green, "--holdout", red, "--out", certs / "b.json").returncode == 0
    # verified false: a critical finding (a conftest.py written) with green tests
    cheat = v1_run(tmp_path / "cheat", [{"editor": "create", "path": "/home/agent/runs/ws/conftest.py",
                                         "file_text": "def pytest_collection_modifyitems(items):\n    items[:] = []\n"}])
    assert cli("certify", cheat, "--visible", green, "--holdout", green, "--out", certs / "c.json").returncode == 0
    # unverifiable: a claim with no test results at all
    assert cli("certify", fin, "--out", certs / "d.json").returncode == 0
    # no claim: a budget stop
    assert cli("certify", V1_FIXTURES / "conversations" / "max-iterations", "--visible", green, "--holdout", green,
               "--out", certs / "e.json").returncode == 0
    states = {p.name: json.loads(p.read_text())["state"] for p in certs.iterdir()}
    assert states == {"a.json": "Succeeded", "b.json": "FailedUnverifiable", "c.json": "FailedSafety",
                      "d.json": "FailedUnverifiable", "e.json": "FailedBudget"}
    doc = _json(cli("fcr", certs, "--json"))
    assert doc["runs"] == 5 and doc["claims"] == 4
    assert (doc["verified_true"], doc["verified_false"], doc["unverifiable_claims"]) == (1, 2, 1)
    assert doc["false_completion_rate"] == 2 / 3
    claims = {Path(r["source"]).name: r["claim"] for r in doc["runs_detail"]}
    assert claims == {"a.json": "verified-true", "b.json": "verified-false", "c.json": "verified-false",
                      "d.json": "unverifiable", "e.json": None}
    out = cli("fcr", certs).stdout
    assert "false-completion rate 0.667 (2/3 verified claims)" in out


def _mixed_runs(root: Path) -> list[str]:
    """A folder with a conversation directory, two V0 flat exports (single
    JSON files, one a level down) and a proxy folder holding a rollout trace
    -- four runs, two of them single files."""
    root.mkdir(parents=True)
    v1_run(root / "conv", [{"terminal": "ls", "output": ""}])
    shutil.copy(CORPUS / "openhands_v0" / "flat_exports" / "basic.json", root / "v0-basic.json")
    (root / "more").mkdir()
    shutil.copy(CORPUS / "openhands_v0" / "flat_exports" / "basic_interactions.json", root / "more" / "v0-interactions.json")
    (root / "proxy").mkdir()
    shutil.copy(CORPUS / "opencode" / "proxy_trace_synthetic.jsonl", root / "proxy" / "proxy_trace_opencode.jsonl")
    (root / "notes.txt").write_text("not a run\n")
    return ["conv", "proxy", "v0-basic.json", "v0-interactions.json"]


def test_fcr_walks_the_same_runs_as_convert(cli, tmp_path):
    runs = tmp_path / "runs"
    expected = _mixed_runs(runs)
    doc = _json(cli("fcr", runs, "--json"))
    assert sorted(Path(r["source"]).name for r in doc["runs_detail"]) == expected
    conv = _json(cli("convert", runs, "--to", "asf", "--out", tmp_path / "out", "--json"))
    assert conv["runs"] == len(expected)
    from trajkit.certify.fcr import expand
    from trajkit.corpus import discover

    assert [Path(i.path) for i in expand([str(runs)])] == [r.path for r in discover([runs])]


def test_relative_and_absolute_paths_find_the_same_runs(cli, tmp_path):
    expected = _mixed_runs(tmp_path / "runs")
    seen = []
    for arg in ("runs", "./runs/", str(tmp_path / "runs")):
        doc = _json(cli("fcr", arg, "--json", cwd=tmp_path))
        names = sorted(Path(r["source"]).name for r in doc["runs_detail"])
        assert names == expected, arg  # never the folder itself as one unreadable run
        seen.append(sorted((r["state"], r["claimed_success"]) for r in doc["runs_detail"]))
    assert seen[0] == seen[1] == seen[2]


def test_an_empty_folder_is_still_certified_as_unreadable(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    doc = _json(cli("fcr", tmp_path / "empty", "--json"))
    assert doc["runs"] == 1 and doc["states"]["FailedUnverifiable"] == 1 and doc["claims"] == 0
    assert doc["false_completion_rate"] is None
