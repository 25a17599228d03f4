"""The holdout gate: test results read from the usual report files, and the
verdict over a visible and a withheld (holdout) set.

Readers accept JUnit XML, CTRF JSON, pytest-json-report JSON, a harbor
``verifier/`` directory (``reward.txt`` + ``ctrf.json``) or ``result.json``
(``verifier_result.rewards``), a terminal-bench trial ``results.json``
(``parser_results`` / ``is_resolved``), a SWE-bench ``report.json``
(``tests_status``, ``resolved``) and a plain JSON list of ``{id, passed}``. Each returns a :class:`ResultSet`; a file that is missing or
malformed gives a result set with ``problem`` set, never an exception.

The verdict (:func:`decide`) follows ``formats/certification.md`` §3 and is
all-or-nothing per set: ``Succeeded`` when both sets are green,
``FalseCompletion`` when the visible set is green and the holdout set red,
otherwise ``NotReady``. Zero collected tests, skipped tests, or fewer holdout
tests than declared are never green.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonio import MISSING
from ..reading import fs
from ..reading.io import load_json, read_bytes

SUCCEEDED = "Succeeded"
FALSE_COMPLETION = "FalseCompletion"
NOT_READY = "NotReady"

PASSED = "passed"
FAILED = "failed"
SKIPPED = "skipped"
ERRORED = "error"

MAX_RESULT_BYTES = 256 << 20


@dataclass(slots=True)
class Check:
    """One test or check result: its id, whether it passed, and the native status."""

    id: str
    passed: bool
    status: str = PASSED

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "passed": self.passed, "status": self.status}


@dataclass(slots=True)
class ResultSet:
    """The checks read from one results source.

    ``kind`` names the report format, ``declared`` the test count the report
    itself declares (JUnit ``tests=``, CTRF ``summary.tests``, pytest
    ``summary.collected``) when it has one, ``problem`` why the source could
    not be used (None when it could).
    """

    source: str
    kind: str
    checks: list[Check] = field(default_factory=list)
    declared: int | None = None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "kind": self.kind, "count": len(self.checks)}
        if self.declared is not None:
            d["declared"] = self.declared
        if self.problem:
            d["problem"] = self.problem
        if self.notes:
            d["notes"] = self.notes
        return d


def _status_check(cid: str, status: Any) -> Check:
    s = str(status or "").strip().lower()
    if s in ("passed", "pass", "ok", "success", "succeeded", "xpassed_strict"):
        return Check(cid, True, PASSED)
    if s in ("skipped", "skip", "pending", "xfailed", "deselected"):
        return Check(cid, False, SKIPPED)
    if s in ("error", "errored", "broken"):
        return Check(cid, False, ERRORED)
    return Check(cid, False, FAILED if s in ("failed", "fail", "failure") else (s or FAILED))


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and v >= 0:
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    if isinstance(v, float) and v.is_integer() and v >= 0:
        return int(v)
    return None


def _count_problem(v: Any, where: str, xml: bool = False) -> str | None:
    """Why a declared count is unusable (negative, fractional, not finite, not a number), or None.
    JSON counts must be numbers; XML attributes are digit strings."""
    if v is None:
        return None
    if xml:
        return None if isinstance(v, str) and v.strip().isdigit() else f"{where} is {v!r}, not a non-negative integer"
    if isinstance(v, bool) or not isinstance(v, (int, float)) or _int_or_none(v) is None:
        return f"{where} is {v!r}, not a non-negative integer"
    return None


def _dedupe(checks: list[Check]) -> list[Check]:
    """Give repeated ids a ``#n`` suffix so every check keeps its own verdict."""
    seen: dict[str, int] = {}
    out = []
    for c in checks:
        n = seen.get(c.id, 0)
        seen[c.id] = n + 1
        out.append(c if n == 0 else Check(f"{c.id}#{n + 1}", c.passed, c.status))
    return out


# ---------------------------------------------------------------- JUnit XML

def parse_junit(data: bytes, source: str = "") -> ResultSet:
    """Checks from a JUnit XML report (``<testsuites>`` or a bare ``<testsuite>``)."""
    rs = ResultSet(source, "junit")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        rs.problem = f"not well-formed JUnit XML: {e}"
        return rs
    if root.tag not in ("testsuite", "testsuites"):
        rs.problem = f"not a JUnit report (root element <{root.tag}>)"
        return rs
    # a count that is there must be a count: tests="-5" or failures="x" fails closed
    for el in [root, *root.iter("testsuite")]:
        for attr in ("tests", "failures", "errors", "skipped", "disabled"):
            why = _count_problem(el.get(attr), f"<{el.tag} {attr}=...>", xml=True)
            if why:
                rs.problem = f"malformed JUnit report: {why}"
                return rs
    top = [root] if root.tag == "testsuite" else root.findall("testsuite")

    def total(attr: str) -> int | None:
        if root.tag == "testsuites" and root.get(attr) is not None:
            return _int_or_none(root.get(attr))
        counts = [_int_or_none(s.get(attr)) for s in top]
        return sum(c for c in counts if c is not None) if counts and all(c is not None for c in counts) else None

    declared = total("tests")
    rs.declared = declared
    cases = root.iter("testcase")
    for tc in cases:
        if not (tc.get("name") or "").strip():
            rs.problem = "malformed JUnit report: a <testcase> has no name"
            rs.checks = []
            return rs
        name = tc.get("name") or "?"
        cls = tc.get("classname") or tc.get("file") or ""
        cid = f"{cls}::{name}" if cls else name
        if tc.find("failure") is not None:
            rs.checks.append(Check(cid, False, FAILED))
        elif tc.find("error") is not None:
            rs.checks.append(Check(cid, False, ERRORED))
        elif tc.find("skipped") is not None:
            rs.checks.append(Check(cid, False, SKIPPED))
        else:
            rs.checks.append(Check(cid, True, PASSED))
    red = sum(1 for c in rs.checks if c.status in (FAILED, ERRORED))
    said_red = [total("failures"), total("errors")]
    if any(v is not None for v in said_red) and sum(v or 0 for v in said_red) > red:
        rs.problem = f"JUnit report declares {sum(v or 0 for v in said_red)} failures/errors but lists {red}"
    rs.checks = _dedupe(rs.checks)
    return rs


# ---------------------------------------------------------------- JSON reports

def parse_ctrf(doc: Any, source: str = "") -> ResultSet:
    """Checks from a CTRF report (``results.tests[]`` with ``name`` and ``status``)."""
    rs = ResultSet(source, "ctrf")
    results = doc.get("results") if isinstance(doc, dict) else None
    tests = results.get("tests") if isinstance(results, dict) else None
    if not isinstance(tests, list):
        rs.problem = "CTRF report has no results.tests list"
        return rs
    summary = results.get("summary") if isinstance(results.get("summary"), dict) else {}
    if "summary" in results and not isinstance(results.get("summary"), dict):
        rs.problem = "malformed CTRF report: results.summary is not an object"
        return rs
    for key in ("tests", "passed", "failed", "pending", "skipped", "other"):
        why = _count_problem(summary.get(key), f"summary.{key}")
        if why:
            rs.problem = f"malformed CTRF report: {why}"
            return rs
    rs.declared = _int_or_none(summary.get("tests"))
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            rs.notes.append(f"test #{i} is not an object; counted as failed")
            rs.checks.append(Check(f"#{i}", False, FAILED))
            continue
        if not isinstance(t.get("name"), str) or not t["name"].strip():
            rs.problem = f"malformed CTRF report: test #{i} has no name"
            rs.checks = []
            return rs
        name = str(t.get("name") or f"#{i}")
        suite = t.get("suite") or t.get("filePath")
        if isinstance(suite, list):
            suite = "/".join(map(str, suite))
        cid = f"{suite}::{name}" if suite and not name.startswith(str(suite)) else name
        rs.checks.append(_status_check(cid, t.get("status")))
    failed = _int_or_none(summary.get("failed"))
    if failed is not None and failed > sum(1 for c in rs.checks if c.status in (FAILED, ERRORED)):
        rs.problem = f"CTRF summary declares {failed} failed tests but lists fewer"
    rs.checks = _dedupe(rs.checks)
    return rs


def parse_pytest_json(doc: Any, source: str = "") -> ResultSet:
    """Checks from a pytest-json-report document (``tests[].nodeid`` / ``outcome``)."""
    rs = ResultSet(source, "pytest-json-report")
    if not isinstance(doc, dict):
        rs.problem = "pytest JSON report is not an object"
        return rs
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        rs.problem = "pytest JSON report tests is not a list"
        return rs
    summary = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}
    for key in ("collected", "total", "passed", "failed", "error", "skipped"):
        why = _count_problem(summary.get(key), f"summary.{key}")
        if why:
            rs.problem = f"malformed pytest JSON report: {why}"
            return rs
    rs.declared = _int_or_none(summary.get("collected"))
    if rs.declared is None:
        rs.declared = _int_or_none(summary.get("total"))
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            rs.checks.append(Check(f"#{i}", False, FAILED))
            continue
        rs.checks.append(_status_check(str(t.get("nodeid") or f"#{i}"), t.get("outcome")))
    # Collection errors fail the run even when no test ran.
    for c in doc.get("collectors", []) or []:
        if isinstance(c, dict) and c.get("outcome") == "failed":
            rs.checks.append(Check(f"collect::{c.get('nodeid', '?')}", False, ERRORED))
    rs.checks = _dedupe(rs.checks)
    return rs


def parse_tb_results(doc: Any, source: str = "") -> ResultSet:
    """Checks from a terminal-bench trial ``results.json`` (``parser_results``)."""
    rs = ResultSet(source, "terminal-bench")
    pr = doc.get("parser_results") if isinstance(doc, dict) else None
    if isinstance(pr, dict):
        for name, status in pr.items():
            rs.checks.append(_status_check(str(name), status))
    elif pr is not None:
        rs.problem = "parser_results is not an object"
    if isinstance(doc, dict):
        res = doc.get("is_resolved")
        if res is None:
            rs.notes.append("is_resolved is null: the trial never got to grading")
        elif not pr:
            rs.notes.append("no parser_results; using is_resolved as the single check")
            rs.checks.append(Check("is_resolved", res is True, PASSED if res is True else FAILED))
        elif (res is True) != all(c.passed for c in rs.checks):
            rs.notes.append(f"is_resolved={res} disagrees with parser_results; both kept")
            rs.checks.append(Check("is_resolved", res is True, PASSED if res is True else FAILED))
    return rs


#: The SWE-bench test groups that decide ``resolved`` (FAIL_TO_FAIL / PASS_TO_FAIL are expected failures).
SWEBENCH_GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS")


def parse_swebench_report(doc: Any, source: str = "") -> ResultSet:
    """Checks from a SWE-bench ``report.json``: the per-instance record (flat,
    or ``{<instance id>: {...}}`` holding one), one check per
    ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` test (``success`` passed, ``failure``
    failed), a failed ``patch_applied`` check when the patch did not apply,
    and ``resolved`` kept as its own check when it disagrees with the tests."""
    rs = ResultSet(source, "swe-bench")
    rec = doc
    if isinstance(doc, dict) and not any(k in doc for k in ("resolved", "tests_status")) and len(doc) == 1:
        rec = next(iter(doc.values()))
    if not isinstance(rec, dict):
        rs.problem = "not a SWE-bench instance report"
        return rs
    if rec.get("patch_successfully_applied") is False or rec.get("patch_is_None") is True or rec.get("patch_exists") is False:
        rs.checks.append(Check("patch_applied", False, FAILED))
        rs.notes.append("the patch was missing or did not apply")
    ts = rec.get("tests_status")
    if ts is not None and not isinstance(ts, dict):
        rs.problem = "tests_status is not an object"
        return rs
    for group in SWEBENCH_GROUPS:
        g = (ts or {}).get(group)
        if g is None:
            continue
        if not isinstance(g, dict):
            rs.problem = f"tests_status.{group} is not an object"
            rs.checks = []
            return rs
        for key, passed in (("success", True), ("failure", False)):
            names = g.get(key) or []
            if not isinstance(names, list):
                rs.problem = f"tests_status.{group}.{key} is not a list"
                rs.checks = []
                return rs
            rs.checks += [Check(f"{group}::{n}", passed, PASSED if passed else FAILED) for n in names]
    rs.checks = _dedupe(rs.checks)
    res = rec.get("resolved")
    if not isinstance(res, bool):
        if not rs.checks:
            rs.problem = "no resolved verdict and no FAIL_TO_PASS / PASS_TO_PASS tests"
        return rs
    if not any(c.id.startswith(SWEBENCH_GROUPS) for c in rs.checks):
        rs.notes.append("no tests_status; using resolved as the single check")
        rs.checks.append(Check("resolved", res, PASSED if res else FAILED))
    elif res != all(c.passed for c in rs.checks):
        rs.notes.append(f"resolved={res} disagrees with tests_status; both kept")
        rs.checks.append(Check("resolved", res, PASSED if res else FAILED))
    return rs


def _reward_check(name: str, value: Any) -> Check:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return Check(name, False, f"unreadable reward {value!r}")
    return Check(name, v >= 1.0, PASSED if v >= 1.0 else FAILED)


def parse_harbor_result(doc: Any, source: str = "") -> ResultSet:
    """Checks from a harbor ``result.json`` (``verifier_result.rewards``)."""
    rs = ResultSet(source, "harbor-result")
    vr = doc.get("verifier_result") if isinstance(doc, dict) else None
    rewards = vr.get("rewards") if isinstance(vr, dict) else None
    if not isinstance(rewards, dict) or not rewards:
        rs.notes.append("no verifier_result.rewards: the verifier did not report")
        return rs
    for k, v in rewards.items():
        rs.checks.append(_reward_check(f"reward:{k}", v))
    return rs


def parse_openhands_test_result(doc: Any, source: str = "") -> ResultSet:
    """Checks from an OpenHands evaluation record's grading: ``test_result``
    (``report.resolved`` as SWE-bench's evaluation writes it, per-test
    ``tests_status`` when the report carries them, else ``resolved`` at the
    top of ``test_result``) and the standardized record's own ``resolved``.
    ``doc`` is ``{"test_result": {...}, "resolved"?: bool}``."""
    rs = ResultSet(source, "eval-test-result")
    tr = doc.get("test_result") if isinstance(doc, dict) else None
    tr = tr if isinstance(tr, dict) else {}
    report = tr.get("report")
    report = report if isinstance(report, dict) else {}
    ts = report.get("tests_status")
    if isinstance(ts, dict):
        for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            g = ts.get(group)
            if not isinstance(g, dict):
                continue
            for outcome, passed in (("success", True), ("failure", False)):
                for name in g.get(outcome) or () if isinstance(g.get(outcome), list) else ():
                    rs.checks.append(Check(f"{group}::{name}", passed, PASSED if passed else FAILED))
    resolved = report.get("resolved") if "resolved" in report else tr.get("resolved")
    if not isinstance(resolved, bool) and isinstance(doc, dict) and isinstance(doc.get("resolved"), bool):
        resolved = doc["resolved"]
    for flag in ("empty_generation", "failed_apply_patch", "error_eval", "test_timeout"):
        if report.get(flag) is True:
            rs.notes.append(f"report.{flag} is true")
    if not isinstance(resolved, bool):
        if not rs.checks:
            rs.notes.append("test_result holds no report.resolved: the instance was not graded")
        return rs
    if not rs.checks:
        rs.checks.append(Check("resolved", resolved, PASSED if resolved else FAILED))
    elif resolved != all(c.passed for c in rs.checks):
        rs.notes.append(f"resolved={resolved} disagrees with tests_status; both kept")
        rs.checks.append(Check("resolved", resolved, PASSED if resolved else FAILED))
    return rs


def parse_plain_checks(doc: Any, source: str = "") -> ResultSet:
    """Checks from a JSON list of ``{id, passed}`` (the holdout-gate input shape)."""
    rs = ResultSet(source, "checks")
    for i, c in enumerate(doc):
        if isinstance(c, dict) and isinstance(c.get("passed"), bool):
            rs.checks.append(Check(str(c.get("id") or f"#{i}"), c["passed"], PASSED if c["passed"] else FAILED))
        else:
            rs.problem = f"entry #{i} is not {{id, passed: bool}}"
            rs.checks = []
            return rs
    return rs


def parse_json_results(doc: Any, source: str = "") -> ResultSet:
    """Checks from any supported JSON report, recognised by its shape."""
    if isinstance(doc, list):
        return parse_plain_checks(doc, source)
    if not isinstance(doc, dict):
        return ResultSet(source, "unknown", problem="results JSON is neither an object nor a list")
    if isinstance(doc.get("results"), dict) and "tests" in doc["results"]:
        return parse_ctrf(doc, source)
    if "parser_results" in doc or "is_resolved" in doc:
        return parse_tb_results(doc, source)
    if "verifier_result" in doc:
        return parse_harbor_result(doc, source)
    one = next(iter(doc.values())) if len(doc) == 1 else doc
    if isinstance(one, dict) and "resolved" in one and ("tests_status" in one or "patch_successfully_applied" in one):
        return parse_swebench_report(doc, source)
    if isinstance(doc.get("tests"), list) or ("summary" in doc and "exitcode" in doc):
        return parse_pytest_json(doc, source)
    if isinstance(doc.get("visible"), list) or isinstance(doc.get("holdout"), list):
        return ResultSet(source, "unknown", problem="a holdout verdict / manifest, not a results report")
    return ResultSet(source, "unknown", problem="unrecognised results JSON (not JUnit, CTRF, pytest-json-report, harbor or terminal-bench)")


def parse_harbor_verifier_dir(d: Path) -> ResultSet:
    """Checks from a harbor ``verifier/`` directory: ``ctrf.json`` per test and ``reward.txt``."""
    rs = ResultSet(str(d), "harbor-verifier")
    ctrf = d / "ctrf.json"
    if fs.isfile(ctrf):
        doc, diags = load_json(ctrf, MAX_RESULT_BYTES)
        if doc is MISSING:
            rs.problem = f"{ctrf}: " + "; ".join(x.message for x in diags)
            return rs
        sub = parse_ctrf(doc, str(ctrf))
        if sub.problem:
            rs.problem = sub.problem
            return rs
        rs.checks.extend(sub.checks)
        rs.declared = sub.declared
    reward = d / "reward.txt"
    if fs.isfile(reward):
        data, diag = read_bytes(reward, 1 << 20)
        if data is None:
            rs.problem = diag.message if diag else "reward.txt unreadable"
            return rs
        text = data.decode("utf-8", "replace").strip()
        rs.checks.append(_reward_check("reward", text.splitlines()[0] if text else ""))
        if rs.declared is not None:
            rs.declared += 1
    if not fs.isfile(ctrf) and not fs.isfile(reward):
        rs.problem = "verifier directory has neither ctrf.json nor reward.txt"
    return rs


def load_results(path: str | os.PathLike) -> ResultSet:
    """Read one results source (a file, a harbor ``verifier/`` directory or a trial directory)."""
    p = Path(path)
    if fs.isdir(p):
        if fs.isfile(p / "ctrf.json") or fs.isfile(p / "reward.txt"):
            return parse_harbor_verifier_dir(p)
        if fs.isdir(p / "verifier"):
            return parse_harbor_verifier_dir(p / "verifier")
        for name in ("results.json", "result.json"):
            if fs.isfile(p / name):
                return load_results(p / name)
        reports = sorted(x for x in fs.iterdir(p) if fs.isfile(x) and (x.suffix.lower() == ".xml" or x.name.endswith(".json")))
        if reports:  # a directory of reports (e.g. one JUnit file per suite): all of them
            return merge([load_results(x) for x in reports])
        return ResultSet(str(p), "unknown", problem="directory holds no verifier/, results.json, result.json or report files")
    if not fs.exists(p):
        return ResultSet(str(p), "unknown", problem="no such results file")
    if p.name == "reward.txt":
        return parse_harbor_verifier_dir(p.parent)
    data, diag = read_bytes(p, MAX_RESULT_BYTES)
    if data is None:
        return ResultSet(str(p), "unknown", problem=diag.message if diag else "unreadable")
    head = data.lstrip()[:1]
    if p.suffix.lower() == ".xml" or head == b"<":
        return parse_junit(data, str(p))
    from ..jsonio import loads

    doc, d = loads(data, str(p))
    if doc is MISSING:
        return ResultSet(str(p), "unknown", problem=d.message if d else "not JSON")
    return parse_json_results(doc, str(p))


def merge(sets: list[ResultSet]) -> ResultSet:
    """Several result sources as one set (every check from every source)."""
    if len(sets) == 1:
        return sets[0]
    out = ResultSet(", ".join(s.source for s in sets), "+".join(sorted({s.kind for s in sets})))
    problems = [f"{s.source}: {s.problem}" for s in sets if s.problem]
    if problems:
        out.problem = "; ".join(problems)
    declared = [s.declared for s in sets]
    out.declared = sum(d for d in declared if d is not None) if all(d is not None for d in declared) else None
    for s in sets:
        out.checks.extend(s.checks)
        out.notes.extend(s.notes)
    return out


def _green(rs: ResultSet, expected: int | None, allow_skipped: bool, name: str) -> tuple[bool, str]:
    if rs.problem:
        return False, f"{name} results unusable: {rs.problem}"
    if not rs.checks:
        return False, f"{name}: zero tests collected"
    counted = [c for c in rs.checks if not (allow_skipped and c.status == SKIPPED)]
    if not counted:
        return False, f"{name}: every test was skipped"
    if rs.declared is not None and len(rs.checks) < rs.declared:
        return False, f"{name}: report declares {rs.declared} tests but lists {len(rs.checks)}"
    if expected is not None and len(rs.checks) < expected:
        return False, f"{name}: {len(rs.checks)} tests, fewer than the {expected} the manifest declares"
    red = [c for c in counted if not c.passed]
    if red:
        kinds = {}
        for c in red:
            kinds[c.status] = kinds.get(c.status, 0) + 1
        detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        return False, f"{name}: {len(red)} of {len(rs.checks)} not passed ({detail}; first: {red[0].id})"
    return True, f"{name}: {len(counted)} of {len(rs.checks)} passed"


def _same_test(declared: str, cid: str) -> bool:
    """Whether a check id names the declared test (exact, or the same test
    with a longer or shorter ``file::`` / ``class.`` prefix)."""
    if declared == cid:
        return True
    for sep in ("::", ".", "/"):
        if cid.endswith(sep + declared) or declared.endswith(sep + cid):
            return True
    return False


def decide(
    visible: ResultSet | None,
    holdout: ResultSet | None,
    *,
    expected_holdout: int | None = None,
    expected_holdout_ids: list[str] | None = None,
    allow_skipped: bool = False,
) -> dict[str, Any]:
    """The gate verdict over a visible and a holdout result set.

    ``visible`` may be None (no visible set was given: only the holdout set
    decides, and no false completion can be named). ``holdout`` None is a
    missing gate: the verdict is ``NotReady``. ``expected_holdout`` /
    ``expected_holdout_ids`` are what the operator's manifest declares.
    """
    holdout_ok, holdout_why = (False, "no holdout results given") if holdout is None else _green(holdout, expected_holdout, allow_skipped, "holdout")
    if holdout is not None and holdout_ok and expected_holdout_ids:
        missing = [i for i in expected_holdout_ids if not any(_same_test(i, c.id) for c in holdout.checks)]
        if missing:
            holdout_ok, holdout_why = False, f"holdout: {len(missing)} declared tests missing (first: {missing[0]})"
    if visible is None:
        visible_ok, visible_why = None, "no visible results given"
    else:
        visible_ok, visible_why = _green(visible, None, allow_skipped, "visible")
    if visible_ok is False:
        verdict, reason = NOT_READY, visible_why
    elif holdout is None or (holdout.problem or not holdout.checks):
        verdict, reason = NOT_READY, holdout_why
    elif holdout_ok:
        verdict, reason = SUCCEEDED, f"{visible_why}; {holdout_why}" if visible is not None else holdout_why
    elif visible_ok:
        verdict, reason = FALSE_COMPLETION, f"visible green, holdout red: {holdout_why}"
    else:
        verdict, reason = NOT_READY, f"{holdout_why} ({visible_why})"
    false_completion = verdict == FALSE_COMPLETION
    return {
        "verdict": verdict,
        "reason": reason,
        "passed_visible": visible_ok,
        "passed_holdout": holdout_ok,
        "false_completion": false_completion,
        "visible": [c.to_dict() for c in visible.checks] if visible is not None else None,
        "holdout": [c.to_dict() for c in holdout.checks] if holdout is not None else [],
        "sources": {
            "visible": visible.to_dict() if visible is not None else None,
            "holdout": holdout.to_dict() if holdout is not None else None,
        },
    }


def load_holdout_manifest(path: str | os.PathLike) -> tuple[int | None, list[str] | None, str | None]:
    """What a holdout manifest declares: ``(count, ids, problem)``.

    Accepted: a JSON list of test ids (or of ``{id}`` objects), an object with
    a ``holdout`` list (the loop-engineer manifest shape), or ``{"count": N}``.
    """
    doc, diags = load_json(path, 64 << 20)
    if doc is MISSING:
        return None, None, "; ".join(d.message for d in diags) or "unreadable manifest"
    items = doc.get("holdout") if isinstance(doc, dict) and "holdout" in doc else doc
    if isinstance(doc, dict) and "count" in doc and "holdout" not in doc:
        n = _int_or_none(doc.get("count"))
        return (n, None, None) if n is not None else (None, None, "manifest count is not a non-negative integer")
    if not isinstance(items, list):
        return None, None, "manifest is not a list of ids, {holdout: [...]} or {count: N}"
    ids = []
    for it in items:
        if isinstance(it, str):
            ids.append(it)
        elif isinstance(it, dict) and isinstance(it.get("id"), str):
            ids.append(it["id"])
        else:
            return None, None, f"manifest entry {it!r} has no id"
    return len(ids), ids, None
