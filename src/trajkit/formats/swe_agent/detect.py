"""Recognising the format's files (imported by detection; kept free of the reader)."""

from __future__ import annotations

from pathlib import Path

from ...reading import fs
from ...reading import tree
from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Match, Reject

NAME = "swe-agent"
SUFFIX = ".traj"
#: Harbor's copy of the ``.traj`` in a trial: ``<trial>/agent/swe-agent.trajectory.json``.
HARBOR_COPY = "swe-agent.trajectory.json"
_HEAD = 1 << 16
_KEYS = (b'"trajectory"', b'"history"', b'"attempts"', b'"environment"')


# ---------------------------------------------------------------- detection


def _traj_files(probe: Probe, d: Path) -> list[str]:
    dirs, files = probe.scan(d)
    return sorted(n for n in files if n.endswith(SUFFIX) and n[0] != ".")


def _is_run_file(name: str) -> bool:
    return name.endswith(SUFFIX) or name == HARBOR_COPY


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    if probe.is_dir(candidate) and probe.is_file(candidate / "agent" / HARBOR_COPY):
        candidate = candidate / "agent" / HARBOR_COPY  # a harbor trial: its copy of the .traj
    if probe.is_dir(candidate):
        trajs = _traj_files(probe, candidate)
        if len(trajs) != 1:
            return Reject(f"{len(trajs)} .traj files here; a run is one .traj file (name it)")
        candidate = candidate / trajs[0]
    elif not _is_run_file(candidate.name) or not probe.is_file(candidate):
        return Reject("not a .traj file")
    head = probe.head(candidate, _HEAD).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{") and any(k in head for k in _KEYS):
        return Match(candidate, fingerprint, STRONG, f"{candidate.name}: a .traj JSON object with SWE-agent members")
    # named like a trajectory and nothing else in scope uses the extension: let the reader say what is wrong
    return Match(candidate, fingerprint, WEAK, f"{candidate.name} is named like a SWE-agent trajectory")


def files_ending(root: Path, suffix: str) -> list[Path]:
    """Every file under ``root`` whose name ends with ``suffix`` (hidden entries skipped), in name order."""
    root = Path(root)
    if fs.isfile(root):
        return [root] if root.name.endswith(suffix) else []
    out: list[Path] = []
    for dirpath, dirnames, filenames in tree.walk_sorted(root):  # each folder's names come sorted
        if dirnames:
            dirnames[:] = [d for d in dirnames if d[0] != "."]
        if tree.any_ending(filenames, suffix):  # most folders hold none: one search, not a test per name
            out += [Path(tree.join(dirpath, f)) for f in filenames if f.endswith(suffix) and f[0] != "."]
    return out


def find_sessions(root: Path, diagnostics: list | None = None) -> list[Path]:
    """Every ``.traj`` file under ``root`` (a run folder holds one per instance)."""
    return files_ending(root, SUFFIX)
