"""OpenHands V0 event streams in terminal-bench and harbor trial directories.

Format notes: ``shared/formats/openhands-v0.md``. A V0 run is an event stream
(actions and observations, integer ids) kept in up to three on-disk views:

- ``flat_export``: a JSON list (``sessions/<sid>.json`` in a terminal-bench
  trial, ``agent/openhands.trajectory.json`` in a harbor trial,
  ``agent-logs/<sid>.json`` in a variant, or a bare file). It omits ``null``
  observations and state changes, so its ids have gaps, and a killed run has
  none.
- ``events``: ``<sid>/events/<id>.json``, one event per file: the complete
  stream.
- ``event_cache``: ``<sid>/event_cache/<start>-<end>.json`` pages of exactly 25
  events, written only when full (the trailing partial page is never there).

Events come from the first view present in that order (CodeTraceBench's
rule); :func:`views_present` and ``ReadOptions.view`` give the others.
Steps: one per action event whose id some observation names as its
``cause``; the first observation wins (see :mod:`trajkit.steps`).

Detection imports this module for every command, so it holds only the
:class:`~trajkit.registry.Format` (its layouts and sniff are in the light
:mod:`.layout`); the reader (:mod:`.reader`) is imported on the first read (``registry.lazy``;
``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.openhands import V0_TOOLS
from .layout import CACHE, EVENTS, FLAT, HISTORY, NAME, VIEWS, Layout, locate, sniff, views_present


def read(root: Path, options=None):
    """Read a V0 trial directory, session directory or flat export file (see :func:`.reader.read`)."""
    from .reader import read as _read

    return _read(root, options)


FORMAT = Format(
    name=NAME,
    description="OpenHands V0 event streams: terminal-bench and harbor trial directories, session directories, flat exports",
    fingerprints=(
        "sessions/*.json",
        "sessions/sessions/*/events",
        "sessions/sessions/*/event_cache",
        "agent/openhands.trajectory.json",
        "agent/sessions/*/events",
        "agent/sessions/*/event_cache",
        "agent-logs/*.json",
        "events/[0-9]*.json",
        "event_cache/[0-9]*-[0-9]*.json",
        "[0-9]*.json",
        "*.json",
    ),
    priority=40,
    sniff=sniff,
    read=lazy("trajkit.formats.openhands_v0.reader:read"),
    views=views_present,
    tools=V0_TOOLS,
    examples=(str(Path(__file__).parent.parent / "fixtures" / "openhands-v0" / "basic.json"),),
)


__all__ = ["FORMAT", "NAME", "FLAT", "EVENTS", "CACHE", "HISTORY", "VIEWS", "Layout", "locate", "read", "sniff", "views_present"]
