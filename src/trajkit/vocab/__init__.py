"""Tool tables: what each harness's tools do, declared once.

A harness names its tools its own way (OpenHands V0 ``run``, the SDK's
``TerminalAction``, opencode's ``bash``). A :class:`ToolTable` maps each name
to a :class:`ToolSpec`: the tool's :data:`~trajkit.model.TOOL_OPS` ``op``, which
argument holds the command / path / content / old / new text / URL, and how
the tool renders as a step when it renders as one argument. Readers describe
every :class:`~trajkit.model.ToolCall` they make with their harness's table
(:meth:`ToolTable.call`); step rendering and certify read the same facts, so
no consumer keeps a list of tool names.

Per-harness tables live in ``vocab/<harness>.py`` so that two storage formats
of one harness share them and no format module imports another. A name a
table does not declare is classified by its arguments (:func:`classify`):
a ``command`` string and no path is a shell command, a path is a file
operation, ``code`` a program, a patch text a patch, ``url`` a fetch.
"""

from __future__ import annotations

from typing import Any

from .._records import FrozenRecord, Record
from ..model import (
    CODE_OP, CONTROL_OP, EDIT_OP, FETCH_OP, FINISH_OP, MESSAGE_OP, OTHER_OP, PATCH_OP, READ_OP, SEARCH_OP, SHELL_OP,
    SPAWN_OP, THINK_OP, WRITE_OP, ToolCall,
)

#: Arguments that name the file a tool works on, most specific first.
PATH_ARGS = ("path", "file_path", "filePath", "filename", "absolute_path", "target_file", "notebook_path", "file")
#: Editor sub-commands that change the file (``str_replace_editor`` / ``file_editor`` vocabulary).
EDITOR_WRITE_COMMANDS = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "edit", "append", "delete"})
#: Names (any harness) that declare the task done.
FINISH_NAMES = frozenset({"finish", "submit", "attempt_completion", "task_complete"})
#: Names (lower case) of shell tools across harnesses, for calls no table declares.
SHELL_NAMES = frozenset({"bash", "execute_bash", "terminal", "shell", "exec_command", "run_command"})
#: Names (lower case) of file editors whose ``command`` is an editor sub-command, not a shell line.
EDITOR_NAMES = frozenset({"fileeditoraction", "planningfileeditoraction", "edit", "read", "write", "str_replace_editor", "file_editor"})
#: Names (lower case) of tools that read a file or list a directory.
READ_NAMES = frozenset({"read", "read_file", "view", "open_file", "glob", "grep", "list_directory", "ls"})
#: Names (lower case) of tools that list directories / find files by name (a listing, never a write).
LISTING_NAMES = frozenset({"list", "ls", "list_directory", "listdirectoryaction", "glob", "globaction"})
_WRITE_WORDS = ("write", "edit", "create", "replace", "insert", "patch", "delete", "remove")


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def mapping(arguments: Any) -> dict[str, Any]:
    """Call arguments as a mapping: decoded JSON text, ``{"_raw": value}`` for anything that is no mapping."""
    if isinstance(arguments, str):
        import orjson

        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return {"_raw": arguments}
    return arguments if isinstance(arguments, dict) else {"_raw": arguments}


def path_of(args: dict[str, Any]) -> str | None:
    """The first non-empty path-naming argument."""
    p = (args.get("path") or args.get("file_path") or args.get("filePath") or args.get("filename") or args.get("absolute_path")
         or args.get("target_file") or args.get("notebook_path") or args.get("file"))
    return p if isinstance(p, str) and p else None


def shell_text(args: dict[str, Any]) -> str:
    """The shell line of a shell tool's arguments (``command`` as text or argv, else ``cmd``)."""
    cmd = args.get("command")
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list):
        return " ".join(map(str, cmd))
    return str(args.get("cmd") or "")


def _is_patch(text: Any) -> bool:
    return isinstance(text, str) and ("*** Begin Patch" in text or text.startswith("--- ") or "\n+++ " in text or "diff --git" in text)


def file_op(name: str, args: dict[str, Any]) -> tuple[str, str | None]:
    """(op, content written) of a file tool call (one with a path), by the
    cross-harness editor rules: read tools, whole-file writes, editor
    sub-commands (``create`` / ``str_replace`` / ``view`` ...), editing
    tools, and listings / searches."""
    lname = name.lower()
    cmd = args.get("command")
    op, content = READ_OP, None
    if name in ("read", "ReadFileAction", "FileReadAction") or lname in READ_NAMES:
        op = READ_OP
    elif name in ("write", "WriteFileAction", "FileWriteAction", "create_file"):
        op, content = WRITE_OP, args.get("content") or args.get("file_text")
    elif isinstance(cmd, str):
        op = WRITE_OP if cmd == "create" else EDIT_OP if cmd in EDITOR_WRITE_COMMANDS else READ_OP
        content = args.get("file_text") if cmd == "create" else args.get("new_str") if cmd in ("str_replace", "insert") else None
        if name == "edit" and cmd == "" and args.get("content"):
            content = args.get("content")
    elif name in ("edit", "EditAction", "FileEditAction") or any(w in lname for w in _WRITE_WORDS):
        op = EDIT_OP
        content = args.get("new_str") or args.get("content") or args.get("file_text") or args.get("new_string") or args.get("newString")
    if "Grep" in name or "Glob" in name or lname in ("grep", "glob", "list", "ls", "list_directory", "listdirectoryaction"):
        op = READ_OP
    if op == READ_OP and lname in LISTING_NAMES:
        op = SEARCH_OP
    return op, _str(content)


def classify(name: str, args: dict[str, Any]) -> str:
    """The op of a call no table declares, from its name and argument shape."""
    lname = name.lower()
    if lname in FINISH_NAMES or name == "FinishAction":
        return FINISH_OP
    if lname == "think":
        return THINK_OP
    cmd = args.get("command")
    if lname in SHELL_NAMES or (isinstance(cmd, str) and lname not in EDITOR_NAMES and "path" not in args):
        return SHELL_OP
    if path_of(args):
        return file_op(name, args)[0]
    code = args.get("code")
    if isinstance(code, str) and code:
        return CODE_OP
    if _is_patch(args.get("patch") or args.get("input")):
        return PATCH_OP
    if (isinstance(args.get("url"), str) and args["url"]) or (isinstance(args.get("browser_actions"), str) and args["browser_actions"]):
        return FETCH_OP
    return OTHER_OP


#: The argument each op's facts need to be usable; a call declared with an
#: op whose argument is missing is classified by its arguments instead.
def _fits(op: str, args: dict[str, Any]) -> bool:
    if op in (READ_OP, WRITE_OP, EDIT_OP, SEARCH_OP):
        return path_of(args) is not None
    if op == CODE_OP:
        return isinstance(args.get("code"), str) and bool(args.get("code"))
    if op == PATCH_OP:
        return _is_patch(args.get("patch") or args.get("input"))
    if op == FETCH_OP:
        return bool(_str(args.get("url"))) or bool(_str(args.get("browser_actions")))
    return True


class ToolSpec(FrozenRecord):
    """One tool of one harness.

    ``name``: the tool / action name as the harness writes it. ``op``: a
    :data:`~trajkit.model.TOOL_OPS` value, or ``None`` when it depends on the
    arguments (an editor whose ``command`` says view or write: :func:`classify`
    decides). ``single``: the argument whose value is the tool's step
    rendering (``bash`` renders as its ``command``), None for the common
    ``name(args)`` rendering. ``mcp``: the tool relays a call to an MCP
    server tool named by its ``name`` argument, with its own arguments under
    ``data`` / ``arguments``; the value says what names it when that is
    missing (``call``: the call's name, ``action``: the action's name).
    """

    __slots__ = __match_args__ = ("name", "op", "single", "mcp")
    name: str
    op: str | None
    single: str | None
    mcp: str | None

    def __init__(self, name: str, op: str | None = None, single: str | None = None, mcp: str | None = None) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "op", op)
        _set(self, "single", single)
        _set(self, "mcp", mcp)

    def describe(self, call: ToolCall, action: str | None, input: Any) -> None:
        """Fill ``call``'s typed facts (op, action, input and the normalized arguments)."""
        name = action if action is not None else call.name
        if not isinstance(name, str):
            name = str(name)
        args = input if isinstance(input, dict) else mapping(call.arguments if input is None else input)
        op = self.op if self.op is not None and _fits(self.op, args) else classify(name, args)
        call.op = op
        call.action = name
        call.input = args
        fill(call, op, name, args)
        if self.mcp is not None and op == OTHER_OP:
            import orjson

            data = args.get("data") or args.get("arguments") or {}
            call.content = orjson.dumps(data, default=str).decode() if not isinstance(data, str) else data
            call.action = str(args.get("name") or (call.name if self.mcp == "call" else None) or name)


def fill(call: ToolCall, op: str, name: str, args: dict[str, Any]) -> None:
    """The normalized arguments of a call whose op is known."""
    if op == SHELL_OP:
        call.command = shell_text(args)
    elif op in (READ_OP, WRITE_OP, EDIT_OP, SEARCH_OP):
        call.path = path_of(args)
        call.content = file_op(name, args)[1]
        call.old = _str(args.get("old_str") or args.get("old_string") or args.get("oldString"))
        call.new = _str(args.get("new_str") or args.get("new_string") or args.get("newString"))
    elif op == CODE_OP:
        call.command = _str(args.get("code"))
    elif op == PATCH_OP:
        call.content = _str(args.get("patch") or args.get("input"))
    elif op == FETCH_OP:
        call.url = _str(args.get("url")) or None
        if call.url is None:
            call.content = _str(args.get("browser_actions"))
    elif op == FINISH_OP:
        call.content = str(args.get("message") or args.get("final_thought") or args.get("result") or "")


#: The spec of a name no table declares: everything from the arguments.
UNDECLARED = ToolSpec("*")


class ToolTable(Record):
    """A harness's tools by name (:class:`ToolSpec`), and the calls it
    describes. ``specs`` defaults to a new empty mapping."""

    __slots__ = __match_args__ = ("harness", "specs")
    harness: str
    specs: dict[str, ToolSpec]

    def __init__(self, harness: str, specs: dict[str, ToolSpec] | None = None) -> None:
        self.harness = harness
        self.specs = {} if specs is None else specs

    @classmethod
    def of(cls, harness: str, *specs: ToolSpec) -> "ToolTable":
        return cls(harness, {s.name: s for s in specs})

    def spec(self, name: Any) -> ToolSpec:
        return self.specs.get(name, UNDECLARED) if isinstance(name, str) else UNDECLARED

    def call(self, name: str, arguments: Any, call_id: str | None, *, lazy_json: bool = False,
             action: str | None = None, input: Any = None) -> ToolCall:
        """A :class:`ToolCall` whose typed facts this table fills on first use.
        ``action`` / ``input``: the executed action's own name and mapping
        when the harness records one apart from the call (its spec is looked
        up under ``action``)."""
        return ToolCall.described(self.spec(action if action is not None else name), name, arguments, call_id,
                                  lazy_json=lazy_json, action=action, input=input)

    def single_argument(self) -> dict[str, str]:
        """``{tool name: argument}`` for the tools that render as one argument."""
        return {s.name: s.single for s in self.specs.values() if s.single}


__all__ = [
    "ToolSpec", "ToolTable", "UNDECLARED", "classify", "file_op", "fill", "mapping", "path_of", "shell_text",
    "PATH_ARGS", "EDITOR_WRITE_COMMANDS", "FINISH_NAMES", "SHELL_NAMES", "READ_NAMES", "LISTING_NAMES",
    "CODE_OP", "CONTROL_OP", "EDIT_OP", "FETCH_OP", "FINISH_OP", "MESSAGE_OP", "OTHER_OP", "PATCH_OP", "READ_OP",
    "SEARCH_OP", "SHELL_OP", "SPAWN_OP", "THINK_OP", "WRITE_OP",
]
