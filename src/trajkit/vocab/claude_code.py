"""Claude Code's tools, as its transcripts and stream-json logs name them.

``Bash`` renders as its command; the rest render as ``name(args)``. ``Task``
and ``Agent`` (the same tool under its older and newer name) and
``Workflow`` start sub-agents (``spawn``); ``StructuredOutput`` is how a
workflow agent hands back its answer (``finish``). Tools not listed here
(MCP tools ``mcp__<server>__<tool>``, new releases' tools) are classified
by :func:`trajkit.vocab.classify`.
"""

from __future__ import annotations

from . import (
    CONTROL_OP,
    EDIT_OP,
    FETCH_OP,
    FINISH_OP,
    MESSAGE_OP,
    OTHER_OP,
    READ_OP,
    SEARCH_OP,
    SHELL_OP,
    SPAWN_OP,
    WRITE_OP,
    ToolSpec,
    ToolTable,
)

CLAUDE_CODE_TOOLS = ToolTable.of(
    "claude-code",
    ToolSpec("Bash", SHELL_OP, single="command"),
    ToolSpec("BashOutput", CONTROL_OP),
    ToolSpec("KillShell", CONTROL_OP),
    ToolSpec("KillBash", CONTROL_OP),
    ToolSpec("Read", READ_OP),
    ToolSpec("NotebookRead", READ_OP),
    ToolSpec("Write", WRITE_OP),
    ToolSpec("Edit", EDIT_OP),
    ToolSpec("MultiEdit", EDIT_OP),
    ToolSpec("NotebookEdit", EDIT_OP),
    ToolSpec("Grep", READ_OP),  # a content search reads the files
    ToolSpec("Glob", SEARCH_OP),
    ToolSpec("LS", SEARCH_OP),
    ToolSpec("WebFetch", FETCH_OP),
    ToolSpec("WebSearch", OTHER_OP),
    ToolSpec("Task", SPAWN_OP),
    ToolSpec("Agent", SPAWN_OP),
    ToolSpec("Workflow", SPAWN_OP),
    ToolSpec("TaskOutput", CONTROL_OP),
    ToolSpec("TaskStop", CONTROL_OP),
    ToolSpec("TodoWrite", CONTROL_OP),
    ToolSpec("TodoRead", CONTROL_OP),
    ToolSpec("EnterPlanMode", CONTROL_OP),
    ToolSpec("ExitPlanMode", MESSAGE_OP),
    ToolSpec("AskUserQuestion", MESSAGE_OP),
    ToolSpec("SendMessage", MESSAGE_OP),
    ToolSpec("StructuredOutput", FINISH_OP),
    ToolSpec("Skill", OTHER_OP),
    ToolSpec("SlashCommand", OTHER_OP),
)
