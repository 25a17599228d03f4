"""opencode's tools (its native sessions and the rollout traces captured from it call them alike).

``bash`` renders as its command and ``think`` as its thought; the rest render
as ``name(args)``. Tools whose op depends on their arguments (``edit``) or that
are not listed here are classified by :func:`trajkit.vocab.classify`.
``task`` starts a sub-agent session (its result names the child's
``sessionId``); ``todowrite`` / ``todoread`` keep the agent's plan.
"""

from __future__ import annotations

from . import CONTROL_OP, FETCH_OP, MESSAGE_OP, READ_OP, SEARCH_OP, SHELL_OP, SPAWN_OP, THINK_OP, WRITE_OP, ToolSpec, ToolTable

OPENCODE_TOOLS = ToolTable.of(
    "opencode",
    ToolSpec("bash", SHELL_OP, single="command"),
    ToolSpec("think", THINK_OP, single="thought"),
    ToolSpec("read", READ_OP),
    ToolSpec("write", WRITE_OP),
    ToolSpec("edit", None),
    ToolSpec("multiedit", None),
    ToolSpec("grep", READ_OP),  # a content search reads the files
    ToolSpec("glob", SEARCH_OP),
    ToolSpec("list", SEARCH_OP),
    ToolSpec("webfetch", FETCH_OP),
    ToolSpec("task", SPAWN_OP),
    ToolSpec("todowrite", CONTROL_OP),
    ToolSpec("todoread", CONTROL_OP),
    ToolSpec("question", MESSAGE_OP),
)
