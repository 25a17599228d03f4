"""Recognising the format's files (imported by detection; kept free of the reader)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from ...reading import tree
from ...reading.probe import Probe
from ...registry import STRONG, Match, Reject
from ...vocab import CODE_OP, CONTROL_OP, FETCH_OP, FINISH_OP, SHELL_OP, THINK_OP, ToolSpec, ToolTable

NAME = "openhands-completions"

#: The tools OpenHands gives the model (V0 function-calling names and the
#: SDK's tool names). ``single``: the benchmark rule renders ``execute_bash``
#: as its command and ``execute_ipython_cell`` as its code, nothing else.
COMPLETION_TOOLS = ToolTable.of(
    "openhands",
    ToolSpec("execute_bash", SHELL_OP, single="command"),
    ToolSpec("execute_ipython_cell", CODE_OP, single="code"),
    ToolSpec("str_replace_editor", None),
    ToolSpec("edit_file", None),
    ToolSpec("browser", FETCH_OP),
    ToolSpec("web_read", FETCH_OP),
    ToolSpec("think", THINK_OP),
    ToolSpec("finish", FINISH_OP),
    ToolSpec("terminal", SHELL_OP),
    ToolSpec("file_editor", None),
    ToolSpec("task_tracker", CONTROL_OP),
)

#: ``<model>-<unix time>[-<4 hex>][-error].json`` (V0 and SDK log names).
FILE_NAME = re.compile(r"^(?P<model>.+)-(?P<ts>\d+(?:\.\d+)?)(?:-(?P<hex>[0-9a-f]{4}))?(?P<error>-error)?\.json$")
_HEAD = 1 << 12
#: What every name :data:`FILE_NAME` matches ends with (``-<time>[-<4 hex>][-error].json`` after at
#: least one character), written backwards: searched in a folder's names joined with NUL and reversed,
#: it starts with a literal the search skips to. Found means "maybe" (the names are then matched one
#: by one); not found means no name of the folder matches.
_MAYBE_NAMED = re.compile(r"nosj\.(?:rorre-)?(?:[0-9a-f]{4}-)?(?:\d+\.)?\d+-[^\0\n]")


# ---------------------------------------------------------------- detection


_FIRST_KEY = re.compile(rb'^\{\s*"(?:messages|context_window|instructions|input|fncall_messages)"\s*:')


def _looks_like_call(probe: Probe, path: str | Path) -> bool:
    """The loggers write the request first (V0 ``messages``, the SDK
    ``context_window``); a re-serialized file still names both sides early."""
    head = probe.head(path, _HEAD).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] != b"{":
        return False
    return _FIRST_KEY.match(head) is not None or (b'"messages"' in head and b'"response"' in head)


def _first_call(probe: Probe, folder: str, names: Iterable[str]) -> str | None:
    """The first of ``names`` (a folder's, sorted) that is a completion log:
    a file named like one that starts like one. (A name is matched only once
    it ends in ``.json``: the pattern backtracks over every name it is given.)"""
    for n in names:
        if n.endswith(".json") and FILE_NAME.match(n):
            f = os.path.join(folder, n)
            if probe.is_file(f) and _looks_like_call(probe, f):
                return n
    return None


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    if probe.is_file(candidate):
        if not FILE_NAME.match(candidate.name):
            return Reject("not named <model>-<time>[-<4 hex>].json")
        if _looks_like_call(probe, candidate):
            return Match(candidate.parent, fingerprint, STRONG, f"{candidate.name} is an LLM completion log")
        return Reject(f"{candidate.name} does not start like a completion log (messages / input / context_window)")
    n = _first_call(probe, str(candidate), sorted(probe.listdir(candidate) or ()))
    if n is not None:
        return Match(candidate, fingerprint, STRONG, f"a folder of LLM completion logs ({n}, ...)")
    return Reject("no <model>-<time>[-<4 hex>].json completion log here")


def find_sessions(root: Any, diagnostics: list | None = None) -> list[Path]:
    """The folders of completion logs at or under ``root`` (a V0
    ``llm_completions/`` holds one per instance)."""
    probe = Probe()
    root = Path(root)
    if probe.is_file(root):
        root = root.parent
    out = []
    top = os.fspath(root)
    base = len(top.rstrip(os.sep))
    for dirpath, dirnames, files in tree.walk_sorted(top):  # each folder's names come sorted
        if dirnames:
            # four levels below the root at most (counted on the path string: no Path per folder)
            dirnames[:] = [d for d in dirnames if d[0] != "."] if dirpath == top or dirpath.count(os.sep, base) < 4 else []
        if files and _MAYBE_NAMED.search("\0".join(files)[::-1]) is not None and _first_call(probe, dirpath, files) is not None:
            # the folder's sniff, from the walk's sorted listing (after one search for a name it could take)
            out.append(Path(dirpath))
        probe.drop_heads()  # the folder is decided: a walk of a big tree must not keep every file's head
    return out
