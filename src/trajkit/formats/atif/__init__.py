"""ATIF trajectories as input (format name ``atif``): detection and the
:class:`~trajkit.registry.Format`; the reader is :mod:`.reader` (imported on
first use). See that module and ``docs/atif.md``."""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Format, Match, Reject, lazy
from .names import ATIF_TOOLS, NAME

_HEAD = 4096


def _looks_like(head: bytes) -> bool:
    return b'"schema_version"' in head and b'"ATIF-v' in head


#: The sniff's constant answers (immutable: made once, not per file asked about).
_NOT_FILE = Reject("not a file")
_NOT_OBJECT = Reject("not a JSON object")
_NO_SCHEMA = Reject('no "schema_version": "ATIF-v…" near the start')


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    p = str(candidate)  # the probe's key, made once (each probe call would make it again from the Path)
    if not probe.is_file(p):
        return _NOT_FILE
    head = probe.head(p, _HEAD)
    if not head.lstrip().startswith(b"{"):
        return _NOT_OBJECT
    if not _looks_like(head):
        return _NO_SCHEMA
    if candidate.name == "trajectory.json" and candidate.parent.name == "agent":
        # A Harbor trial's own ATIF: weak, so detection walks on to the trial,
        # which the harness's format (with its native log) reads when it can.
        return Match(candidate, fingerprint, WEAK, "a Harbor trial's agent/trajectory.json (ATIF)")
    return Match(candidate, fingerprint, STRONG, "a JSON document with an ATIF schema_version")


_FIX = Path(__file__).resolve().parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="ATIF trajectory (Harbor's Agent Trajectory Interchange Format, v1.0-v1.8): one JSON document",
    fingerprints=("*.json",),
    priority=30,
    sniff=sniff,
    read=lazy("trajkit.formats.atif.reader:read"),
    tools=ATIF_TOOLS,
    examples=(str(_FIX / "subagent.json"), str(_FIX / "harbor-claude-code.json")),
)

__all__ = ["FORMAT", "NAME", "ATIF_TOOLS", "sniff"]
