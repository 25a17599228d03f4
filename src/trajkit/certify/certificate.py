"""The certificate: one terminal state for one run, with its reason, the
engine outcome, the gate, the findings, the evidence and the versions; and
its projection to an ASF ``outcome`` entry.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..jsonio import MISSING, dumps
from ..reading.io import load_json
from .states import SUCCEEDED, TERMINAL_STATES

SCHEMA = "trajkit.certificate/1"


@dataclass(slots=True)
class Certificate:
    """A certified run.

    ``state`` is one of the seven terminal states and ``reason`` says why.
    ``claimed_success`` is the engine's own "done" claim; ``false_claim``
    (derived) says the claim was not certified ``Succeeded`` — what the FCR
    counts. ``false_completion`` is the holdout gate's narrower flag
    (visible tests green, holdout red).
    ``engine``, ``gate``, ``anticheat`` and ``diff`` are the inputs to the
    projection as plain dicts; ``findings`` every finding, most severe first;
    ``evidence`` the files and events the decision rests on;
    ``capabilities`` what the record could and could not prove.
    """

    state: str
    reason: str
    run: dict[str, Any]
    claimed_success: bool = False
    false_completion: bool = False
    engine: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    anticheat: dict[str, Any] | None = None
    diff: dict[str, Any] | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    capabilities: dict[str, Any] = field(default_factory=dict)
    criteria_met: dict[str, bool] = field(default_factory=dict)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    versions: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""

    def __post_init__(self) -> None:
        if self.state not in TERMINAL_STATES:
            raise ValueError(f"not a terminal state: {self.state!r}")
        if not self.created_at:
            self.created_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        if not self.versions:
            self.versions = versions()

    @property
    def succeeded(self) -> bool:
        return self.state == SUCCEEDED

    @property
    def false_claim(self) -> bool:
        """The engine claimed success but the run was not certified Succeeded."""
        return self.claimed_success and self.state != SUCCEEDED

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "state": self.state,
            "reason": self.reason,
            "claimed_success": self.claimed_success,
            "false_claim": self.false_claim,
            "false_completion": self.false_completion,
            "run": self.run,
            "engine": self.engine,
            "gate": self.gate,
            "anticheat": self.anticheat,
            "findings": self.findings,
            "diff": self.diff,
            "evidence": self.evidence,
            "capabilities": self.capabilities,
            "criteria_met": self.criteria_met,
            "diagnostics": self.diagnostics,
            "versions": self.versions,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Certificate":
        return cls(
            state=d["state"],
            reason=d.get("reason", ""),
            run=d.get("run") or {},
            claimed_success=bool(d.get("claimed_success")),
            false_completion=bool(d.get("false_completion")),
            engine=d.get("engine"),
            gate=d.get("gate"),
            anticheat=d.get("anticheat"),
            diff=d.get("diff"),
            findings=list(d.get("findings") or []),
            evidence=list(d.get("evidence") or []),
            capabilities=dict(d.get("capabilities") or {}),
            criteria_met=dict(d.get("criteria_met") or {}),
            diagnostics=list(d.get("diagnostics") or []),
            versions=dict(d.get("versions") or {}),
            created_at=d.get("created_at") or "",
        )

    def write(self, path: str | os.PathLike) -> Path:
        """Write the certificate as indented JSON, atomically (:mod:`trajkit.atomic`)."""
        from ..atomic import write_atomic

        return write_atomic(path, dumps(self.to_dict(), indent=True) + b"\n")


def versions() -> dict[str, Any]:
    return {"trajkit": __version__, "certificate_schema": SCHEMA, "python": platform.python_version()}


def is_certificate(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA and doc.get("state") in TERMINAL_STATES


_OBJECT_MEMBERS = ("run", "engine", "gate", "anticheat", "diff", "capabilities", "criteria_met", "versions")
_LIST_MEMBERS = ("findings", "evidence", "diagnostics")


def certificate_problem(doc: Any) -> str | None:
    """Why ``doc`` is not a usable certificate (a member of the wrong type,
    an unknown state or schema), or None when it is one."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("schema") != SCHEMA:
        return f"schema is {doc.get('schema')!r}, not {SCHEMA!r}"
    if doc.get("state") not in TERMINAL_STATES:
        return f"state {doc.get('state')!r} is not one of the terminal states"
    if not isinstance(doc.get("reason", ""), str):
        return f"reason is {type(doc['reason']).__name__}, not a string"
    for k in ("claimed_success", "false_completion", "false_claim"):
        if k in doc and not isinstance(doc[k], bool):
            return f"{k} is {doc[k]!r}, not true/false"
    for k in _OBJECT_MEMBERS:
        if doc.get(k) is not None and not isinstance(doc[k], dict):
            return f"{k} is {type(doc[k]).__name__}, not an object"
    for k in _LIST_MEMBERS:
        v = doc.get(k)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, dict) for x in v)):
            return f"{k} is not a list of objects"
    if doc.get("created_at") is not None and not isinstance(doc["created_at"], str):
        return "created_at is not a string"
    run = doc.get("run") or {}
    cost = run.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        return f"run.cost_usd is {cost!r}, not a number"
    if run.get("path") is not None and not isinstance(run["path"], str):
        return "run.path is not a string"
    g = doc.get("gate") or {}
    if g.get("holdout") is not None and not isinstance(g["holdout"], list):
        return "gate.holdout is not a list"
    return None


def read_certificate(path: str | os.PathLike) -> tuple[Certificate | None, str | None]:
    """``(certificate, None)``, or ``(None, why)`` when the file cannot be read
    or is not a well-formed certificate."""
    doc, diags = load_json(path, 256 << 20)
    if doc is MISSING:
        return None, "; ".join(d.message for d in diags) or "unreadable"
    why = certificate_problem(doc)
    if why:
        return None, why
    return Certificate.from_dict(doc), None


def load_certificate(path: str | os.PathLike) -> Certificate | None:
    """A certificate read back from JSON, or None when the file is not a well-formed one."""
    return read_certificate(path)[0]


# ---------------------------------------------------------------- ASF outcome entry

def outcome_payload(cert: Certificate, target: str | None) -> dict[str, Any]:
    """The body of an ASF ``outcome`` entry for ``cert`` (``formats/asf.md`` §4.5):
    ``{kind: "eval", target, pass, label, score, details}``. ``target`` is the
    entry id the outcome judges (the session's leaf)."""
    return {
        "kind": "eval",
        "target": target,
        "pass": cert.succeeded,
        "label": cert.state,
        "score": 1.0 if cert.succeeded else 0.0,
        "details": {
            "certifier": "trajkit",
            "schema": SCHEMA,
            "reason": cert.reason,
            "claimed_success": cert.claimed_success,
            "false_completion": cert.false_completion,
            "gate_verdict": (cert.gate or {}).get("verdict"),
            "findings": [{"rule": f.get("rule"), "severity": f.get("severity")} for f in cert.findings],
            "created_at": cert.created_at,
        },
    }


def _ts(now: datetime | None = None) -> str:
    """An ASF timestamp: UTC, ``T`` and ``Z``, fraction only if non-zero, no trailing zeros."""
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    base = now.strftime("%Y-%m-%dT%H:%M:%S")
    if now.microsecond:
        base += "." + f"{now.microsecond:06d}".rstrip("0")
    return base + "Z"


def append_outcome(asf_path: str | os.PathLike, cert: Certificate, now: datetime | None = None) -> dict[str, Any]:
    """Append ``cert`` to an ASF session file as an ``outcome`` entry at its live leaf.

    The entry is built and hashed with :mod:`trajkit.spec.asf`
    (``make_entry``: content-addressed id, canonical member order) and
    written as one canonical JSON line. Refuses (ValueError) a file that is
    not an ASF session or whose final line is cut off. Returns the entry.
    """
    from ..spec import asf as A

    p = Path(asf_path)
    f = A.read_asf(p)
    if not isinstance(f.header, dict) or f.header.get("type") != "session":
        raise ValueError(f"{p}: not an ASF session file (line 1 is not a session header)")
    if f.trailing is not None and f.trailing.strip():
        raise ValueError(f"{p}: the final line is cut off; appending after it would corrupt the file")
    leaf = f.main_leaf()
    entry = A.make_entry("outcome", leaf, _ts(now), outcome_payload(cert, leaf))
    from ..atomic import write_atomic

    data = p.read_bytes()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    # the whole file again, atomically: a kill leaves the old file or the new one
    write_atomic(p, data + A.entry_line(entry) + b"\n")
    return entry
