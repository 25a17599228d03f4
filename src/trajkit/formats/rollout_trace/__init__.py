"""Rollout traces: the per-call records a capture proxy writes between an
agent and an OpenAI-compatible server (format name ``rollout-trace``).

A rollout is a directory holding ``trace.json`` (a JSON array, or a dict
wrapping one) or ``trace.jsonl`` / ``proxy_trace.jsonl`` (one record per
line), optionally with ``task.json``, ``visible_tests.txt``,
``held_out_tests.json`` and ``summary.json``; a trace file on its own reads
too. Each record is one captured model call in the OpenEnv interception-proxy
``TurnRecord`` shape (``turn``, ``request``, ``response``, ``logprobs``,
``completion_tokens``, ``completion_token_ids``, ``per_token_logps``,
``finish_reason``, ``latency_s``, ``timestamp``); see
``shared/formats/opencode.md`` §2.

The session unrolls the agent's conversation: the system and user messages
of the first agent call, one assistant event per captured call (``raw`` is
the whole record), and one observation per tool result that a later request
carries. Bookkeeping calls (title generator, summariser) stay events of kind
``other``; failed upstream calls are ``error`` events. Token ids and logprobs
are parsed per call by :func:`trajkit.rl.calls.parse_call`, which
:mod:`trajkit.rl.turns` builds training turns from.

Detection imports this module for every command, so it holds only the
:class:`~trajkit.registry.Format` (the sniff is in the light :mod:`.detect`); the reader
(:mod:`.reader`, which needs :mod:`trajkit.rl.calls`) is imported on the
first read (``registry.lazy``; ``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.opencode import OPENCODE_TOOLS
from .detect import NAME, SIDECARS, TRACE_NAMES, looks_like_trace, sniff, trace_file_in


# ---------------------------------------------------------------- reading (imported on first use)


def read(root: Path, options=None):
    """Read a rollout directory or trace file (see :func:`.reader.read`)."""
    from .reader import read as _read

    return _read(root, options)


def model_calls(session):
    """Every captured model call of a read trace (see :func:`.reader.model_calls`)."""
    from .reader import model_calls as _model_calls

    return _model_calls(session)


FORMAT = Format(
    name=NAME,
    description="Captured model calls of an agent rollout (capture-proxy trace.json / trace.jsonl)",
    fingerprints=TRACE_NAMES + ("proxy_trace*.jsonl", "proxy_trace*.json"),
    priority=40,
    sniff=sniff,
    read=lazy("trajkit.formats.rollout_trace.reader:read"),
    model_calls=lazy("trajkit.formats.rollout_trace.reader:model_calls"),
    tools=OPENCODE_TOOLS,
    examples=(str(Path(__file__).parent.parent / "fixtures" / "rollout-trace" / "rollout"),),
)


__all__ = ["FORMAT", "NAME", "SIDECARS", "TRACE_NAMES", "looks_like_trace", "model_calls", "read", "sniff", "trace_file_in"]
