"""Listing Claude Code sessions (``find_sessions``, for discovery and
``trajkit ls``): a walk of project folders that needs only :mod:`.layout`,
so a discovery does not import the reader (:mod:`.reader`, :mod:`.session`)
just to walk."""

from __future__ import annotations

import os
from pathlib import Path

from ...diagnostics import ERROR, WARNING, Diagnostic
from ...reading import fs
from ...reading import tree as read_tree
from ...reading.probe import Probe
from . import layout


def find_sessions(root: str | os.PathLike, diagnostics: list[Diagnostic] | None = None) -> list[Path]:
    """The sessions under ``root`` (``~/.claude``, its ``projects/``, one
    project folder, or one session): main transcripts and stream-json logs,
    never sub-agent files (they belong to their session)."""
    diags = diagnostics if diagnostics is not None else []
    p = Path(os.path.abspath(os.fspath(root)))
    probe = Probe()
    if not fs.exists(p):
        diags.append(Diagnostic("claude-code.root-missing", "no such file or directory", ERROR, file=str(p)))
        return []
    if fs.isfile(p):
        found, _why = layout.session_root(p, probe)
        return [found] if found is not None else []
    if fs.isdir(p / "projects"):
        p = p / "projects"
    out: list[Path] = []
    agent_file = layout.AGENT_FILE.match
    kind_listed = layout.kind_of_listed

    def project(d: str, dp: Path, listing: read_tree.Folder) -> None:
        # layout.session_files, from the folder's sorted listing; paths stay strings until one is a session
        # (made as dp / name: a child of the folder's Path parses one part, where Path(str) parses them all)
        probe.listdir(d)  # the probe knows the folder's names (companion_owner asks them for its sub-folders)
        base = d if d.endswith(os.sep) else d + os.sep
        _dirs, nondirs, odd, links = listing
        known = read_tree.file_answers(d, layout.FILE_KIND)  # the folder's answers, looked up once
        entries = None
        for n in nondirs:
            # layout.is_session_name, inlined: a project folder of a big corpus holds thousands of names
            if n.endswith(".jsonl") and not (n.startswith("agent-") and agent_file(n)) and n not in odd:
                got = known.get(n) if known is not None else None
                if got is None:
                    # read here, not through the probe: no other sniff of this walk shares the head
                    regular = n not in links
                    if known is None:
                        got = kind_listed(base + n, regular, probe)
                    else:
                        if entries is None:
                            entries = {e.name: e for e in read_tree.scandir(d)}  # the shared listing's entries
                        # the file's first bytes kept on its entry, as Probe.head keeps them, for the walks after this one
                        got = known[n] = kind_listed(base + n, regular, probe, entries.get(n) if regular else None)
                if got[0] is not None:
                    out.append(dp / n)
        probe.drop_heads()  # what the long way read (big and empty files): a walk of a big tree must not keep them

    top = str(p)
    try:
        listing = read_tree.folder(top)  # sorted and typed once for every walk of a discovery
    except OSError as e:
        diags.append(Diagnostic("claude-code.dir-unreadable", f"cannot list: {e.strerror or e}", WARNING, file=top))
        listing = None
    if listing is not None:
        project(top, p, listing)
        base = top if top.endswith(os.sep) else top + os.sep
        for name in listing[0]:  # the project folders (symlinks followed), in name order
            d = base + name
            if layout.companion_owner(d, probe) is not None:
                continue
            try:
                project(d, p / name, read_tree.folder(d))
            except OSError:
                continue  # no names: no session files
    if not out:
        found, _why = layout.session_root(p, probe)
        if found is not None:
            out.append(found)
    return out


__all__ = ["find_sessions"]
