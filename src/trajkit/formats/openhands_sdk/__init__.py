"""OpenHands SDK (V1) conversation directories: the ``openhands-sdk`` format.

Public face: :data:`FORMAT` (registered in :mod:`trajkit.registry`),
:func:`read`, :func:`find_sessions`, :func:`conversation_dir` and
:func:`rebuild_context` ("what the model saw").

Detection imports this module for every command, so it holds only the
sniff and the :class:`~trajkit.registry.Format`; the reader (:mod:`.reader`,
:mod:`.views`, :mod:`.tree`, ...) is imported on the first read
(``registry.lazy``; ``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Format, Match, Reject, lazy
from ...vocab.openhands import SDK_TOOLS
from .layout import CLOUD_EVENT_NAME, EVENT_NAME, conversation_dir, find_sessions, is_bare_event_dir, is_conversation_dir, listing_hint

FORMAT_NAME = "openhands-sdk"


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    """Claim ``candidate`` when it is (or is inside) an SDK conversation."""
    if fingerprint == "event-*.json" and not probe.is_dir(candidate):
        if not EVENT_NAME.match(candidate.name) and not candidate.name.startswith("event-"):
            return Reject(f"{candidate.name} is not named event-<index>-<id>.json")
    if fingerprint == "event_*.json" and not probe.is_dir(candidate) and not CLOUD_EVENT_NAME.match(candidate.name):
        return Reject(f"{candidate.name} is not named event_<index>_<id>.json")
    root = conversation_dir(candidate, probe)
    if root is None:
        return Reject("not a conversation directory: no base_state.json, no events/event-*.json, no agent-server meta.json")
    # one pass over the folder's listing answers both questions and makes the reader's hint
    dirs, files = probe.scan(root)
    has_state = "base_state.json" in files
    has_events = "events" in dirs
    hint = listing_hint(probe, root)  # the reader takes the listing made here
    if has_state:
        return Match(root, fingerprint, STRONG, "base_state.json" + (" and events/" if has_events else ""), hint)
    if has_events:
        return Match(root, fingerprint, STRONG, "events/event-<index>-<id>.json files", hint)
    if is_bare_event_dir(root, probe):
        return Match(root, fingerprint, STRONG, "SDK event files directly in the folder (no events/ parent, no base_state.json)", hint)
    return Match(root, fingerprint, WEAK, "agent-server meta.json without base_state.json", hint)


def read(root, options=None):
    """Read a conversation directory (see :func:`.reader.read`)."""
    from .reader import read as _read

    return _read(root, options)


def summarize(root, max_file_bytes: int = 1 << 30) -> dict:
    """A conversation's ``trajkit ls`` row (see :func:`.reader.summarize`),
    with the common ``status`` key set to its execution status."""
    from .reader import summarize as _summarize

    row = _summarize(root, max_file_bytes)
    row.setdefault("status", row.get("execution_status"))
    return row


def rebuild_context(session_or_path, at=None):
    """One entry per agent LLM call: ``{"llm_response_id", "messages"}``
    (see :mod:`.context`)."""
    from .context import rebuild_context as _rc

    return _rc(session_or_path, at=at)


FORMAT = Format(
    name=FORMAT_NAME,
    description="OpenHands software-agent-sdk (V1) conversation directory: base_state.json + events/event-<idx>-<id>.json, "
    "or a bare folder of event files",
    fingerprints=("base_state.json", "events/event-*.json", "meta.json", "event-*.json", "event_*.json"),
    priority=50,
    sniff=sniff,
    read=lazy("trajkit.formats.openhands_sdk.reader:read"),
    find_sessions=find_sessions,
    summarize=summarize,
    context=rebuild_context,
    tools=SDK_TOOLS,
    # OpenHands CLI (openhands_cli/locations.py): $OPENHANDS_CONVERSATIONS_DIR,
    # else $OPENHANDS_PERSISTENCE_DIR/conversations, which defaults to ~/.openhands
    homes=("${OPENHANDS_CONVERSATIONS_DIR:-${OPENHANDS_PERSISTENCE_DIR:-~/.openhands}/conversations}",),
    examples=(str(Path(__file__).resolve().parent.parent / "fixtures" / "openhands-sdk" / "cd94562403b9487ebdd4018e3f531dfd"),),
)


__all__ = ["FORMAT", "read", "find_sessions", "summarize", "conversation_dir", "rebuild_context", "is_conversation_dir", "sniff"]
