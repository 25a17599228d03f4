"""Gemini CLI session files (format name ``gemini-cli``; see
``shared/formats/gemini-cli.md``).

Two shapes, told apart by content: the **legacy** whole-JSON session
(``~/.gemini/tmp/<project>/chats/session-*.json``: ``sessionId``,
``projectHash``, ``messages[]``), and the **JSONL log** (v0.39+), which is
**replayed** as the CLI replays it: a metadata line, message records upserted
by ``id`` (a new id is appended, a known id replaced in its first position),
``{"$set": ...}`` metadata patches (``$set.messages`` is a checkpoint: the
message list is replaced), and ``{"$rewindTo": id}`` (the named message and
everything after it leave the conversation; an id the log does not know
empties it). Blank and undecodable lines are skipped, as the CLI skips them.

Every message of the replay becomes an event with its id (its last version;
``extra.lines`` lists every line that wrote it); rewound messages stay as
events on an abandoned branch (``Event.branch``, ``parent_id`` chain), a
checkpoint that drops messages is a condensation event. Each tool call with
an inline ``result`` gives an observation event ``<message id>/<call id>``.
Metadata lines, ``$set`` and ``$rewindTo`` lines are counted in
``metadata.replay``.

Steps: one per ``toolCalls[]`` entry of every message not rewound, with its
inline ``functionResponse`` as the observation (a call with no result is a
pending step with an empty observation). Usage: one per ``gemini`` message
(its final ``tokens``; ``input`` includes ``tokens.tool``).

Sub-agent sessions (``chats/<parent session id>/<id>.jsonl``, ``kind:
subagent``) are read as sub-sessions of the session whose id names their
folder, tied to the call whose ``agentId`` names them (``SpawnLink.method``
``agent-id``), else to the n-th spawning call (``spawn-order``).

Diagnostic codes (see ``docs/diagnostics.md``): ``gemini.not-a-session``,
``gemini.line-not-object``, ``gemini.unknown-line``, ``gemini.rewind-unknown-id``,
``gemini.message-not-object``, ``gemini.unknown-message-type``,
``gemini.duplicate-message-id``, ``gemini.duplicate-call-id``,
``gemini.subagent-unlinked``, ``gemini.subagent-depth``, ``gemini.unreadable-dir``, plus those of :mod:`trajkit.reading.io`.
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.gemini import GEMINI_TOOLS
from .detect import NAME, sniff

_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="Gemini CLI sessions: legacy whole-JSON chats and the v0.39+ JSONL log (~/.gemini/tmp/<project>/chats/)",
    fingerprints=("session-*.jsonl", "session-*.json", "*.jsonl", "*.json"),
    priority=44,
    sniff=sniff,
    read=lazy("trajkit.formats.gemini_cli.reader:read"),
    find_sessions=lazy("trajkit.formats.gemini_cli.finding:find_sessions"),
    summarize=lazy("trajkit.formats.gemini_cli.reader:summarize"),
    context=lazy("trajkit.formats.gemini_cli.reader:context"),
    tools=GEMINI_TOOLS,
    homes=("~/.gemini/tmp",),
    examples=(
        str(_FIXTURES / "tmp" / "demo-project" / "chats" / "session-2026-05-02T09-15-7c1d2e3f.jsonl"),
        str(_FIXTURES / "tool_calls_with_results.json"),
    ),
)
