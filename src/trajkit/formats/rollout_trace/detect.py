"""Which paths are rollout traces (format ``rollout-trace``): the trace
file names and the sniff. Light on purpose: detection imports it for every
command (see the package docstring)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Match, Reject

NAME = "rollout-trace"

#: Trace file names a rollout directory may hold, in the order they are preferred.
TRACE_NAMES = ("trace.jsonl", "trace.json", "proxy_trace.jsonl", "proxy_trace.json")
#: Other files a rollout directory may hold, and their role.
SIDECARS = {
    "task.json": "task",
    "summary.json": "summary",
    "visible_tests.txt": "visible_tests",
    "held_out_tests.json": "held_out_tests",
    "turns.json": "derived",
    "turns.jsonl": "derived",
    "proxy.json": "proxy",
    "opencode.jsonl": "agent_events",
}

_HEAD_BYTES = 1 << 16


# ---------------------------------------------------------------- detection


def looks_like_trace(path: Path | str, probe: Probe | None = None) -> bool:
    """Whether a file's first bytes look like a rollout trace (records with a request)."""
    head = (probe or Probe()).head(path, _HEAD_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head[:1] in (b"{", b"["):
        return False
    return b'"request"' in head and (b'"response"' in head or b'"turn"' in head)


def trace_file_in(directory: Path, probe: Probe | None = None) -> Path | None:
    """The trace file a rollout directory holds, if any."""
    probe = probe or Probe()
    names = probe.listdir(directory)
    if not names:
        return None
    base = str(directory) + os.sep
    for name in TRACE_NAMES:
        if name in names and probe.is_file(base + name):
            return directory / name
    for pattern in ("proxy_trace*.jsonl", "proxy_trace*.json"):
        extra = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))
        if extra:
            return directory / extra[0]
    return None


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    if probe.is_file(candidate):
        if looks_like_trace(candidate, probe):
            return Match(candidate, fingerprint, STRONG, f"{candidate.name} holds captured model-call records")
        return Reject(f"{candidate.name} does not start like captured model-call records")
    trace = trace_file_in(candidate, probe)
    if trace is None:
        return Reject("no trace file (trace.json[l] or proxy_trace*.json[l]) here")
    if not looks_like_trace(trace, probe):
        if trace.name in TRACE_NAMES:
            # Named like a trace but empty, cut or damaged: still a rollout
            # directory, so the reader can say what is wrong with it.
            return Match(candidate, fingerprint, WEAK, f"{trace.name} is named like a trace but does not start like one")
        return Reject(f"{trace.name} does not start like captured model-call records")
    strength = STRONG if trace.name in TRACE_NAMES else WEAK
    return Match(candidate, fingerprint, strength, f"{trace.name} holds captured model-call records")
