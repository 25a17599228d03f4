"""opencode's ``find_sessions``: the walk for stores and legacy trees, kept
apart from :mod:`.reader` so that discovery (which asks every format to walk
each given folder) does not import the store and tree readers (:mod:`.db`
with ``sqlite3``, :mod:`.native`, :mod:`.build`) where no store is found."""

from __future__ import annotations

import os
from pathlib import Path

from ...diagnostics import INFO, Diagnostic
from ...reading import fs, tree
from ...reading.probe import Probe
from ...registry import split_member
from .layout import MAGIC, _head_kind, _is_db_name, _looks_like_foreign_store

#: Directories of opencode's data folder that hold no sessions (not walked).
SKIP_DIRS = frozenset({"snapshot", "log", "bin", "tool-output", "node_modules", ".git", "worktree", "auth"})
#: How deep :func:`find_sessions` looks under a directory.
MAX_WALK_DEPTH = 4


def _walk(root: str, depth: int, out: list[str], diags: list[Diagnostic], seen: set[tuple[int, int]]) -> None:
    try:
        key = tree.identity(root)  # stat'ed once for every walk of a discovery
    except OSError:
        return
    if key in seen:
        return
    seen.add(key)
    try:
        dirs, nondirs, odd, _links = tree.folder(root)  # sorted and typed once for every walk of a discovery
    except OSError as e:
        diags.append(Diagnostic("opencode.no-session", f"cannot list directory: {e.strerror or e}", INFO, file=root))
        return
    if "session" in dirs and ("message" in dirs or "message" in nondirs or "part" in dirs or "part" in nondirs):
        out.append(root)  # a legacy storage tree (its session/ a folder, symlinks followed)
        return
    base = root if root.endswith(os.sep) else root + os.sep
    # the stores here (files named opencode*.db holding SQLite) and the folders to walk, in name order
    # (one search for a ".db" name first: most folders hold none)
    stores = [n for n in nondirs if _is_db_name(n) and n not in odd] if tree.any_ending(nondirs, ".db") else []
    walked = [n for n in dirs if n not in SKIP_DIRS and n[0] != "."] if depth < MAX_WALK_DEPTH else []
    if not stores:
        for name in walked:
            _walk(base + name, depth + 1, out, diags, seen)
        return
    folders = set(walked)
    for name in sorted(stores + walked):
        if name in folders:
            _walk(base + name, depth + 1, out, diags, seen)
        elif Probe().head(base + name, 16).startswith(MAGIC):
            out.append(base + name)


def find_sessions(root: str | os.PathLike, diagnostics: list[Diagnostic] | None = None) -> list[Path]:
    """The top-level sessions under ``root``, each as ``STORE#SESSION_ID``
    (stores and legacy trees) or the file itself (an export, an event stream).

    Sub-sessions are listed with their parent, not on their own. A session in
    a legacy tree whose id a store beside it also holds is the stale copy
    left by the migration to SQLite: it is not listed (``opencode.stale-copy``).
    """
    diags = diagnostics if diagnostics is not None else []
    p, member = split_member(root)
    if member is not None:
        return [Path(os.path.abspath(p) + "#" + member)]
    p = os.path.abspath(p)
    probe = Probe()
    containers: list[str] = []
    if fs.isfile(p):
        if _is_db_name(os.path.basename(p)) or _looks_like_foreign_store(probe, p):
            containers.append(p)
        elif _head_kind(probe, p) is not None:
            return [Path(p)]
        else:
            return []
    elif fs.isdir(p):
        _walk(p, 0, containers, diags, set())
    if not containers:
        return []
    from .reader import sessions_in  # the store and tree readers (sqlite3), only when there is one
    return sessions_in(containers, diags)
