"""Aider chat histories (format name ``aider``): detection and the
:class:`~trajkit.registry.Format`; the reader and the run listing are
:mod:`.reader` (imported on first use). See that module and ``docs/aider.md``."""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, Format, Match, Reject, lazy
from .names import AIDER_TOOLS, NAME

_HEADER_BYTES = b"# aider chat started at "


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    if not probe.is_file(candidate):
        return Reject("not a file")
    head = probe.head(candidate, 8192)
    if _HEADER_BYTES not in head:
        return Reject("no '# aider chat started at' line near the start")
    return Match(candidate, fingerprint, STRONG, "a markdown file with '# aider chat started at' run headers")


_FIX = Path(__file__).resolve().parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="Aider chat history (.aider.chat.history.md): one markdown file, one run per '# aider chat started at' header",
    fingerprints=(".aider.chat.history.md", "*.md"),
    priority=30,
    sniff=sniff,
    read=lazy("trajkit.formats.aider.reader:read"),
    members=lazy("trajkit.formats.aider.reader:members"),
    tools=AIDER_TOOLS,
    examples=(str(_FIX / "webhook" / ".aider.chat.history.md"),),
)

__all__ = ["FORMAT", "NAME", "AIDER_TOOLS", "sniff"]
