"""A finding: a rule that fired, how bad it is, and the evidence for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .states import SEVERITY_RANK


@dataclass(slots=True)
class Finding:
    """One rule that fired.

    ``rule`` is the stable rule id (see ``docs/certify.md``), ``severity``
    critical / high / medium / low, ``message`` a human sentence, and
    ``evidence`` a list of places: each a dict with whichever of ``step_id``,
    ``event_id``, ``session``, ``file``, ``line``, ``token`` and ``text`` apply.
    """

    rule: str
    severity: str
    message: str
    evidence: list[dict[str, Any]] = field(default_factory=list)
    source: str = "trajectory"  # trajectory | diff | canary | manifest

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "source": self.source, "message": self.message, "evidence": self.evidence}


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then by rule, keeping discovery order within a rule."""
    return sorted(findings, key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.rule))


def merge_findings(findings: list[Finding], max_evidence: int = 20) -> list[Finding]:
    """One finding per (rule, severity, message), evidence pooled (capped)."""
    out: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        key = (f.rule, f.severity, f.message)
        if key in out:
            have = out[key]
            for ev in f.evidence:
                if ev not in have.evidence and len(have.evidence) < max_evidence:
                    have.evidence.append(ev)
        else:
            out[key] = Finding(f.rule, f.severity, f.message, list(f.evidence[:max_evidence]), f.source)
    return sort_findings(list(out.values()))
