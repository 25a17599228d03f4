"""Listing Gemini CLI sessions (``find_sessions``, for discovery and ``trajkit
ls``): a light module (the sniff and the shared listings only), so that a
discovery, which asks every format to walk each given folder, does not import
the session reader (:mod:`.reader`: the session builder, steps, hashlib)."""

from __future__ import annotations

import os
from pathlib import Path

from ...diagnostics import WARNING, Diagnostic
from ...reading import fs
from ...reading import tree
from ...reading.probe import Probe
from ...registry import Match
from .detect import sniff


def find_sessions(root: str | os.PathLike, diagnostics: list[Diagnostic] | None = None) -> list[Path]:
    """The Gemini CLI sessions under ``root`` (``tmp/<project>/chats/*.json[l]``);
    sub-agent sessions (in ``chats/<session id>/``) are left to their parent."""
    diags = diagnostics if diagnostics is not None else []
    p = Path(os.path.abspath(os.fspath(root)))
    probe = Probe()
    if fs.isfile(p):
        return [p] if isinstance(sniff(probe, p, "*"), Match) else []
    out = []
    # each folder's names come sorted (tree.walk_sorted): only a chats/ folder's files are looked at
    for dirpath, dirnames, filenames in tree.walk_sorted(p, onerror=lambda e: diags.append(
            Diagnostic("gemini.unreadable-dir", f"cannot list: {e.strerror or e}", WARNING, file=getattr(e, "filename", None)))):
        if not dirpath.endswith(_CHATS):
            continue
        dirnames[:] = []  # sub-agent folders belong to their parent session
        for name in filenames:
            if name.endswith((".json", ".jsonl")):
                f = Path(tree.join(dirpath, name))
                if isinstance(sniff(probe, f, "*"), Match):
                    out.append(f)
    return out


_CHATS = os.sep + "chats"


__all__ = ["find_sessions"]
