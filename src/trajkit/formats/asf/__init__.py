"""ASF sessions as input (format name ``asf``): detection and the
:class:`~trajkit.registry.Format`; the reader is :mod:`.reader` (imported on
first use, with the spec package). See that module and ``docs/asf.md``."""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, Format, Match, Reject, lazy
from .names import ASF_TOOLS, NAME

_HEAD = 4096


#: The sniff's constant answers (immutable: made once, not per file asked about).
_NOT_FILE = Reject("not a file")
_NO_HEADER = Reject('line 1 is no ASF header ({"type": "session", "format": "agentsession/…"})')


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    p = str(candidate)  # the probe's key, made once (each probe call would make it again from the Path)
    if not probe.is_file(p):
        return _NOT_FILE
    head = probe.head(p, _HEAD)
    nl = head.find(b"\n")
    first = head if nl < 0 else head[:nl]  # line 1, without copying the rest as split would
    if b'"agentsession/' not in first or b'"session"' not in first:
        return _NO_HEADER
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
