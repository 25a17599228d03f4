"""OpenAI Codex CLI's tools (rollout ``function_call`` / ``custom_tool_call``
names and the ``codex exec --json`` item types).

Shell tools render as their command line (``shell`` takes an argv list,
``shell_command`` a string, ``exec_command`` a ``cmd``); ``apply_patch`` is a
patch whose text is the call's ``input`` (free-form tool) or ``patch`` /
``input`` argument. Names not listed are classified by their arguments
(:func:`trajkit.vocab.classify`).
"""

from __future__ import annotations

from . import CONTROL_OP, FETCH_OP, OTHER_OP, PATCH_OP, READ_OP, SEARCH_OP, SHELL_OP, SPAWN_OP, ToolSpec, ToolTable

CODEX_TOOLS = ToolTable.of(
    "codex",
    ToolSpec("shell", SHELL_OP, single="command"),
    ToolSpec("container.exec", SHELL_OP, single="command"),
    ToolSpec("shell_command", SHELL_OP, single="command"),
    ToolSpec("exec_command", SHELL_OP, single="cmd"),
    ToolSpec("local_shell", SHELL_OP, single="command"),
    ToolSpec("command_execution", SHELL_OP, single="command"),  # exec --json item
    ToolSpec("write_stdin", OTHER_OP),  # input to a running process: no command of its own
    ToolSpec("apply_patch", PATCH_OP),
    ToolSpec("file_change", OTHER_OP),  # exec --json item: the changed paths, no patch text
    ToolSpec("update_plan", CONTROL_OP),
    ToolSpec("view_image", READ_OP),
    ToolSpec("read_file", READ_OP),
    ToolSpec("list_dir", SEARCH_OP),
    ToolSpec("grep_files", READ_OP),
    ToolSpec("web_search", FETCH_OP),
    ToolSpec("tool_search", OTHER_OP),
    ToolSpec("spawn_agent", SPAWN_OP),
    ToolSpec("send_input", CONTROL_OP),
    ToolSpec("wait", CONTROL_OP),
    ToolSpec("close_agent", CONTROL_OP),
)
