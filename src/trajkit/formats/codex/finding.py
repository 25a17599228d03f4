"""Listing Codex rollouts (``find_sessions``, for discovery and ``trajkit ls``)
and which thread a rollout names as its parent: a light module (no session
builder, steps or reader), so that a discovery, which asks every format to
walk each given folder, does not import the rollout reader (:mod:`.reader`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import WARNING, Diagnostic
from ...reading import fs
from ...reading import tree
from ...reading.probe import Probe
from ...registry import Match
from .detect import _HEAD, sniff


def parent_thread_of(meta: dict[str, Any]) -> str | None:
    """The parent thread a child rollout's ``session_meta`` names (top level, or under ``source.subagent``)."""
    if isinstance(meta.get("parent_thread_id"), str):
        return meta["parent_thread_id"]
    src = meta.get("source")
    stack = [src]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if isinstance(x.get("parent_thread_id"), str):
                return x["parent_thread_id"]
            stack.extend(x.values())
    return None


#: ``path -> (size, mtime_ns, parent thread id)``: which thread each rollout
#: names as its parent, so that reading every rollout of a busy day folder does
#: not read every other rollout's head again (a rollout only grows; a change of
#: size or mtime invalidates the entry).
_PARENT_OF: dict[str, tuple[int, int, str | None]] = {}
_PARENT_CACHE_MAX = 100_000


def parent_of(path: str, probe: Probe) -> str | None:
    """The parent thread id the rollout at ``path`` names (None for a main thread), cached."""
    st = probe.stat(path)
    if st is None:
        return None
    got = _PARENT_OF.get(path)
    if got is not None and got[0] == st.st_size and got[1] == st.st_mtime_ns:
        return got[2]
    meta = first_meta(path, probe)
    parent = parent_thread_of(meta) if meta is not None else None
    if len(_PARENT_OF) >= _PARENT_CACHE_MAX:
        _PARENT_OF.clear()
    _PARENT_OF[path] = (st.st_size, st.st_mtime_ns, parent)
    return parent


def first_meta(path: str, probe: Probe | None = None) -> dict[str, Any] | None:
    """The ``session_meta`` payload of a rollout's first lines, or None."""
    head = (probe or Probe()).head(path, _HEAD)
    for raw in head.split(b"\n")[:5]:
        try:
            v = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(v, dict) and v.get("type") == "session_meta" and isinstance(v.get("payload"), dict):
            return v["payload"]
    return None


def find_sessions(root: str | os.PathLike, diagnostics: list[Diagnostic] | None = None) -> list[Path]:
    """The Codex rollouts under ``root`` (``sessions/**/rollout-*.jsonl``,
    ``archived_sessions/``, ``.jsonl.zst``), one per thread, sub-agent threads
    left to their parent; a file is itself when it is a Codex record."""
    diags = diagnostics if diagnostics is not None else []
    p = Path(os.path.abspath(os.fspath(root)))
    if fs.isfile(p):
        return [p] if isinstance(sniff(Probe(), p, "*"), Match) else []
    out: dict[str, Path] = {}
    children = 0
    probe = Probe()
    # each folder's names come sorted (tree.walk_sorted); a path is made only for a rollout's name
    for dirpath, _dirnames, filenames in tree.walk_sorted(p, onerror=lambda e: diags.append(
            Diagnostic("codex.unreadable-dir", f"cannot list: {e.strerror or e}", WARNING, file=getattr(e, "filename", None)))):
        if not tree.any_starting(filenames, "rollout-"):
            continue  # no rollout here: one search, not a test per name
        for name in filenames:
            if not name.startswith("rollout-") or not name.endswith((".jsonl", ".jsonl.zst")):
                continue
            fs_ = tree.join(dirpath, name)
            stem = name[: -len(".zst")] if name.endswith(".zst") else name
            if name.endswith(".jsonl"):
                if parent_of(fs_, probe):
                    children += 1
                    continue
                out[stem] = Path(fs_)  # the plain file wins over its compressed copy
            else:
                out.setdefault(stem, Path(fs_))
    return sorted(out.values())


__all__ = ["find_sessions", "parent_of", "first_meta", "parent_thread_of"]
