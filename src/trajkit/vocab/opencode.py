"""opencode's tools (as rollout traces captured from opencode call them).

``bash`` renders as its command and ``think`` as its thought; the rest render
as ``name(args)``. Tools whose op depends on their arguments (``edit``) or that
are not listed here are classified by :func:`trajkit.vocab.classify`.
"""

from __future__ import annotations

from . import FETCH_OP, READ_OP, SEARCH_OP, SHELL_OP, THINK_OP, WRITE_OP, ToolSpec, ToolTable

OPENCODE_TOOLS = ToolTable.of(
    "opencode",
    ToolSpec("bash", SHELL_OP, single="command"),
    ToolSpec("think", THINK_OP, single="thought"),
    ToolSpec("read", READ_OP),
    ToolSpec("write", WRITE_OP),
    ToolSpec("edit", None),
    ToolSpec("grep", READ_OP),  # a content search reads the files
    ToolSpec("glob", SEARCH_OP),
    ToolSpec("list", SEARCH_OP),
    ToolSpec("webfetch", FETCH_OP),
)
