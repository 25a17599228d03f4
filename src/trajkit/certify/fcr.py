"""The false-completion rate over many runs or certificates.

Every run whose engine claimed success (``formats/certification.md`` §5.2,
with defect 6 fixed: the engine's own claim is what counts, not the
certifier's outcome token) is one of three (:func:`claim_check`):

* ``verified-true``: certified ``Succeeded``;
* ``verified-false``: the evidence contradicts the claim (a failing or
  erroring test, a high or critical anticheat finding, a criterion false, or
  the harness's own end signal: blocked, budget, human abort);
* ``unverifiable``: nothing decides it (no test results, no trustworthy diff,
  an unreadable trajectory ...).

FCR = verified false / (verified true + verified false), and ``None``
(``n/a``) when no claim could be verified: a batch with no test results at
all has no FCR, not 1.0. Unverifiable claims are a count of their own. The
holdout-flag rate (visible green, holdout red, over runs with a usable gate)
is reported beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .certificate import Certificate, read_certificate
from .pipeline import CertifyOptions, certify
from .states import ABORTED_BY_HUMAN, FAILED_BLOCKED, FAILED_BUDGET, FAILED_SAFETY, SUCCEEDED, TERMINAL_STATES

VERIFIED_TRUE = "verified-true"
VERIFIED_FALSE = "verified-false"
UNVERIFIABLE = "unverifiable"

_ENGINE_DENIES = (FAILED_BLOCKED, FAILED_BUDGET, ABORTED_BY_HUMAN)
_RED = ("failed", "error")


def claim_check(c: Certificate) -> str | None:
    """Whether a certificate verifies its engine's success claim:
    :data:`VERIFIED_TRUE`, :data:`VERIFIED_FALSE`, :data:`UNVERIFIABLE`, or
    None when the engine claimed nothing."""
    if not c.claimed_success:
        return None
    if c.state == SUCCEEDED:
        return VERIFIED_TRUE
    if c.state == FAILED_SAFETY or c.state in _ENGINE_DENIES:
        return VERIFIED_FALSE
    if any(isinstance(f, dict) and f.get("severity") in ("critical", "high") for f in c.findings or []):
        return VERIFIED_FALSE
    g = c.gate if isinstance(c.gate, dict) else {}
    if g.get("false_completion") is True:
        return VERIFIED_FALSE
    for key in ("visible", "holdout"):
        checks = g.get(key)
        if isinstance(checks, list) and any(isinstance(t, dict) and t.get("passed") is False and t.get("status") in _RED for t in checks):
            return VERIFIED_FALSE
    crit = c.criteria_met if isinstance(c.criteria_met, dict) else {}
    if any(v is False for v in crit.values()):
        return VERIFIED_FALSE
    return UNVERIFIABLE


@dataclass(slots=True)
class Item:
    """One thing to count: a certificate file, or a run to certify."""

    path: str
    kind: str  # "certificate" | "run"


def expand(paths: Iterable[str], on_problem: Callable[[str], None] | None = None) -> list[Item]:
    """The runs and certificates under ``paths``, found by the same walk as
    ``convert DIR`` (:func:`trajkit.corpus.discover`), certificate files
    included. A given path under which nothing is found (a missing path, a
    file or folder no format reads) is itself an item: it is certified as
    unreadable, never skipped."""
    from ..corpus import discover

    out: list[Item] = []
    seen: set[str] = set()
    for raw in paths:
        refs = discover([raw], certificates=True, on_problem=on_problem)
        items = [Item(str(r.path), r.kind) for r in refs] or [Item(str(raw), "run")]
        for it in items:
            key = os.path.realpath(it.path)
            if key not in seen:
                seen.add(key)
                out.append(it)
    return out


def _certify_item(args: tuple[Item, CertifyOptions]) -> tuple[Item, dict[str, Any] | None, str | None]:
    item, opts = args
    if item.kind == "certificate":
        c, why = read_certificate(item.path)
        if c is None:
            return item, None, why
        return item, c.to_dict(), None
    return item, certify(item.path, opts).to_dict(), None


@dataclass(slots=True)
class BadInput:
    """An input that could not be counted (a malformed certificate): its path, a stable code and why."""

    path: str
    message: str
    code: str = "fcr.bad-certificate"

    def to_dict(self) -> dict[str, Any]:
        return {"severity": "error", "code": self.code, "path": self.path, "message": self.message}


def certify_many(items: list[Item], opts: CertifyOptions, jobs: int = 1, progress: Callable[[int, int], None] | None = None,
                 bad: list[BadInput] | None = None) -> list[tuple[Item, Certificate]]:
    """Certificates for every item (read back or certified), in input order.
    A certificate file that is not a well-formed certificate is left out and
    appended to ``bad`` (never a traceback, never counted as a run)."""
    results: list[tuple[Item, Certificate] | None] = [None] * len(items)
    work = [(it, opts) for it in items]
    done = 0

    def take(i: int, it: Item, d: dict[str, Any] | None, why: str | None) -> None:
        nonlocal done
        if d is None:
            if bad is not None:
                bad.append(BadInput(it.path, f"not a usable certificate: {why}"))
        else:
            results[i] = (it, Certificate.from_dict(d))
        done += 1
        if progress:
            progress(done, len(items))

    from ..corpus.run import PROCESS, SERIAL, Failed, run

    i = 0
    for batch in run(_certify_item, work, engine=PROCESS if jobs > 1 else SERIAL, jobs=jobs, batch_size=4):
        for w, got in zip(batch.items, batch.results):
            if isinstance(got, Failed):  # certify never raises on data; a bug is this input's problem, not the batch's
                take(i, w[0], None, got.error)
            else:
                take(i, *got)
            i += 1
    return [r for r in results if r is not None]


@dataclass(slots=True)
class FcrReport:
    """Counts over many certificates: runs, claims (verified true, verified
    false, unverifiable), the FCR over verified claims, the holdout-flag
    rate, and the count per terminal state."""

    runs: int = 0
    claims: int = 0
    verified_true: int = 0
    verified_false: int = 0
    unverifiable: int = 0
    gated: int = 0
    holdout_false_completions: int = 0
    cost_usd: float = 0.0
    costed_runs: int = 0
    states: dict[str, int] = field(default_factory=lambda: {s: 0 for s in TERMINAL_STATES})
    per_run: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verified_claims(self) -> int:
        return self.verified_true + self.verified_false

    @property
    def fcr(self) -> float | None:
        """Verified false over verified claims; None when none was verifiable."""
        return self.verified_false / self.verified_claims if self.verified_claims else None

    @property
    def fcr_holdout(self) -> float | None:
        return self.holdout_false_completions / self.gated if self.gated else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "claims": self.claims,
            "verified_claims": self.verified_claims,
            "verified_true": self.verified_true,
            "verified_false": self.verified_false,
            "unverifiable_claims": self.unverifiable,
            "false_completion_rate": self.fcr,
            "gated_runs": self.gated,
            "holdout_false_completions": self.holdout_false_completions,
            "false_completion_rate_holdout": self.fcr_holdout,
            "succeeded": self.states.get(SUCCEEDED, 0),
            "cost_usd": round(self.cost_usd, 6) if self.costed_runs else None,
            "cost_per_success_usd": round(self.cost_usd / self.states.get(SUCCEEDED, 0), 6) if self.costed_runs and self.states.get(SUCCEEDED, 0) else None,
            "states": self.states,
            "runs_detail": self.per_run,
            **({"problems": self.problems} if self.problems else {}),
        }


def report(certs: Iterable[tuple[str, Certificate]]) -> FcrReport:
    """The FCR report over ``(path, certificate)`` pairs."""
    r = FcrReport()
    for path, c in certs:
        r.runs += 1
        r.states[c.state] = r.states.get(c.state, 0) + 1
        cost = (c.run or {}).get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            r.cost_usd += float(cost)
            r.costed_runs += 1
        check = claim_check(c)
        if check is not None:
            r.claims += 1
            if check == VERIFIED_TRUE:
                r.verified_true += 1
            elif check == VERIFIED_FALSE:
                r.verified_false += 1
            else:
                r.unverifiable += 1
        g = c.gate or {}
        if isinstance(g.get("holdout"), list) and g.get("holdout") and g.get("passed_visible") is not None:
            r.gated += 1
            if g.get("false_completion") is True:
                r.holdout_false_completions += 1
        r.per_run.append({
            "path": (c.run or {}).get("path") or path,
            "source": path,
            "state": c.state,
            "claimed_success": c.claimed_success,
            "claim": check,
            "false_completion": c.false_completion,
            "reason": c.reason,
        })
    return r
