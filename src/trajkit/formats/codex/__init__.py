"""OpenAI Codex CLI records: rollout JSONL files and ``codex exec --json``
event streams (format name ``codex``; see ``shared/formats/codex.md``).

A **rollout** (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) is one
``{timestamp, type, payload}`` object a line: ``session_meta``,
``turn_context``, ``response_item`` (messages, reasoning, tool calls and their
outputs), ``event_msg`` (UI events; ``token_count`` holds running usage
totals) and ``compacted``. Early Rust rollouts (a bare meta line, raw items,
``record_type: state`` lines) read too. An **exec stream** is what
``codex exec --json`` prints: ``thread.started``, ``turn.started``,
``item.*``, ``turn.completed`` (with the turn's usage), ``turn.failed``,
``error``; and the older ``{id, msg}`` form.

Every line becomes one event (id ``L<line>``); an exec item that holds a call
and its result also gives an observation event (``L<line>/output``). Steps:
one per tool call (``function_call``, ``custom_tool_call``,
``local_shell_call``, ``web_search_call``, ``tool_search_call``; exec
``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search``,
``collab_tool_call``) with the output paired by ``call_id``: a reused
``call_id`` is re-minted ``<id>__<n>`` and each output answers the oldest
unanswered call of its id; a call never answered is a step with an empty
observation. One model response is the model items between two effective
``token_count`` events (a turn boundary when the file has none; one turn in
an exec stream); its usage (``last_token_usage``, else the difference of the
running totals; a repeated total is dropped) sits on its first event.

Sub-agent threads are linked only from the child (``parent_thread_id``):
reading a rollout looks for rollouts beside it (its day folder and the next)
whose ``session_meta`` names it as parent, reads them as sub-sessions and ties
each to the ``spawn_agent`` call whose output names the child's thread id
(``SpawnLink.method`` ``output-names-thread``), else to the n-th
``spawn_agent`` call (``spawn-order``).

Diagnostic codes (see ``docs/diagnostics.md``): ``codex.line-not-object``,
``codex.unknown-line-type``, ``codex.payload-missing``, ``codex.no-records``,
``codex.duplicate-call-id``, ``codex.duplicate-output``, ``codex.orphan-output``,
``codex.arguments-not-json``, ``codex.arguments-missing``,
``codex.token-count-repeat``, ``codex.token-count-empty``,
``codex.meta-repeated``, ``codex.compressed``, ``codex.subagent-unlinked``,
``codex.subagent-depth``, ``codex.unreadable-dir``, plus the JSON Lines codes of
:mod:`trajkit.reading.io`.
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.codex import CODEX_TOOLS
from .detect import NAME, sniff

_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="OpenAI Codex CLI: rollout JSONL (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) and codex exec --json event streams",
    fingerprints=("rollout-*.jsonl", "rollout-*.jsonl.zst", "rollout-*.json", "*.jsonl"),
    priority=45,
    sniff=sniff,
    read=lazy("trajkit.formats.codex.reader:read"),
    find_sessions=lazy("trajkit.formats.codex.finding:find_sessions"),
    summarize=lazy("trajkit.formats.codex.reader:summarize"),
    context=lazy("trajkit.formats.codex.reader:context"),
    tools=CODEX_TOOLS,
    homes=("${CODEX_HOME:-~/.codex}/sessions", "${CODEX_HOME:-~/.codex}/archived_sessions"),
    examples=(
        str(_FIXTURES / "sessions" / "2026" / "04" / "01" / "rollout-2026-04-01T08-00-00-5f0c2a4e-1b7d-4c1e-9a53-0d2f3b6c7a10.jsonl"),
        str(_FIXTURES / "codex-rollout.jsonl"),
        str(_FIXTURES / "codex-exec.jsonl"),
    ),
)
