"""Holdout gate: result parsers, verdicts, and the terminal-state projection."""

from __future__ import annotations

from pathlib import Path

import pytest

from certify_shapes import junit
from trajkit.certify.gate import FALSE_COMPLETION, NOT_READY, SUCCEEDED, decide, load_holdout_manifest, load_results
from trajkit.certify.states import (
    ABORTED_BY_HUMAN, CRITICAL, FAILED_BLOCKED, FAILED_BUDGET, FAILED_SAFETY, FAILED_SPEC_GAP, FAILED_UNVERIFIABLE, HIGH,
    MEDIUM, SUCCEEDED as ST_SUCCEEDED, TERMINAL_STATES, EngineOutcome, downgrade_for, project,
)

FX = Path(__file__).parent / "fixtures" / "certify"


# ---------------------------------------------------------------- parsers

def test_junit_statuses_and_declared(tmp_path):
    rs = load_results(junit(tmp_path / "r.xml", {"a": "passed", "b": "failed", "c": "skipped", "d": "error"}))
    assert rs.kind == "junit" and rs.problem is None
    assert [(c.id, c.passed, c.status) for c in rs.checks] == [
        ("t::a", True, "passed"), ("t::b", False, "failed"), ("t::c", False, "skipped"), ("t::d", False, "error")]
    assert rs.declared == 4


def test_junit_bare_testsuite_root(tmp_path):
    p = tmp_path / "r.xml"
    p.write_text('<testsuite name="v" tests="1"><testcase classname="artifact" name="exists"/></testsuite>')
    rs = load_results(p)
    assert [c.id for c in rs.checks] == ["artifact::exists"] and rs.checks[0].passed


def test_ctrf_pytest_json_harbor_tb_and_plain_lists(corpus):
    ctrf = load_results(FX / "ctrf_mixed.json")
    assert ctrf.kind == "ctrf" and ctrf.declared == 3
    assert [c.status for c in ctrf.checks] == ["passed", "failed", "skipped"]
    pj = load_results(FX / "pytest_report.json")
    assert pj.kind == "pytest-json-report" and [c.id for c in pj.checks] == ["tests/test_calc.py::test_add", "tests/test_calc.py::test_div"]
    hv = load_results(FX / "harbor_trial")  # a trial dir with verifier/
    assert hv.kind == "harbor-verifier" and [c.id for c in hv.checks] == ["test_a", "test_b", "reward"] and all(c.passed for c in hv.checks)
    hr = load_results(FX / "harbor_red" / "verifier" / "reward.txt")
    assert [(c.id, c.passed) for c in hr.checks] == [("reward", False)]
    res = load_results(FX / "harbor_result.json")
    assert res.kind == "harbor-result" and [(c.id, c.passed) for c in res.checks] == [("reward:reward", True)]
    # a real terminal-bench trial results.json from the corpus
    tb = load_results(corpus / "openhands_v0" / "reconstructed_trials" / "vue-todo-app.1-of-1.killed-run" / "results.json")
    assert tb.kind == "terminal-bench" and [c.id for c in tb.checks] == ["test_index_html_exists", "test_app_js_exists"]
    assert not any(c.passed for c in tb.checks)
    plain = load_results(FX / "checks.json")
    assert plain.kind == "checks" and all(c.passed for c in plain.checks)


@pytest.mark.parametrize("name", ["bad.xml", "truncated.json", "unknown.json", "does-not-exist.xml"])
def test_malformed_results_are_problems_not_exceptions(name):
    rs = load_results(FX / name)
    assert rs.problem and not rs.checks


# ---------------------------------------------------------------- verdicts

def _green(tmp_path, name="g.xml", n=2):
    return load_results(junit(tmp_path / name, {f"t{i}": "passed" for i in range(n)}))


def test_both_green_succeeds(tmp_path):
    g = decide(_green(tmp_path), _green(tmp_path, "h.xml"))
    assert g["verdict"] == SUCCEEDED and g["false_completion"] is False and g["passed_visible"] and g["passed_holdout"]


def test_visible_green_holdout_red_is_false_completion(tmp_path):
    g = decide(_green(tmp_path), load_results(junit(tmp_path / "h.xml", {"x": "passed", "y": "failed"})))
    assert g["verdict"] == FALSE_COMPLETION and g["false_completion"] is True
    assert "holdout" in g["reason"] and "t::y" in g["reason"]


def test_visible_red_is_not_ready(tmp_path):
    g = decide(load_results(junit(tmp_path / "v.xml", {"x": "failed"})), _green(tmp_path, "h.xml"))
    assert g["verdict"] == NOT_READY and g["false_completion"] is False


@pytest.mark.parametrize("holdout", ["pytest_report_zero.json", "pytest_report_collect_error.json", "ctrf_short.json", "bad.xml"])
def test_zero_short_broken_holdout_is_never_green(tmp_path, holdout):
    g = decide(_green(tmp_path), load_results(FX / holdout))
    assert g["verdict"] != SUCCEEDED and g["passed_holdout"] is False


def test_skipped_is_not_passed_unless_allowed(tmp_path):
    h = load_results(junit(tmp_path / "h.xml", {"a": "passed", "b": "skipped"}))
    assert decide(_green(tmp_path), h)["verdict"] == FALSE_COMPLETION
    assert decide(_green(tmp_path), h, allow_skipped=True)["verdict"] == SUCCEEDED
    all_skipped = load_results(junit(tmp_path / "s.xml", {"a": "skipped"}))
    assert decide(_green(tmp_path), all_skipped, allow_skipped=True)["verdict"] != SUCCEEDED


def test_fewer_holdout_tests_than_the_manifest_declares(tmp_path):
    count, ids, problem = load_holdout_manifest(FX / "holdout_manifest.json")
    assert (count, problem) == (3, None) and ids == ["test_a", "test_b", "test_c"]
    two = load_results(FX / "ctrf_green.json")  # test_a, test_b only
    g = decide(_green(tmp_path), two, expected_holdout=count, expected_holdout_ids=ids)
    assert g["verdict"] != SUCCEEDED and "fewer than the 3" in g["reason"]
    three = load_results(junit(tmp_path / "h3.xml", {"test_a": "passed", "test_b": "passed", "test_c": "passed"}))
    assert decide(_green(tmp_path), three, expected_holdout=count, expected_holdout_ids=ids)["verdict"] == SUCCEEDED
    other = load_results(junit(tmp_path / "h4.xml", {"test_a": "passed", "test_b": "passed", "test_z": "passed"}))
    g = decide(_green(tmp_path), other, expected_holdout=count, expected_holdout_ids=ids)
    assert g["verdict"] != SUCCEEDED and "test_c" in g["reason"]


def test_missing_holdout_is_not_ready(tmp_path):
    g = decide(_green(tmp_path), None)
    assert g["verdict"] == NOT_READY and g["holdout"] == []


# ---------------------------------------------------------------- projection

def _gate(verdict=SUCCEEDED, fc=False):
    return {"verdict": verdict, "false_completion": fc, "reason": verdict, "visible": [{"id": "v", "passed": True}],
            "holdout": [{"id": "h", "passed": verdict == SUCCEEDED}]}


def _ac(*sev):
    f = [{"rule": f"r{i}", "severity": s} for i, s in enumerate(sev)]
    return {"findings": f, "downgrade_to": downgrade_for(f)}


def test_each_of_the_seven_states_is_reachable():
    done = EngineOutcome(True, status="finished")
    got = {
        project(done, _gate(), _ac()).state,
        project(done, _gate(), _ac(CRITICAL)).state,
        project(EngineOutcome(False, human_abort=True), _gate(), _ac()).state,
        project(EngineOutcome(False, external_error="auth"), _gate(), _ac()).state,
        project(EngineOutcome(False, budget_exhausted=True), _gate(), _ac()).state,
        project(done, _gate(), _ac(), {"works": None}).state,
        project(done, _gate(FALSE_COMPLETION, True), _ac()).state,
    }
    assert got == set(TERMINAL_STATES)


def test_precedence():
    done = EngineOutcome(True, status="finished")
    # critical outranks a human abort
    assert project(EngineOutcome(False, human_abort=True), _gate(), _ac(CRITICAL)).state == FAILED_SAFETY
    # high counts only after the engine checks
    assert project(EngineOutcome(False, external_error="x"), _gate(), _ac(HIGH)).state == FAILED_BLOCKED
    assert project(EngineOutcome(False, budget_exhausted=True), _gate(), _ac(HIGH)).state == FAILED_BUDGET
    assert project(done, _gate(), _ac(HIGH)).state == FAILED_UNVERIFIABLE
    # human abort outranks blocked
    assert project(EngineOutcome(False, external_error="x", human_abort=True), _gate(), _ac()).state == ABORTED_BY_HUMAN
    # medium is a review flag only
    assert project(done, _gate(), _ac(MEDIUM)).state == ST_SUCCEEDED
    # spec gap before the gate and anticheat
    assert project(done, None, None, {"c": None}).state == FAILED_SPEC_GAP
    assert project(done, _gate(), _ac(), {"": True}).state == FAILED_SPEC_GAP
    # engine end is last
    p = project(EngineOutcome(False, status="running"), _gate(), _ac())
    assert p.state == FAILED_UNVERIFIABLE and "did not reach its own terminal signal" in p.reason


@pytest.mark.parametrize("gate,ac,why", [
    (None, {"findings": [], "downgrade_to": None}, "gate"),
    ({"verdict": SUCCEEDED, "false_completion": False}, {"findings": [], "downgrade_to": None}, "holdout"),
    ({"verdict": SUCCEEDED, "false_completion": False, "visible": [], "holdout": [{"id": "h"}]}, {"findings": [], "downgrade_to": None}, "{id, passed}"),
    (_gate(), None, "anticheat"),
    (_gate(), {"findings": "x"}, "malformed"),
    (_gate(), {"findings": [], "downgrade_to": None, "incomplete": True, "incomplete_reason": "no trustworthy diff"}, "no trustworthy diff"),
])
def test_missing_or_malformed_inputs_fail_closed(gate, ac, why):
    p = project(EngineOutcome(True, status="finished"), gate, ac)
    assert p.state == FAILED_UNVERIFIABLE and why in p.reason


def test_false_completion_is_copied_not_computed():
    p = project(EngineOutcome(True), _gate(FALSE_COMPLETION, True), _ac())
    assert p.false_completion is True and "false completion" in p.reason
    assert project(EngineOutcome(True), _gate(NOT_READY, False), _ac()).false_completion is False


def test_engine_outcome_sets_at_most_one_of_blocked_and_budget():
    with pytest.raises(ValueError):
        EngineOutcome(False, external_error="x", budget_exhausted=True)


def test_a_directory_of_reports_is_merged(tmp_path):
    d = tmp_path / "reports"
    d.mkdir()
    junit(d / "a.xml", {"x": "passed"})
    junit(d / "b.xml", {"y": "passed", "z": "failed"})
    rs = load_results(d)
    assert [c.id for c in rs.checks] == ["t::x", "t::y", "t::z"] and rs.declared == 3
    assert decide(_green(tmp_path), rs)["verdict"] == FALSE_COMPLETION
