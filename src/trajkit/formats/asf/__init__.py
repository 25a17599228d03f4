"""ASF sessions as input (format name ``asf``): detection and the
:class:`~trajkit.registry.Format`; the reader is :mod:`.reader` (imported on
first use, with the spec package). See that module and ``docs/asf.md``."""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, Format, Match, Reject, lazy
from .names import ASF_TOOLS, NAME

_HEAD = 4096


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    if not probe.is_file(candidate):
        return Reject("not a file")
    head = probe.head(candidate, _HEAD)
    first = head.split(b"\n", 1)[0]
    if b'"agentsession/' not in first or b'"session"' not in first:
        return Reject('line 1 is no ASF header ({"type": "session", "format": "agentsession/…"})')
    return Match(candidate, fingerprint, STRONG, "line 1 is an ASF session header")


_FIX = Path(__file__).resolve().parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="ASF session (Agent Session Format, agentsession/0.x JSONL; pre-0.5 migrated in memory)",
    fingerprints=("*.jsonl",),
    priority=30,
    sniff=sniff,
    read=lazy("trajkit.formats.asf.reader:read"),
    tools=ASF_TOOLS,
    examples=(str(_FIX / "agenteval-basic.jsonl"), str(_FIX / "delegation" / "187c8a39-f505-5133-9018-31a948b15551.jsonl")),
)

__all__ = ["FORMAT", "NAME", "ASF_TOOLS", "sniff"]
