"""OpenHands LLM completion logs: one JSON file per model call (format name
``openhands-completions``).

Format notes: ``shared/formats/openhands-completions.md``. With completion
logging on, OpenHands V0 writes ``<model>-<time>.json`` files
(``{messages, response, args, kwargs, timestamp, cost}``, plus
``fncall_messages`` / ``fncall_response`` under mock function calling) into
``llm_completions/<instance>/``; the V1 SDK writes
``<model>-<time>-<4 hex>.json`` (``context_window``, ``messages``, ``tools``,
``kwargs``, ``response``, ``cost``, ``timestamp``, ``latency_sec``,
``usage_summary``, ``raw_response``), ``instructions`` + ``input`` for
Responses-API models, and ``…-error.json`` for failed calls.

A session is one folder of such files. Files are found by content (other
JSON in the folder, e.g. ``openhands_output.json``, is left alone) and
ordered by the ``timestamp`` inside each file, then by name (the SDK's
``-<4 hex>`` suffix defeats a float-suffix sort).

Events unroll the conversation: the messages each call's request adds to
the previous one (system, user, tool results as observations paired by
``tool_call_id``), then the call itself: an assistant event whose ``raw`` is
the whole file, with every tool call of the response, its reasoning, and the
call's usage and cost.

Steps follow agent-eval's ``openhands_completions`` rule (CodeTraceBench's
``swe_raw`` OpenHands rows): the *view* is the file whose request messages
hold the most assistant tool calls not named ``finish`` (ties: the earliest
file); steps are those calls in message order, each with the ``role: tool``
message of the same ``tool_call_id`` in that view as its observation;
``execute_bash`` renders as its command, ``execute_ipython_cell`` as its
code, any other tool as ``name(<arguments JSON>)``; assistant text is the
thinking of its message's first step.

Diagnostic codes (see ``docs/diagnostics.md``): ``completions.no-calls``,
``completions.not-a-call``, ``completions.bad-field``,
``completions.no-response``, ``completions.call-error``,
``completions.no-timestamp``, ``completions.history-rewritten``,
``completions.unanswered-call``, ``completions.mock-fncall``.

Detection imports this module for every command, so it holds only the
:class:`~trajkit.registry.Format` (its tool table, sniff and folder walk are in
the light :mod:`.detect`); the reader (:mod:`.reader`) is imported on the
first read (``registry.lazy``; ``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from .detect import COMPLETION_TOOLS, FILE_NAME, NAME, find_sessions, sniff

FORMAT = Format(
    name=NAME,
    description="OpenHands LLM completion logs: one <model>-<time>[-<4 hex>].json per call (V0 llm_completions/, SDK log_completions_folder)",
    fingerprints=("*-[0-9]*.json",),
    priority=30,
    sniff=sniff,
    read=lazy("trajkit.formats.openhands_completions.reader:read"),
    find_sessions=find_sessions,
    summarize=lazy("trajkit.formats.openhands_completions.reader:summarize"),
    context=lazy("trajkit.formats.openhands_completions.reader:context"),
    model_calls=lazy("trajkit.formats.openhands_completions.reader:model_calls"),
    tools=COMPLETION_TOOLS,
    examples=tuple(
        str(Path(__file__).resolve().parent.parent / "fixtures" / NAME / d)
        for d in ("v0-instance", "v0-condensed", "v0-mockfn", "sdk-telemetry", "sdk-responses")
    ),
)


__all__ = ["FORMAT", "NAME", "COMPLETION_TOOLS", "FILE_NAME", "find_sessions", "sniff"]
