"""Recognising the format's files (imported by detection; kept free of the reader)."""

from __future__ import annotations

import os
from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Match, Reject
from ..swe_agent.detect import files_ending

NAME = "mini-swe-agent"
SUFFIX = ".traj.json"
_HEAD = 1 << 16
#: terminal-bench's layout: ``<trial>/agent-logs/mini.traj.json``.
TB_TRAJ = ("agent-logs", "mini.traj.json")


# ---------------------------------------------------------------- detection


def _traj_files(probe: Probe, d: Path) -> list[str]:
    _dirs, files = probe.scan(d)
    return sorted(n for n in files if n.endswith(SUFFIX) and n[0] != ".")


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    trial = _trial_of(probe, candidate)
    if trial is not None:
        return Match(trial, fingerprint, STRONG, "a terminal-bench trial running mini-swe-agent (agent-logs/mini.traj.json)")
    if fingerprint != "*.traj.json":
        return Reject("no agent-logs/mini.traj.json here")
    if probe.is_dir(candidate):
        trajs = _traj_files(probe, candidate)
        if len(trajs) != 1:
            return Reject(f"{len(trajs)} .traj.json files here; a run is one .traj.json file (name it)")
        candidate = candidate / trajs[0]
    elif not candidate.name.endswith(SUFFIX) or not probe.is_file(candidate):
        return Reject("not a .traj.json file")
    head = probe.head(candidate, _HEAD).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"[") and b'"role"' in head:
        return Match(candidate, fingerprint, STRONG, f"{candidate.name}: a list of chat messages (mini-swe-agent list form)")
    if head.startswith(b"{") and (b'"trajectory_format"' in head or b'"messages"' in head):
        return Match(candidate, fingerprint, STRONG, f"{candidate.name}: a mini-swe-agent trajectory object")
    return Match(candidate, fingerprint, WEAK, f"{candidate.name} is named like a mini-swe-agent trajectory")


def find_sessions(root: Path, diagnostics: list | None = None) -> list[Path]:
    """Every ``.traj.json`` file under ``root``."""
    return files_ending(root, SUFFIX)


def _trial_of(probe: Probe, candidate: Path) -> Path | None:
    """The terminal-bench trial ``candidate`` is (or is the ``agent-logs`` folder or file of)."""
    if probe.is_file(candidate):
        if candidate.name == TB_TRAJ[1] and candidate.parent.name == TB_TRAJ[0]:
            return candidate.parent.parent
        return None
    cs = probe.fspath(candidate)  # strings while looking: a Path per ask cost more than the ask
    if probe.is_file(os.path.join(cs, TB_TRAJ[0], TB_TRAJ[1])):
        return candidate
    if candidate.name == TB_TRAJ[0] and probe.is_file(os.path.join(cs, TB_TRAJ[1])):
        return candidate.parent
    return None
