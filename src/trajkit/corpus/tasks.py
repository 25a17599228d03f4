"""Picklable per-run tasks for :func:`trajkit.corpus.run`: each takes one
:class:`Unit` (a run, or a run archive) and returns rows.

A task never raises on data: a run that cannot be read is a ``runs`` row
with ``read_ok`` false and a ``diagnostics`` row saying why.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from ..reading import fs
from .tables import TABLES, Relativizer, run_id, run_row, session_rows


@dataclass(frozen=True, slots=True)
class Unit:
    """One thing to index: a run (``path``, absolute; ``#ID`` for a member of a
    container file) or a run archive, with its portable ``source``, the ROOT
    it was found under (``root``, as given), its path relative to that ROOT
    (``rel``), and the size and newest mtime of its files (the change key,
    worked out by the task: ``None`` until then). ``prev``: the key the index
    holds for it, when it may be skipped if unchanged."""

    path: str
    source: str
    root: str
    rel: str
    size: int | None = None
    mtime: float | None = None
    archive: bool = False
    prev: tuple[int, float] | None = None

    @property
    def run_id(self) -> str:
        return run_id(self.source)

    def __reduce__(self) -> tuple[Any, ...]:
        # the fields by position: a slots dataclass otherwise pickles through Python-level
        # __getstate__/__setstate__ that call fields() for every unit, both ways, per run
        return Unit, (self.path, self.source, self.root, self.rel, self.size, self.mtime, self.archive, self.prev)


@dataclass(slots=True)
class UnitRows:
    """What indexing one unit gave: rows per table, and how many runs were read / unreadable."""

    unit: Unit
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: int = 0
    unreadable: int = 0
    #: the unit's files are as the index holds them (``Unit.prev``): nothing was read
    skipped: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        return UnitRows, (self.unit, self.rows, self.runs, self.unreadable, self.skipped)  # see Unit.__reduce__


def _empty() -> dict[str, list[dict[str, Any]]]:
    return {t: [] for t in TABLES}


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """What an index is built with; a change re-parses every run (see :meth:`key`)."""

    max_file_bytes: int = 1 << 30
    certify: bool = False
    turns: bool = False
    tokenizer: str | None = None
    max_member_bytes: int = 1 << 30
    max_group_bytes: int = 2 << 30
    max_total_bytes: int = 64 << 30

    def key(self) -> dict[str, Any]:
        return {"max_file_bytes": self.max_file_bytes, "certify": self.certify, "turns": self.turns,
                "tokenizer": self.tokenizer, "max_member_bytes": self.max_member_bytes,
                "max_group_bytes": self.max_group_bytes, "max_total_bytes": self.max_total_bytes}


def _version() -> str:
    from .. import __version__

    return __version__


class IndexTask:
    """Index one unit: read it, and turn the Session into table rows."""

    def __init__(self, options: IndexOptions) -> None:
        self.options = options
        self._tokenizer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._tokenizer = None

    def __call__(self, unit: Unit) -> UnitRows:
        import dataclasses

        size, mtime = change_key(unit.path)
        unit = dataclasses.replace(unit, size=size, mtime=mtime)
        if unit.prev is not None and tuple(unit.prev) == (size, mtime):
            return UnitRows(unit, {}, skipped=True)
        out = UnitRows(unit, _empty())
        if unit.archive:
            self._archive(unit, out)
        else:
            self._one(unit.path, unit, unit.path, out)
        return out

    # ------------------------------------------------------------ one run
    def _one(self, path: str, unit: Unit, root_for_paths: str, out: UnitRows) -> None:
        from ..model import DetectionError, ReadOptions, TrajkitError
        from ..registry import read

        rid = unit.run_id
        version = _version()
        try:
            session = read(path, options=ReadOptions(max_file_bytes=self.options.max_file_bytes))
        except (DetectionError, TrajkitError, OSError) as e:
            out.rows["runs"].append(run_row(None, rid, unit, None, version))
            out.rows["diagnostics"].append(_diag_row(rid, "index.run-unreadable", "error", str(e), None))
            out.runs += 1
            out.unreadable += 1
            return
        src = session.source_path or root_for_paths
        rel = Relativizer(src, fs.isdir(src))
        totals = session_rows(session, rid, rel, out.rows)
        out.rows["runs"].append(run_row(session, rid, unit, totals, version))
        out.runs += 1
        if self.options.certify:
            self._certify(path, session, rid, out)
        if self.options.turns:
            self._turns(session, rid, out)

    def _certify(self, path: str, session: Any, rid: str, out: UnitRows) -> None:
        from ..certify import CertifyOptions
        from ..certify.fcr import claim_check
        from ..certify.pipeline import certify

        try:
            c = certify(path, CertifyOptions(max_file_bytes=self.options.max_file_bytes), session=session)
        except Exception as e:  # certify never raises on data; a bug is a diagnostic row, not a lost index
            out.rows["diagnostics"].append(_diag_row(rid, "index.certify-failed", "error", f"{type(e).__name__}: {e}", None))
            return
        findings = [f for f in (c.findings or []) if isinstance(f, dict)]
        cost = c.run.get("cost_usd") if isinstance(c.run, dict) else None
        out.rows["certificates"].append({
            "run_id": rid, "state": c.state, "reason": c.reason, "claimed_success": bool(c.claimed_success),
            "claim_check": claim_check(c), "false_completion": bool(c.false_completion),
            "findings": len(findings), "high_findings": sum(1 for f in findings if f.get("severity") in ("high", "critical")),
            "cost_usd": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
        })

    def _turns(self, session: Any, rid: str, out: UnitRows) -> None:
        from ..model import TrajkitError
        from ..registry import get_format

        try:
            fmt = get_format(session.format)
        except TrajkitError:
            return
        if not fmt.can("model_calls"):
            return
        try:
            from ..rl.turns import derive_turns

            if self._tokenizer is None and self.options.tokenizer:
                from ..rl.tokenize import load_tokenizer

                self._tokenizer = load_tokenizer(self.options.tokenizer)
            res = derive_turns(session, self._tokenizer)
        except (TrajkitError, ImportError) as e:
            out.rows["diagnostics"].append(_diag_row(rid, "index.turns-failed", "warning", str(e), None))
            return
        reward = res.summary.get("reward") if isinstance(res.summary, dict) else None
        for t in res.turns:
            out.rows["turns"].append({
                "run_id": rid, "turn": t.index, "prompt_tokens": len(t.prompt_ids), "output_tokens": len(t.output_ids),
                "trained": t.trained, "prompt_source": t.prompt_source, "finish_reason": t.finish_reason,
                "tool_calls": len(t.tool_calls),
                "reward": float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            })

    # ------------------------------------------------------------ archives
    def _archive(self, unit: Unit, out: UnitRows) -> None:
        from . import archive
        from .discover import discover

        o = self.options
        caps = archive.Caps(o.max_member_bytes, o.max_group_bytes, o.max_total_bytes)
        problems: list[archive.Problem] = []
        aid = unit.run_id

        for _prefix, members in archive.groups(unit.path, caps, problems):
            group = archive.group_tree(unit.path, members, problems)
            del members
            folder = group.root
            with fs.mounted(group):  # the archive's path is a folder of the group's members, for this call only
                for ref in discover([folder]):
                    inner = os.path.relpath(os.fspath(ref.path), folder).replace(os.sep, "/")
                    sub = Unit(path=os.fspath(ref.path), source=f"{unit.source}!/{inner}", root=unit.root,
                               rel=f"{unit.rel}!/{inner}", size=group.size_under(os.fspath(ref.path).split("#", 1)[0]),
                               mtime=unit.mtime)
                    self._one(sub.path, sub, sub.path, out)
        for p in problems:
            out.rows["diagnostics"].append(_diag_row(aid, p.code, p.severity, p.message, p.member))
        if not out.runs and not problems:
            out.rows["diagnostics"].append(_diag_row(aid, "index.archive-empty", "warning", "no run found in the archive", None))


def change_key(path: str) -> tuple[int, float]:
    """(total bytes, newest mtime) of a run's files: the file (the container
    of a ``PATH#ID`` member), or every file under a directory run."""
    if "#" in path and not os.path.lexists(path):
        path = path.rsplit("#", 1)[0]
    try:
        st = os.stat(path)
    except OSError:
        return 0, 0.0
    if not stat.S_ISDIR(st.st_mode):  # one stat: a re-index asks this of every run
        return st.st_size, st.st_mtime
    size, newest = 0, st.st_mtime
    stack = [path]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                            s = e.stat(follow_symlinks=False)
                        else:
                            s = e.stat()
                            size += s.st_size
                    except OSError:
                        continue
                    if s.st_mtime > newest:
                        newest = s.st_mtime
        except OSError:
            continue
    return size, newest


def _diag_row(rid: str, code: str, severity: str, message: str, file: str | None) -> dict[str, Any]:
    return {"run_id": rid, "session_key": None, "code": code, "severity": severity, "message": message,
            "file": file, "line": None, "offset": None, "event_id": None}
