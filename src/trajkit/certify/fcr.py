"""The false-completion rate over many runs or certificates.

FCR = runs whose engine claimed success but were not certified
``Succeeded``, over runs whose engine claimed success (``formats/
certification.md`` §5.2, with defect 6 fixed: the engine's own claim is what
counts, not the certifier's outcome token). The holdout-flag rate (visible
green, holdout red, over runs with a usable gate) is reported beside it.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from .certificate import Certificate, read_certificate
from .pipeline import CertifyOptions, certify
from .states import SUCCEEDED, TERMINAL_STATES

MAX_DEPTH = 8


@dataclass(slots=True)
class Item:
    """One thing to count: a certificate file, or a run to certify."""

    path: str
    kind: str  # "certificate" | "run"


def _looks_like_certificate(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b"trajkit.certificate/" in head


def expand(paths: Iterable[str], on_problem: Callable[[str], None] | None = None) -> list[Item]:
    """The runs and certificates under ``paths``: a certificate file, a run
    (any path a reader detects as its root), or a directory holding either."""
    from ..registry import detect

    out: list[Item] = []
    seen: set[str] = set()

    def add(item: Item) -> None:
        key = os.path.realpath(item.path)
        if key not in seen:
            seen.add(key)
            out.append(item)

    def visit(p: Path, depth: int) -> None:
        if p.is_file():
            if p.suffix == ".json" and _looks_like_certificate(p):
                add(Item(str(p), "certificate"))
            return
        if not p.is_dir():
            return
        det = detect(p)
        if det.format is not None and det.match is not None and Path(det.match.root) == p:
            add(Item(str(p), "run"))
            return
        if depth >= MAX_DEPTH:
            return
        try:
            children = sorted(p.iterdir())
        except OSError as e:
            if on_problem:
                on_problem(f"{p}: cannot list: {e.strerror}")
            return
        for c in children:
            if c.name.startswith(".") or c.is_symlink():
                continue
            visit(c, depth + 1)

    for raw in paths:
        p = Path(raw)
        if p.is_file() and not _looks_like_certificate(p):
            add(Item(str(p), "run"))  # a single-file run (a flat export, a trace)
        elif not p.exists():
            add(Item(str(p), "run"))  # certified as unreadable, never skipped
        else:
            before = len(out)
            visit(p, 0)
            if len(out) == before and p.is_dir():
                add(Item(str(p), "run"))  # nothing found: certify the directory itself (unreadable if it is no run)
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

    if jobs > 1 and len(items) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            for i, (it, d, why) in enumerate(ex.map(_certify_item, work, chunksize=4)):
                take(i, it, d, why)
    else:
        for i, w in enumerate(work):
            take(i, *_certify_item(w))
    return [r for r in results if r is not None]


@dataclass(slots=True)
class FcrReport:
    """Counts over many certificates: runs, claims, false claims, the FCR,
    the holdout-flag rate, and the count per terminal state."""

    runs: int = 0
    claims: int = 0
    false_claims: int = 0
    gated: int = 0
    holdout_false_completions: int = 0
    cost_usd: float = 0.0
    costed_runs: int = 0
    states: dict[str, int] = field(default_factory=lambda: {s: 0 for s in TERMINAL_STATES})
    per_run: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def fcr(self) -> float | None:
        return self.false_claims / self.claims if self.claims else None

    @property
    def fcr_holdout(self) -> float | None:
        return self.holdout_false_completions / self.gated if self.gated else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "claims": self.claims,
            "false_claims": self.false_claims,
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
        false_claim = c.claimed_success and c.state != SUCCEEDED
        if c.claimed_success:
            r.claims += 1
            if false_claim:
                r.false_claims += 1
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
            "false_claim": false_claim,
            "false_completion": c.false_completion,
            "reason": c.reason,
        })
    return r
