"""Claude Code session transcripts and ``claude -p --output-format
stream-json`` logs: the ``claude-code`` format (``shared/formats/claude-code.md``,
``docs/claude-code.md``).

This module holds what detection needs (:func:`sniff`, :data:`FORMAT`);
the reader (:mod:`.session`, :mod:`.reader`) and the context rebuild
(:mod:`.context`) are imported on first use.
"""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, Format, Match, Reject, lazy
from ...vocab.claude_code import CLAUDE_CODE_TOOLS
from . import layout

NAME = "claude-code"


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    """Claim a path inside a Claude Code session (see :func:`.layout.session_root`)."""
    root, why = layout.session_root(candidate, probe)
    if root is None:
        return Reject(why)
    return Match(root, fingerprint, STRONG, why)


FORMAT = Format(
    name=NAME,
    description="Claude Code session transcripts (~/.claude/projects/<slug>/<session>.jsonl, sub-agents) "
                "and claude -p --output-format stream-json logs",
    fingerprints=("*.jsonl", "*.txt", "*.json", "*.js", "subagents", "workflows", "agent/claude-code.txt", "verifier/*"),
    priority=45,
    sniff=sniff,
    read=lazy("trajkit.formats.claude_code.session:read"),
    find_sessions=lazy("trajkit.formats.claude_code.finding:find_sessions"),
    summarize=lazy("trajkit.formats.claude_code.session:summarize"),
    context=lazy("trajkit.formats.claude_code.context:rebuild_context"),
    tools=CLAUDE_CODE_TOOLS,
    # CLAUDE_CONFIG_DIR replaces ~/.claude (sessions under its projects/)
    homes=("${CLAUDE_CONFIG_DIR:-~/.claude}",),
    examples=tuple(
        str(Path(__file__).resolve().parent.parent / "fixtures" / "claude-code" / n)
        for n in ("real-project", "stream-json.jsonl", "qemu-startup-trial", "nested-subagents")
    ),
)

__all__ = ["FORMAT", "NAME", "sniff"]
