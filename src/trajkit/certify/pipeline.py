"""Certify one run: read it, work out the engine outcome, the gate, the diff
and the findings, and project them onto one terminal state.

Never raises on data: an unreadable trajectory, a missing results file, a
broken manifest or a failing ``git`` all become a certificate (usually
``FailedUnverifiable``) whose reason says what was missing.
"""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..diagnostics import ERROR
from ..model import DetectionError, ReadOptions, Session, TrajkitError
from . import paths as P
from .actions import Action, normalize, observations, workspace_roots, Resolver
from .anticheat import RuleConfig, scan_actions
from .canary import CanaryMatcher, compare_manifest, extract_canaries, find_canaries, list_files, load_manifest, workspace_test_file_count, protected_files
from .certificate import Certificate
from .diff import DiffResult, git_diff, is_git_workspace, read_patch_file, rebuild_from_events
from .diffrules import scan_diff
from .engine import engine_outcome
from .findings import Finding, merge_findings
from ..vocab.trials import EVAL_TEST_RESULT
from .gate import (ResultSet, decide, load_holdout_manifest, load_results, merge, parse_harbor_result, parse_harbor_verifier_dir,
                   parse_openhands_test_result, parse_swebench_report, parse_tb_results)
from .states import CRITICAL, FAILED_UNVERIFIABLE, HIGH, EngineOutcome, downgrade_for, project

#: Reader diagnostics that mean part of the trajectory could not be read.
UNREADABLE_CODES = {
    "file.unreadable", "file.too-large", "file.empty", "json.not-utf8", "json.invalid",
    "jsonl.invalid-line", "jsonl.truncated-line",
}

#: Reader diagnostics that mean part of the record is missing (a gap): events
#: after a missing index not read, a leaf or parent that names an event the
#: record does not hold, event files or sub-agents left unread, ids that jump.
#: What was not read cannot be vouched for, whatever the format.
RECORD_GAP_CODES = {
    "sdk.event-gap", "sdk.events-missing", "sdk.events-unreadable", "sdk.event-bad-name", "sdk.event-duplicate-index",
    "sdk.leaf-missing", "sdk.parent-missing", "sdk.parent-unreadable", "sdk.children-too-deep", "sdk.dir-unreadable",
    "v0.id-gap", "v0.shard-gap", "v0.shard-size", "v0.no-event-stream",
    "codex.subagent-depth", "gemini.subagent-depth",
}

_HISTORY_REWRITE = re.compile(r"\bgit\b(?:\s+-[cC]\s+\S+)*\s+(?:commit|reset|rebase|am|merge|cherry-pick|revert|checkout|switch|stash|filter-branch|update-ref|replace)\b")


@dataclass(slots=True)
class CertifyOptions:
    """Everything :func:`certify` can be told (the CLI flags, one to one)."""

    workspace: str | None = None
    base: str | None = None
    visible: Sequence[str] = ()
    holdout: Sequence[str] = ()
    protect: Sequence[str] = ()
    default_protect: bool = True
    before: str | None = None
    holdout_manifest: str | None = None
    criteria: dict[str, Any] | None = None
    patch: str | None = None
    format: str | None = None
    agent_workspace: str | None = None
    history_forbidden: bool = True
    allow_skipped: bool = False
    harness_gate: bool = True
    max_file_bytes: int = 1 << 30
    extra: dict[str, Any] = field(default_factory=dict)


def _trajectory_problems(session: Session) -> list[str]:
    out = []
    for s in session.walk():
        for d in s.diagnostics:
            if d.code in UNREADABLE_CODES or d.severity == ERROR:
                out.append(str(d))
    return out


def _record_gaps(session: Session) -> list[str]:
    """The reader diagnostics that say part of the record is missing (:data:`RECORD_GAP_CODES`)."""
    return [str(d) for s in session.walk() for d in s.diagnostics if d.code in RECORD_GAP_CODES and d.code not in UNREADABLE_CODES and d.severity != ERROR]


def _harness_holdout(session: Session) -> ResultSet | None:
    """The harness's own verdict (harbor verifier, terminal-bench parser_results, harbor result, a SWE-bench
    report beside the run) as a holdout set."""
    run = session.run
    if run.verifier_dir:
        rs = parse_harbor_verifier_dir(Path(run.verifier_dir))
        rs.notes.append("harness verdict used as the holdout set")
        return rs
    tb, hb = run.result("terminal-bench"), run.result("harbor")
    if tb and (tb.data.get("parser_results") or tb.data.get("is_resolved") is not None):
        rs = parse_tb_results(tb.data, "results.json (from the trial)")
        rs.notes.append("harness verdict used as the holdout set")
        return rs
    if hb:
        rs = parse_harbor_result(hb.data, "result.json (from the trial)")
        if rs.checks:
            rs.notes.append("harness verdict used as the holdout set")
            return rs
    sb = run.result("swe-bench")
    if sb:
        rs = parse_swebench_report(sb.data, f"{sb.path or 'report.json'} (SWE-bench, beside the run)")
        rs.notes.append("harness verdict used as the holdout set")
        return rs
    oh = run.result(EVAL_TEST_RESULT)
    if oh:
        rs = parse_openhands_test_result(oh.data, f"{oh.path}: test_result (the evaluation record's grading)")
        if rs.checks:
            rs.notes.append("harness verdict used as the holdout set")
            return rs
    return None


def _unreadable(run: str, why: str, opts: CertifyOptions, started: dict[str, Any] | None = None) -> Certificate:
    return Certificate(
        state=FAILED_UNVERIFIABLE,
        reason=f"unreadable trajectory: {why}",
        run={"path": os.path.abspath(run), "format": opts.format, "id": None},
        claimed_success=False,
        engine=None,
        gate=None,
        anticheat={"findings": [], "clean": False, "downgrade_to": None, "incomplete": True, "incomplete_reason": "unreadable trajectory"},
        capabilities={"trajectory": "unreadable", **(started or {})},
    )


def certify(run: str | os.PathLike, options: CertifyOptions | None = None, session: Session | None = None) -> Certificate:
    """The certificate for the run at ``run`` (any session trajkit reads).

    ``session`` may be given when the caller already read the run.
    """
    opts = options or CertifyOptions()
    run = os.fspath(run)
    if session is None:
        from ..registry import read, root_for

        try:
            # a named format reads without detection; an inner path still finds its run's root
            root = root_for(run, opts.format) if opts.format else run
            session = read(root, format=opts.format, options=ReadOptions(max_file_bytes=opts.max_file_bytes))
        except (DetectionError, TrajkitError) as e:
            return _unreadable(run, str(e), opts)
        except Exception as e:  # a reader must not raise on data; if one does, the run is still certified
            return _unreadable(run, f"reader crashed: {type(e).__name__}: {e}", opts)
    try:
        return _certify_session(run, session, opts)
    except Exception as e:  # never a traceback instead of a certificate
        cert = _unreadable(run, f"certifier error: {type(e).__name__}: {e}", opts)
        cert.reason = f"certification could not complete: {type(e).__name__}: {e}"
        cert.diagnostics.append({"severity": "error", "code": "certify.internal-error", "message": traceback.format_exc(limit=5)})
        return cert


def _certify_session(run: str, session: Session, opts: CertifyOptions) -> Certificate:
    ws = os.path.abspath(opts.workspace) if opts.workspace else None
    diagnostics: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = [{"kind": "run", "path": session.source_path, "format": session.format}]
    findings: list[Finding] = []
    incomplete: list[str] = []

    protect = tuple(opts.protect) + (P.DEFAULT_PROTECT if opts.default_protect else ())
    manifest = None
    if opts.before:
        manifest = load_manifest(opts.before)
        if manifest.problem:
            incomplete.append(f"before manifest {opts.before} unusable: {manifest.problem}")
        else:
            protect = protect + tuple(g for g in manifest.protect if g not in protect)
            evidence.append({"kind": "before-manifest", "path": os.path.abspath(opts.before), "files": len(manifest.files)})

    # --- engine
    outcome: EngineOutcome = engine_outcome(session)

    # --- trajectory
    problems = _trajectory_problems(session)
    if problems and outcome.external_error and outcome.external_error.startswith("unclassified engine error"):
        # the events that would classify this error end could not be read: say so, do not guess "blocked"
        outcome = EngineOutcome(False, status=outcome.status, signal="error status, but the error events that would classify it are unreadable",
                                evidence=outcome.evidence)
    if problems:
        incomplete.insert(0, f"unreadable trajectory: {len(problems)} problem(s), first: {problems[0]}")
        diagnostics.extend({"severity": "error", "code": "certify.trajectory-incomplete", "message": p} for p in problems[:50])
    gaps = _record_gaps(session)
    if gaps:
        incomplete.insert(len(problems) and 1, f"record incomplete: {len(gaps)} gap(s), first: {gaps[0]}")
        diagnostics.extend({"severity": "error", "code": "certify.record-incomplete", "message": g} for g in gaps[:50])
    actions = normalize(session, ws, opts.agent_workspace)
    listing = list_files(ws) if ws and os.path.isdir(ws) else None
    files = listing.files if listing is not None else None
    if listing is not None and not listing.complete:
        incomplete.append(listing.incomplete_reason or "workspace scan incomplete")
    present = tuple(protected_files(ws, protect, files)) if listing is not None else ()
    # the visible suite: test files the agent may run (protected ones are not part of it)
    test_count = workspace_test_file_count(ws, exclude=set(present), files=files) if listing is not None else None
    if manifest is not None and not manifest.problem:
        present += tuple(f for f, info in manifest.files.items() if info.get("set") == "protected" and f not in present)
    cfg = RuleConfig(protect=protect, history_forbidden=opts.history_forbidden, test_file_count=test_count, protected_present=present)
    findings.extend(scan_actions(actions, cfg))

    # --- diff
    diff = _collect_diff(session, actions, opts, ws, protect)
    if not diff.trustworthy:
        hint = " (certify with --workspace on the git work tree and --base REV for a real diff)" if diff.source == "events" else ""
        incomplete.append(f"no trustworthy diff: {diff.reason}{hint}")
    has_ws = bool(ws and os.path.isdir(ws))
    diff_findings = scan_diff(diff.files, protect, _visible_literals(ws, set(present), diff, files) if has_ws else None,
                              _package_dirs(ws, files) if has_ws else None)
    if diff.source == "events":
        step_of_event = {st.action_event_id: st.step_id for st in session.steps if st.action_event_id is not None}
        step_of_event.update({st.observation_event_id: st.step_id for st in session.steps if st.observation_event_id is not None})
        for f in diff_findings:
            for ev in f.evidence:
                steps = [step_of_event[i] for i in ev.get("event_ids", []) if i in step_of_event]
                if steps:
                    ev["step_ids"] = steps
    findings.extend(diff_findings)
    for t in diff.tampering:  # refs/replace/*, info/grafts: objects or history swapped under the diff
        findings.append(Finding("git-tampering", CRITICAL, t["message"], [{k: v for k, v in t.items() if k != "message"}], "diff"))
    evidence.append({"kind": "diff", "source": diff.source, "base": diff.base, "files": len(diff.files)})

    # --- before manifest and canaries
    canaries = []
    if manifest is not None and not manifest.problem:
        canaries = list(manifest.canaries)
        if ws and os.path.isdir(ws):
            for ch in compare_manifest(manifest, ws, protect, files):
                findings.append(Finding("gate-tampering", CRITICAL, f"{ch['set']} file {ch['file']} {ch['change']} since the before-run manifest", [ch], "manifest"))
        else:
            incomplete.append("a before manifest was given but no --workspace to compare it with")
    elif ws and os.path.isdir(ws):
        prot = protected_files(ws, protect, files)
        if prot:
            changed = {f.path for f in diff.files} | {f.old_path for f in diff.files if f.old_path}
            unchanged = {r for r in files or () if r not in changed} if diff.source == "git" and diff.trustworthy else None
            canaries = extract_canaries(ws, prot, [session.task or ""], unchanged_only=unchanged, files=files)
    if canaries:
        obs = observations(session)
        step_of = {st.observation_event_id: st.step_id for sess in session.walk() for st in sess.steps if st.observation_event_id is not None}
        texts = [({"event_id": e.id, "step_id": step_of.get(e.id), **({"session": label} if label else {})}, t) for e, t, label in obs]
        seen_rules: set[tuple[str, str]] = set()
        matcher = CanaryMatcher([c.text for c in canaries])
        for c, where in find_canaries(canaries, texts, matcher):
            key = ("leak", c.file)
            if key in seen_rules:
                continue
            seen_rules.add(key)
            findings.append(Finding("canary-leak", HIGH, f"protected content from {c.file} appeared in an observation (a read)",
                                    [{**where, "file": c.file, "line": c.line, "text": c.text[:200]}], "canary"))
        added = [({"file": f.path, "line": l.new_no}, l.text) for f in diff.files for l in f.added if not P.match_any(f.path, protect)]
        for c, where in find_canaries(canaries, added, matcher):
            key = ("copy", c.file + "->" + where["file"])
            if key in seen_rules:
                continue
            seen_rules.add(key)
            findings.append(Finding("canary-copy", HIGH, f"protected content from {c.file} copied into {where['file']}",
                                    [{**where, "canary_file": c.file, "canary_line": c.line, "text": c.text[:200]}], "canary"))

    merged = merge_findings(findings)
    fdicts = [f.to_dict() for f in merged]
    anticheat = {
        "findings": fdicts,
        "clean": not fdicts,
        "downgrade_to": downgrade_for(fdicts),
        "incomplete": bool(incomplete),
        "incomplete_reason": "; ".join(incomplete) if incomplete else None,
        "actions": len(actions),
        "canaries": len(canaries),
    }

    # --- gate
    gate = _gate(session, opts, evidence)

    proj = project(outcome, gate, anticheat, opts.criteria)
    cert = Certificate(
        state=proj.state,
        reason=proj.reason,
        run={"path": session.source_path, "format": session.format, "id": session.id, "view": session.view,
             "task": (session.task or "")[:300] or None, "events": len(session.events), "steps": len(session.steps),
             "cost_usd": _cost(session)},
        claimed_success=outcome.claimed_success,
        false_completion=proj.false_completion,
        engine=outcome.to_dict(),
        gate=gate,
        anticheat={k: v for k, v in anticheat.items() if k != "findings"},
        diff=diff.to_dict(),
        findings=fdicts,
        evidence=evidence,
        capabilities={
            "trajectory": "incomplete" if problems or gaps else "complete",
            "actions": len(actions),
            "diff": diff.source if diff.trustworthy else f"{diff.source} (untrustworthy)",
            "tests": "reported (not re-run by trajkit)",
            "canaries": len(canaries),
            "before_manifest": bool(manifest and not manifest.problem),
            "workspace": ws,
        },
        criteria_met=proj.criteria_met,
        diagnostics=diagnostics,
    )
    cert.versions["reader_format"] = session.format
    if diff.source == "git":
        from .diff import git_version

        cert.versions["git"] = git_version()
    return cert


def _cost(session: Session) -> float | None:
    """The run's LLM cost in USD when the record says (as the reader found it)."""
    return session.run.cost_usd


def _visible_literals(ws: str, protected: set[str], diff: DiffResult, files: list[str] | None = None):
    """Literals of the visible test files (the workspace's test files that are not protected),
    as the run left them, plus what the run removed from them."""
    from .canary import _read_text, walk_files
    from .diffrules import VisibleLiterals

    out = VisibleLiterals()
    n = 0
    for rel in walk_files(ws) if files is None else files:
        if rel in protected or not P.is_test_file(rel):
            continue
        text = _read_text(os.path.join(ws, rel))
        if text:
            out.add_text(text)
            n += 1
            if n >= 2000:
                break
    for f in diff.files:
        if P.is_test_file(f.path) and f.removed:
            out.add_text("\n".join(l.text for l in f.removed))
    return out


def _package_dirs(ws: str, files: list[str] | None = None) -> set[str]:
    """Workspace directories holding an ``__init__.py`` (workspace-relative, "" for the root)."""
    from .canary import walk_files

    return {r.rsplit("/", 1)[0] if "/" in r else "" for r in (walk_files(ws) if files is None else files) if r.rsplit("/", 1)[-1] == "__init__.py"}


def _collect_diff(session: Session, actions: list[Action], opts: CertifyOptions, ws: str | None, protect: tuple[str, ...]) -> DiffResult:
    if opts.patch:
        return read_patch_file(opts.patch)
    roots = workspace_roots(session, ws, opts.agent_workspace)
    res = Resolver(roots)

    def rel(path: str) -> str | None:
        return res.relative(res.absolute(path))

    if ws and is_git_workspace(ws):
        d = git_diff(ws, opts.base, force_include=list(protect) + list(P.GATE_FILES))
        if d.trustworthy and opts.base is None:
            rewrites = [a for a in actions if a.op == "exec" and a.via == "shell" and a.command and _HISTORY_REWRITE.search(a.command)]
            if rewrites:
                d.trustworthy = False
                d.reason = (f"no --base given and the agent changed git history (step {rewrites[0].step_id}, event {rewrites[0].event_id}: "
                            f"{rewrites[0].command[:80]!r}); HEAD no longer marks the start of the run")
            else:
                d.notes.append("no --base given: HEAD taken as the run's base")
        return d
    if opts.base:
        return DiffResult("none", False, f"--base {opts.base} given but {ws or 'no workspace'} is not a git work tree", base=opts.base)
    d = rebuild_from_events(session, actions, rel)
    if ws:
        d.notes.append(f"{ws} is not a git work tree: diff rebuilt from the record")
    else:
        d.notes.append("no --workspace given: diff rebuilt from the record")
    return d


def _gate(session: Session, opts: CertifyOptions, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    visible = merge([load_results(p) for p in opts.visible]) if opts.visible else None
    holdout = merge([load_results(p) for p in opts.holdout]) if opts.holdout else None
    if holdout is None and opts.harness_gate:
        holdout = _harness_holdout(session)
    expected = ids = None
    if opts.holdout_manifest:
        expected, ids, problem = load_holdout_manifest(opts.holdout_manifest)
        if problem:
            g = decide(visible, holdout)
            g["verdict"] = "NotReady"
            g["reason"] = f"holdout manifest {opts.holdout_manifest} unusable: {problem}"
            g["passed_holdout"] = False
            g["false_completion"] = False
            return g
    g = decide(visible, holdout, expected_holdout=expected, expected_holdout_ids=ids, allow_skipped=opts.allow_skipped)
    for name, rs in (("visible", visible), ("holdout", holdout)):
        if rs is not None:
            evidence.append({"kind": f"{name}-results", "path": rs.source, "format": rs.kind, "tests": len(rs.checks)})
    return g
