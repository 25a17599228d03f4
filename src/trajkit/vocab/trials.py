"""Benchmark trial layouts around a run: terminal-bench ``results.json``,
harbor ``result.json`` and ``verifier/``, and what their end signals mean.

Any reader whose runs sit in such a trial fills :attr:`Session.run
<trajkit.model.Session.run>` (``results``, ``verifier_dir``) with these
helpers, and lets :func:`trial_outcome` speak first when it sets
``Session.outcome``: the harness sees what the event stream cannot
(timeouts, failed installs).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

from ..model import Outcome, TrialResult
from ..reading import fs

TERMINAL_BENCH = "terminal-bench"
HARBOR = "harbor"
#: An evaluation record's own grading (OpenHands ``output.jsonl`` ``test_result``:
#: SWE-bench's ``report.resolved`` / ``tests_status``), as ``{"test_result", "resolved"?}``.
EVAL_TEST_RESULT = "eval-test-result"

#: Members that make a dict a terminal-bench ``results.json`` / a harbor ``result.json``.
TB_KEYS = ("failure_mode", "is_resolved", "parser_results")
HARBOR_KEYS = ("exception_info", "verifier_result", "agent_result")

#: terminal-bench ``failure_mode`` values that mean a cap was hit / an external block.
TB_BUDGET = frozenset({"agent_timeout", "context_length_exceeded", "output_length_exceeded"})
TB_BLOCKED = frozenset({"agent_installation_failed", "test_timeout", "parse_error", "unknown_agent_error", "fatal_llm_parse_error"})


def find_verifier_dir(root: str, probe: Any = None) -> str | None:
    """The harbor ``verifier/`` directory (with ``ctrf.json`` or ``reward.txt``)
    at ``root`` or up to three directories above it (as a path built on ``root``).
    ``probe`` (a :class:`~trajkit.reading.probe.Probe`, or anything with its
    ``absent`` / ``is_dir`` / ``is_file``): answer from the listings a reader
    already holds (the run's own folder) instead of a stat; a folder above the
    run that a Probe has not listed is asked with :func:`fs.absent` (the one
    ``access`` call the probe would end up making), without the probe's look-ups."""
    d = str(root) if isinstance(root, Path) else str(Path(root))  # a Path is normalized already
    listed = getattr(probe, "listed", None)  # a Probe's; the SDK reader's stand-in answers every level itself
    for level in range(4):
        if d == ".":
            v = "verifier"  # as Path(d) / "verifier" writes it
        elif _POSIX:  # posixpath.join(d, "verifier"), without its calls (four per read of a run)
            v = d + "verifier" if d.endswith("/") else d + "/verifier"
        else:
            v = os.path.join(d, "verifier")
        # the run's own folder through the probe (its listing answers); above it, unlisted folders directly
        if probe is not None and (not level or listed is None or listed(d)):
            gone = probe.absent(v)
        else:
            gone = fs.absent(v)
        if not gone and _verifier_at(v, probe):
            return v
        if _POSIX:  # posixpath.dirname(d), inline
            parent = d[:d.rfind("/") + 1]
            if parent and parent != "/" * len(parent):
                parent = parent.rstrip("/")
            parent = parent or "."
        else:
            parent = os.path.dirname(d) or "."
        if parent == d:
            break
        d = parent
    return None


def _verifier_at(v: str, probe: Any) -> bool:
    """Whether ``v`` (not absent) is a folder holding ``ctrf.json`` or ``reward.txt``."""
    isdir, isfile = (probe.is_dir, probe.is_file) if probe is not None else (fs.isdir, fs.isfile)
    return isdir(v) and (isfile(os.path.join(v, "ctrf.json")) or isfile(os.path.join(v, "reward.txt")))


#: ``os.path`` is posixpath (its ``join`` and ``dirname`` are then spelled inline above).
_POSIX = os.path is posixpath


def find_results(metadata: dict[str, Any], paths: dict[str, str] | None = None, depth: int = 3) -> list[TrialResult]:
    """The terminal-bench and harbor results among the files a reader put in
    ``metadata`` (for each, the first dict, breadth first, that has its
    members; both looked for in one walk); ``paths`` maps a top-level metadata
    key to the file it was read from."""
    tb = hb = None
    level = [metadata]
    for _ in range(depth):
        nxt = []
        for m in level:
            if tb is None:
                for k in TB_KEYS:
                    if k in m:
                        tb = m
                        break
            if hb is None:
                for k in HARBOR_KEYS:
                    if k in m:
                        hb = m
                        break
            if tb is not None and hb is not None:
                break
            for v in m.values():
                if isinstance(v, dict):
                    nxt.append(v)
        if not nxt or (tb is not None and hb is not None):
            break
        level = nxt
    out = []
    for kind, found in ((TERMINAL_BENCH, tb), (HARBOR, hb)):
        if found is not None:
            path = next((p for k, p in (paths or {}).items() if metadata.get(k) is found), None)
            out.append(TrialResult(kind, path, found))
    return out


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def trial_cost(results: list[TrialResult]) -> float | None:
    """The LLM cost harbor's ``result.json`` states (``agent_result.cost_usd``)."""
    for r in results:
        if r.kind == HARBOR:
            v = _d(r.data.get("agent_result")).get("cost_usd")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
                return float(v)
    return None


def trial_outcome(results: list[TrialResult], claimed: bool, evidence: list[dict[str, Any]]) -> Outcome | None:
    """The end signal of the trial files when they give one (a cap or an
    external error), else None. ``evidence`` is extended with what was read."""
    tb = next((r.data for r in results if r.kind == TERMINAL_BENCH), None)
    hb = next((r.data for r in results if r.kind == HARBOR), None)
    if tb:
        fm = tb.get("failure_mode")
        evidence.append({"source": "results.json", "failure_mode": fm, "is_resolved": tb.get("is_resolved")})
        if not isinstance(fm, str):
            fm = None  # written as anything else: no failure mode
        if fm in TB_BUDGET:
            return Outcome(False, budget_exhausted=True, status=str(fm), signal=f"terminal-bench failure_mode {fm}", claimed_success=claimed, evidence=evidence)
        if fm in TB_BLOCKED:
            return Outcome(False, external_error=f"terminal-bench failure_mode {fm}", status=str(fm), signal=f"failure_mode {fm}", claimed_success=claimed, evidence=evidence)
    if hb:
        exc = _d(hb.get("exception_info"))
        if exc:
            et = str(exc.get("exception_type") or "")
            msg = str(exc.get("exception_message") or "")[:300]
            evidence.append({"source": "result.json", "exception_type": et})
            if "timeout" in et.lower() or "timeout" in msg.lower()[:80]:
                return Outcome(False, budget_exhausted=True, status=et, signal=f"harbor exception {et}", claimed_success=claimed, evidence=evidence)
            return Outcome(False, external_error=f"harbor exception {et}: {msg}".strip(), status=et, signal=f"harbor exception {et}", claimed_success=claimed, evidence=evidence)
    return None
