"""SWE-agent's commands (0.x text commands and 1.x tool bundles) and
mini-swe-agent's one tool.

SWE-agent 0.x parses one command out of the model's text (``open <path>``,
``edit 4:4\\n...\\nend_of_edit``, ``submit``, or any shell line); 1.x gives the
same commands as function-calling tools (``find_file``, ``open``, ``edit``,
``str_replace_editor``, ``bash``, ``submit``). :func:`parse_command` turns a
text command into the tool name and argument mapping the table describes, so
certify sees a read, an edit or a shell line, not an opaque string.
"""

from __future__ import annotations

import shlex
from typing import Any

from .._records import FrozenRecord
from ..model import ToolCall
from . import EDIT_OP, FINISH_OP, READ_OP, SEARCH_OP, SHELL_OP, WRITE_OP, ToolSpec, ToolTable

SWE_AGENT_TOOLS = ToolTable.of(
    "swe-agent",
    ToolSpec("bash", SHELL_OP, single="command"),
    ToolSpec("open", READ_OP),
    ToolSpec("create", WRITE_OP),
    ToolSpec("edit", EDIT_OP),
    ToolSpec("insert", EDIT_OP),
    ToolSpec("find_file", SEARCH_OP),
    ToolSpec("search_dir", READ_OP),  # a content search reads the files
    ToolSpec("search_file", READ_OP),
    ToolSpec("str_replace_editor", None),  # view / create / str_replace / insert: decided by ``command``
    ToolSpec("submit", FINISH_OP),
)

#: mini-swe-agent runs one tool: a shell command (text mode: the fenced block; v2: the ``bash`` tool).
MINI_SWE_AGENT_TOOLS = ToolTable.of("mini-swe-agent", ToolSpec("bash", SHELL_OP, single="command"))

#: Text commands SWE-agent's own tools define (anything else is a shell line).
_COMMANDS = frozenset({
    "open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "find_file", "search_dir", "search_file",
    "str_replace_editor", "submit", "filemap", "exit_forfeit",
})


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: split on blanks
        return text.split()


def parse_command(action: str, open_file: str | None = None) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of a SWE-agent text command.

    ``open_file`` is the file the editor had open (the entry's ``state``):
    ``edit`` / ``insert`` / ``goto`` act on it. A first word that is no
    SWE-agent command makes the whole text a ``bash`` command.
    """
    first_line, _, body = action.lstrip().partition("\n")
    words = _words(first_line)
    name = words[0] if words else ""
    if name not in _COMMANDS:
        return "bash", {"command": action}
    args: dict[str, Any] = {}
    rest = words[1:]
    if name == "open" and rest:
        args["path"] = rest[0]
        if len(rest) > 1:
            args["line_number"] = rest[1]
    elif name == "create" and rest:
        args["path"] = rest[0]
    elif name in ("edit", "insert"):
        if rest:
            args["range" if name == "edit" else "line"] = " ".join(rest)
        if body:
            text = body.rstrip()
            if text.endswith("end_of_edit"):
                text = text[: -len("end_of_edit")].rstrip("\n")
            args["new_str"] = text
        if open_file and open_file != "n/a":
            args["path"] = open_file
    elif name == "find_file" and rest:
        args["file_name"] = rest[0]
        if len(rest) > 1:
            args["path"] = rest[1]
    elif name in ("search_dir", "search_file") and rest:
        args["search_term"] = rest[0]
        if len(rest) > 1:
            args["path"] = rest[1]
        elif name == "search_file" and open_file and open_file != "n/a":
            args["path"] = open_file
    elif name == "str_replace_editor" and rest:
        args["command"] = rest[0]
        if len(rest) > 1:
            args["path"] = rest[1]
    elif name in ("goto", "scroll_up", "scroll_down") and open_file and open_file != "n/a":
        args["path"] = open_file
    if not args and rest:
        args["args"] = rest
    return name, args


def command_name(action: str) -> str:
    """The tool a SWE-agent text command runs: its first word when that is one
    of SWE-agent's own commands, else ``bash``."""
    words = action.split(None, 1)
    return words[0] if words and words[0] in _COMMANDS else "bash"


class TextCommand(FrozenRecord):
    """The spec of a text command's :class:`~trajkit.model.ToolCall`: its
    arguments are parsed (:func:`parse_command`) only when a consumer first
    reads the call's typed facts, then described by the command's own spec."""

    __slots__ = __match_args__ = ("action", "open_file")
    action: str
    open_file: str | None

    def __init__(self, action: str, open_file: str | None = None) -> None:
        _set = object.__setattr__
        _set(self, "action", action)
        _set(self, "open_file", open_file)

    def describe(self, call: ToolCall, action: str | None, input: Any) -> None:
        name, args = parse_command(self.action, self.open_file)
        SWE_AGENT_TOOLS.spec(name).describe(call, name, args)


def text_call(action: str, call_id: str, open_file: str | None = None) -> ToolCall:
    """The call a SWE-agent text command makes: named by :func:`command_name`,
    ``{"command": action}`` as its arguments, typed facts from the parsed command."""
    return ToolCall.described(TextCommand(action, open_file), command_name(action), {"command": action}, call_id)
