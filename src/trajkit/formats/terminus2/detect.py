"""Recognising the format's files (imported by detection; kept free of the reader)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, Match, Reject
from ...vocab import FINISH_OP, SHELL_OP, ToolSpec, ToolTable

NAME = "terminus2"

#: Terminus's two tools, as Harbor's native Terminus-2 ATIF names them: one
#: ``bash_command`` per command (it renders as its keystrokes) and
#: ``mark_task_complete`` for ``task_complete: true``.
TERMINUS_TOOLS = ToolTable.of(
    "terminus",
    ToolSpec("bash_command", SHELL_OP, single="keystrokes"),
    ToolSpec("mark_task_complete", FINISH_OP),
)

EPISODE = re.compile(r"^episode-(\d+)$")
LOGS = "agent-logs"
#: Trial files and folders beside ``agent-logs/`` (terminal-bench ``TrialHandler``).
TRIAL_FILES = {"results.json": "results", "commands.txt": "keystrokes"}
TRIAL_DIRS = {"panes": "pane", "sessions": "recording"}


# ---------------------------------------------------------------- detection


def _episodes(probe: Probe, logs: Path | str) -> list[tuple[int, str]]:
    """The ``episode-<N>`` folders of ``logs``, in numeric order."""
    out = []
    for name in probe.scan(logs)[0]:
        m = EPISODE.match(name)
        if m:
            out.append((int(m.group(1)), name))
    out.sort()
    return out


def _has_response(probe: Probe, logs: Path) -> bool:
    base = str(logs) + os.sep
    dirs = probe.scan(base[:-1])[0]
    for name in sorted(dirs, key=lambda n: (len(n), n)):  # episode-0 first: usually one listing answers
        if EPISODE.match(name):
            files = probe.scan(base + name)[1]
            if "response.txt" in files or "response.json" in files:
                return True
    return False


def locate(probe: Probe, path: Path) -> tuple[Path, Path] | None:
    """``(root, logs)`` for a path that is, or is inside, a Terminus trial:
    the trial folder around ``agent-logs/`` (or a bare folder of episodes)
    and the folder holding the episodes; None when there is none."""
    if probe.is_file(path):
        path = path.parent
    elif not probe.is_dir(path):
        return None
    name = path.name
    if EPISODE.match(name):
        logs = path.parent
    elif name == LOGS:
        logs = path
    elif name in TRIAL_DIRS and probe.is_dir(path.parent / LOGS):
        logs = path.parent / LOGS
    elif probe.is_dir(os.path.join(probe.fspath(path), LOGS)):  # a string: most folders have none, no Path for the ask
        logs = path / LOGS
    else:
        logs = path
    if not _has_response(probe, logs):
        return None
    return (logs.parent if logs.name == LOGS else logs), logs


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    found = locate(probe, candidate)
    if found is None:
        return Reject("no episode-<N>/ folder holding response.txt or response.json")
    root, logs = found
    return Match(root, fingerprint, STRONG, f"{os.path.relpath(logs, root) if logs != root else '.'}/episode-<N>/ folders with Terminus responses",
                 hint=(root, logs))
