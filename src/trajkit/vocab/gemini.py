"""Gemini CLI's tools (``toolCalls[].name`` in its session files).

``run_shell_command`` renders as its command; the file tools name their file
in ``file_path`` / ``absolute_path`` / ``path``. Names not listed are
classified by their arguments (:func:`trajkit.vocab.classify`).
"""

from __future__ import annotations

from . import CONTROL_OP, EDIT_OP, FETCH_OP, OTHER_OP, READ_OP, SEARCH_OP, SHELL_OP, SPAWN_OP, WRITE_OP, ToolSpec, ToolTable

GEMINI_TOOLS = ToolTable.of(
    "gemini-cli",
    ToolSpec("run_shell_command", SHELL_OP, single="command"),
    ToolSpec("read_file", READ_OP),
    ToolSpec("read_many_files", READ_OP),
    ToolSpec("write_file", WRITE_OP),
    ToolSpec("replace", EDIT_OP),
    ToolSpec("edit", EDIT_OP),
    ToolSpec("glob", SEARCH_OP),
    ToolSpec("list_directory", SEARCH_OP),
    ToolSpec("search_file_content", READ_OP),
    ToolSpec("grep", READ_OP),
    ToolSpec("web_fetch", FETCH_OP),
    ToolSpec("google_web_search", OTHER_OP),
    ToolSpec("save_memory", CONTROL_OP),
    ToolSpec("write_todos", CONTROL_OP),
    ToolSpec("delegate_to_agent", SPAWN_OP),
)
