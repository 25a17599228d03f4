"""OpenHands evaluation outputs (``openhands-eval``) and OpenHands Cloud
conversation exports (``openhands-cloud``).

**Evaluation output.** OpenHands' evaluation harness (``evaluation/`` of
OpenHands V0, and the SDK-based ``OpenHands/benchmarks``) writes
``output.jsonl``: one ``EvalOutput`` record per line, ``instance_id``,
``instruction``, ``history``, ``test_result``, ``metrics``, ``error``, and
often ``metadata``, ``instance``, ``attempt``. ``history`` holds V0 events
(``event_to_dict``: integer ids, ``action`` / ``observation``) in older
runs, or, older still, ``[action, observation]`` pairs; SDK events
(``kind``, string ids) in newer ones. The file is a *container*: each
record is a session, addressed ``output.jsonl#<instance_id>`` (a second
record for the same instance is ``<instance_id>@<attempt>``, or
``<instance_id>~<n>`` without an attempt; a record with no usable
``instance_id`` is ``line-<N>``).

The history goes through the V0 reader's pipeline
(:func:`trajkit.formats.openhands_v0.from_events`) or the SDK reader's
(:func:`trajkit.formats.openhands_sdk.reader.ingest_events`): the same
pairing, steps, usage and end signal as the same events laid out as a trial
or conversation directory. The record adds what a directory does not have:
``metrics`` (usage per response for SDK histories, the run's cost),
``test_result`` (the harness's grading, SWE-bench's ``report.resolved``:
certify's gate, as a :class:`~trajkit.model.TrialResult` of kind
``eval-test-result``) and ``error`` (the harness's own word on how the run
ended, which outranks the stream's).

**Cloud export.** ``{"conversation": {...}, "events": [...]}`` (with
``exported_at`` / ``base_url``): a conversation's details and its event list
as the OpenHands Cloud API serves them (``GET /api/conversations/{id}`` and
``/events``). The events are V0 or SDK events, read the same way.

Diagnostic codes: ``eval.empty``, ``eval.no-member``, ``eval.not-object``, ``eval.bad-line``,
``eval.truncated-line``, ``eval.no-instance-id``, ``eval.duplicate-instance``,
``eval.history-missing``, ``eval.history-not-list``, ``eval.history-empty``,
``eval.history-item-not-object``, ``eval.history-mixed``,
``eval.history-pairs``, ``eval.changed``,
``eval.bad-field``, ``cloud.not-object``, ``cloud.events-missing``,
``cloud.events-not-list``.

Detection imports this module for every command, so it holds only the two
:class:`~trajkit.registry.Format` objects (their sniffs are in the light
:mod:`.detect`); the record index (:mod:`.index`, which ``find_sessions`` and
``members`` use) and the reader (:mod:`.reader`) are imported on first use
(``registry.lazy``; ``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.openhands import SDK_TOOLS, V0_TOOLS
from .detect import CLOUD_NAME, NAME, looks_like_cloud, looks_like_output, sniff, sniff_cloud

_HERE = Path(__file__).parent.parent / "fixtures"

FORMAT = Format(
    name=NAME,
    description="OpenHands evaluation output.jsonl: one EvalOutput record per instance (V0 or SDK history), addressed FILE#INSTANCE",
    fingerprints=("*.jsonl",),
    priority=45,
    sniff=sniff,
    read=lazy("trajkit.formats.openhands_eval.reader:read"),
    members=lazy("trajkit.formats.openhands_eval.index:members"),
    find_sessions=lazy("trajkit.formats.openhands_eval.index:find_sessions"),
    summarize=lazy("trajkit.formats.openhands_eval.reader:summarize"),
    context=lazy("trajkit.formats.openhands_eval.reader:context"),
    tools=V0_TOOLS,
    examples=(str(_HERE / NAME / "v0" / "output.jsonl"), str(_HERE / NAME / "sdk" / "output.jsonl")),
)

CLOUD_FORMAT = Format(
    name=CLOUD_NAME,
    description="OpenHands Cloud conversation export: {conversation, events} (V0 or SDK events)",
    fingerprints=("*.json",),
    priority=45,
    sniff=sniff_cloud,
    read=lazy("trajkit.formats.openhands_eval.reader:read_cloud"),
    context=lazy("trajkit.formats.openhands_eval.reader:context"),
    tools=SDK_TOOLS,
    examples=(str(_HERE / CLOUD_NAME / "sdk-conversation.json"), str(_HERE / CLOUD_NAME / "v0-conversation.json")),
)


__all__ = ["FORMAT", "CLOUD_FORMAT", "NAME", "CLOUD_NAME", "looks_like_cloud", "looks_like_output", "sniff", "sniff_cloud"]
