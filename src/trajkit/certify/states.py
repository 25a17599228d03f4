"""The seven terminal states, the engine's end signal, and the projection
from (engine outcome, gate, anticheat, criteria) to exactly one state.

The precedence is the one in ``formats/certification.md`` §2.1: safety, then
human abort, blocked, budget, spec gap, then anticheat / gate / evidence, then
whether the engine reached its own end. The projection is pure: it reads its
inputs and returns a :class:`Projection`; it never computes the gate's
false-completion flag, it copies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUCCEEDED = "Succeeded"
FAILED_UNVERIFIABLE = "FailedUnverifiable"
FAILED_BLOCKED = "FailedBlocked"
FAILED_BUDGET = "FailedBudget"
FAILED_SAFETY = "FailedSafety"
FAILED_SPEC_GAP = "FailedSpecGap"
ABORTED_BY_HUMAN = "AbortedByHuman"

#: The canonical seven, in the canonical order.
TERMINAL_STATES: tuple[str, ...] = (
    SUCCEEDED,
    FAILED_UNVERIFIABLE,
    FAILED_BLOCKED,
    FAILED_BUDGET,
    FAILED_SAFETY,
    FAILED_SPEC_GAP,
    ABORTED_BY_HUMAN,
)

# Finding severities, and their rank (only high and critical downgrade).
CRITICAL = "critical"
HIGH = "high"
MEDIUM = "medium"
LOW = "low"
SEVERITY_RANK = {CRITICAL: 3, HIGH: 2, MEDIUM: 1, LOW: 0}


@dataclass(slots=True)
class EngineOutcome:
    """The harness's own end signal in neutral form.

    ``reached_end``: the engine emitted its own "done" signal.
    ``external_error``: an unrecoverable external block (any non-empty text
    means blocked). ``budget_exhausted``: a step, token, time or cost cap was
    hit. ``human_abort``: an operator stopped the run. At most one of
    ``external_error`` and ``budget_exhausted`` is set. ``status`` is the
    native end status as read (``finished``, ``error``, ``agent_timeout`` ...),
    ``signal`` a short text saying which signal decided, ``evidence`` the
    native event ids / files the decision rests on, ``claimed_success``
    whether the engine itself declared the task done (for the FCR), and
    ``approval_wait`` whether the run stopped waiting for a confirmation.
    """

    reached_end: bool
    external_error: str | None = None
    budget_exhausted: bool = False
    human_abort: bool = False
    status: str | None = None
    signal: str = ""
    claimed_success: bool = False
    approval_wait: bool = False
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.external_error and self.budget_exhausted:
            raise ValueError("an engine outcome sets at most one of external_error and budget_exhausted")

    def to_dict(self) -> dict[str, Any]:
        return {
            "reached_end": self.reached_end,
            "external_error": self.external_error,
            "budget_exhausted": self.budget_exhausted,
            "human_abort": self.human_abort,
            "status": self.status,
            "signal": self.signal,
            "claimed_success": self.claimed_success,
            "approval_wait": self.approval_wait,
            "evidence": self.evidence,
        }


@dataclass(slots=True)
class Projection:
    """The projection's answer: one terminal state, why, and the copied
    false-completion flag."""

    state: str
    reason: str
    false_completion: bool = False
    criteria_met: dict[str, bool] = field(default_factory=dict)


def _valid_gate(gate: Any) -> str | None:
    """None when ``gate`` is a structurally valid gate result, else why not."""
    if not isinstance(gate, dict):
        return "no gate result"
    if not isinstance(gate.get("verdict"), str):
        return "gate result has no verdict"
    if not isinstance(gate.get("false_completion"), bool):
        return "gate result has no false_completion flag"
    holdout = gate.get("holdout")
    if not isinstance(holdout, list):
        return "gate result has no holdout check list"
    visible = gate.get("visible")
    if visible is not None and not isinstance(visible, list):
        return "gate result visible checks are not a list"
    for check in (visible or []) + holdout:
        if not isinstance(check, dict) or not isinstance(check.get("id"), str) or not isinstance(check.get("passed"), bool):
            return "gate result has a check that is not {id, passed}"
    return None


def _valid_anticheat(ac: Any) -> str | None:
    if not isinstance(ac, dict):
        return "no anticheat result"
    if not isinstance(ac.get("findings"), list) or "downgrade_to" not in ac:
        return "anticheat result is malformed"
    if ac.get("incomplete"):
        return str(ac.get("incomplete_reason") or "anticheat input incomplete")
    return None


def project(
    outcome: EngineOutcome,
    gate: dict[str, Any] | None,
    anticheat: dict[str, Any] | None,
    criteria: dict[str, Any] | None = None,
) -> Projection:
    """The one terminal state for these inputs, first match wins.

    ``gate`` is a gate result (see :func:`trajkit.certify.gate.decide`),
    ``anticheat`` ``{findings, downgrade_to, incomplete?, incomplete_reason?}``
    and ``criteria`` an optional ``{name: True | False | None}`` map (None: a
    criterion with no mapped check, a spec gap). Missing or malformed gate or
    anticheat input fails closed to ``FailedUnverifiable``.
    """
    fc = isinstance(gate, dict) and gate.get("false_completion") is True
    crit: dict[str, Any] = dict(criteria or {})
    ac_problem = _valid_anticheat(anticheat)
    gate_problem = _valid_gate(gate)
    met = {str(k): v is True for k, v in crit.items()}

    def out(state: str, reason: str) -> Projection:
        return Projection(state, reason, fc, met)

    # 1. a critical finding outranks everything, even a human abort
    if isinstance(anticheat, dict) and isinstance(anticheat.get("findings"), list) and anticheat.get("downgrade_to") == FAILED_SAFETY:
        crit_rules = sorted({f.get("rule", "?") for f in anticheat["findings"] if isinstance(f, dict) and f.get("severity") == CRITICAL})
        return out(FAILED_SAFETY, "critical gate-tampering finding: " + ", ".join(crit_rules))
    if outcome.human_abort:
        return out(ABORTED_BY_HUMAN, f"operator stopped the run ({outcome.signal or outcome.status})")
    if outcome.external_error:
        return out(FAILED_BLOCKED, f"external blocker: {outcome.external_error}")
    if outcome.budget_exhausted:
        return out(FAILED_BUDGET, f"budget exhausted ({outcome.signal or outcome.status})")
    for k, v in crit.items():
        if not isinstance(k, str) or not k.strip() or v not in (True, False, None):
            return out(FAILED_SPEC_GAP, f"criteria map is malformed at {k!r}")
    missing = [k for k, v in crit.items() if v is None]
    if missing:
        return out(FAILED_SPEC_GAP, "criteria without a mapped check: " + ", ".join(missing))
    if ac_problem:
        if ac_problem.startswith("unreadable trajectory"):
            return out(FAILED_UNVERIFIABLE, ac_problem)
        return out(FAILED_UNVERIFIABLE, f"anticheat cannot vouch for the run: {ac_problem}")
    if gate_problem:
        return out(FAILED_UNVERIFIABLE, f"gate cannot vouch for the run: {gate_problem}")
    assert isinstance(anticheat, dict) and isinstance(gate, dict)
    if anticheat.get("downgrade_to") == FAILED_UNVERIFIABLE:
        rules = sorted({f.get("rule", "?") for f in anticheat["findings"] if isinstance(f, dict) and f.get("severity") == HIGH})
        return out(FAILED_UNVERIFIABLE, "anticheat: high-severity finding: " + ", ".join(rules))
    if gate["verdict"] != SUCCEEDED:
        why = gate.get("reason") or gate["verdict"]
        if fc:
            return out(FAILED_UNVERIFIABLE, f"false completion: {why}")
        return out(FAILED_UNVERIFIABLE, f"gate not green ({gate['verdict']}): {why}")
    if fc:
        return out(FAILED_UNVERIFIABLE, "gate says Succeeded but flags a false completion")
    unmet = [k for k, v in crit.items() if v is not True]
    if unmet:
        return out(FAILED_UNVERIFIABLE, "criteria not met: " + ", ".join(unmet))
    if not outcome.reached_end:
        extra = " (stopped waiting for a confirmation)" if outcome.approval_wait else ""
        return out(FAILED_UNVERIFIABLE, f"engine did not reach its own terminal signal (status {outcome.status or 'unknown'}){extra}")
    return out(SUCCEEDED, "gate green, anticheat clean, engine reached its end")


def downgrade_for(findings: list[dict[str, Any]]) -> str | None:
    """``FailedSafety`` if any finding is critical, ``FailedUnverifiable`` if
    any is high, else None (medium and low are review flags only)."""
    sev = {f.get("severity") for f in findings}
    if CRITICAL in sev:
        return FAILED_SAFETY
    if HIGH in sev:
        return FAILED_UNVERIFIABLE
    return None
