"""SessionBuilder: the bookkeeping every reader needs, written once.

A reader makes one builder for the run it reads, reads its files through it
and returns :meth:`SessionBuilder.finish`::

    b = SessionBuilder("my-format", root, options)
    lines, src = b.jsonl(root / "log.jsonl", role="events")
    for ln in lines or ():
        ...                                   # b.session.events.append(...)
    value, _ = b.read_json(root / "task.json", role="task")
    b.unused(root / "log.jsonl.bak", role="events", note="an older copy")
    return b.finish()

Every file read, skipped, unused or ignored becomes one
:class:`~trajkit.model.SourceFile` (in the order the reader met them), every
problem a :class:`~trajkit.model.Diagnostic` with the file filled in. Reads
go through :mod:`trajkit.reading.io` (regular files only, size checked first).
:meth:`finish` lists the run's directory and accounts for whatever the
reader did not: each such entry is kept as ``unused`` with a
``read.unaccounted`` diagnostic, so a forgotten file is never silent.

Diagnostic codes emitted here (see ``docs/diagnostics.md``):
``read.unaccounted`` and those of :mod:`trajkit.reading.io`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..jsonio import MISSING, loads
from ..diagnostics import ERROR, INFO, WARNING, Diagnostic
from ..model import ReadOptions, Session, SourceFile
from .io import JsonLine, iter_jsonl, read_capped
from .probe import Probe


class SessionBuilder:
    """A Session under construction, with its file accounting.

    ``root`` is the run's root (a directory, or one file); ``options`` the
    read options (``max_file_bytes`` caps every read); ``probe`` a cached
    view of the disk (detection's, when the reader got one).
    """

    __slots__ = ("session", "root", "options", "cap", "probe", "_accounted")

    def __init__(
        self,
        format: str,
        root: str | os.PathLike,
        options: ReadOptions | None = None,
        *,
        view: str | None = None,
        probe: Probe | None = None,
    ) -> None:
        self.root = Path(root)
        self.options = options or ReadOptions()
        self.cap = self.options.max_file_bytes
        self.probe = probe if probe is not None else Probe()
        self.session = Session(format=format, source_path=str(self.root), view=view)
        self._accounted: dict[str, SourceFile] = {}

    # ------------------------------------------------------------ diagnostics

    def diag(self, code: str, message: str, severity: str = WARNING, file: str | os.PathLike | None = None, **where: Any) -> Diagnostic:
        """Record a diagnostic; ``file`` defaults to the run's root."""
        d = Diagnostic(code, message, severity, file=os.fspath(file) if file is not None else str(self.root), **where)
        self.session.diagnostics.append(d)
        return d

    # ------------------------------------------------------------ accounting

    def account(
        self,
        path: str | os.PathLike,
        role: str,
        status: str = "read",
        size: int | None = None,
        note: str | None = None,
        event_ids: list[Any] | None = None,
    ) -> SourceFile:
        """Record what became of one file (``read``, ``skipped``, ``unused``
        or ``ignored``); accounting a path again returns its first record."""
        p = os.fspath(path)
        sf = self._accounted.get(p)
        if sf is not None:
            return sf
        sf = SourceFile(p, role, status, size, event_ids if event_ids is not None else [], note)
        self._accounted[p] = sf
        self.session.files.append(sf)
        return sf

    def skip(self, path: str | os.PathLike, role: str, code: str, message: str, severity: str = ERROR,
             size: int | None = None, note: str | None = None) -> SourceFile:
        """A file not read, and why (a diagnostic naming it)."""
        self.diag(code, message, severity, file=path)
        return self.account(path, role, "skipped", size, note)

    def unused(self, path: str | os.PathLike, role: str, note: str | None = None, size: int | None = None) -> SourceFile:
        """A file the format knows and deliberately does not read (another
        view, a recording, an older copy)."""
        return self.account(path, role, "unused", size, note)

    def ignored(self, path: str | os.PathLike, role: str, note: str | None = None, size: int | None = None) -> SourceFile:
        """A file the format itself ignores (a lock, a derived file)."""
        return self.account(path, role, "ignored", size, note)

    # ------------------------------------------------------------ reading

    def read_bytes(self, path: str | os.PathLike, role: str) -> tuple[bytes | None, SourceFile]:
        """A file's bytes (accounted as ``read``), or None (accounted as
        ``skipped`` with ``file.unreadable`` / ``file.too-large``)."""
        p = os.fspath(path)
        data, why = read_capped(p, self.cap)
        if data is None:
            self.session.diagnostics.append(why.diagnostic(p, self.cap))  # type: ignore[union-attr]
            return None, self.account(p, role, "skipped", why.size)  # type: ignore[union-attr]
        return data, self.account(p, role, "read", len(data))

    def read_json(self, path: str | os.PathLike, role: str) -> tuple[Any, SourceFile]:
        """One JSON file's value (MISSING when it cannot be read or decoded;
        the file is then ``skipped`` and a diagnostic says why)."""
        data, sf = self.read_bytes(path, role)
        if data is None:
            return MISSING, sf
        value, d = loads(data, sf.path)
        if d is not None:
            self.session.diagnostics.append(d)
        if value is MISSING:
            sf.status = "skipped"
        return value, sf

    def jsonl(self, path: str | os.PathLike, role: str) -> tuple[list[JsonLine] | None, SourceFile]:
        """A JSON Lines file's lines (None when the file cannot be read); cut
        or corrupt lines are diagnostics with their line number and offset
        (their :class:`JsonLine` has ``value`` MISSING)."""
        data, sf = self.read_bytes(path, role)
        if data is None:
            return None, sf
        return list(iter_jsonl(data, sf.path, self.session.diagnostics)), sf

    # ------------------------------------------------------------ the end

    def finish(self) -> Session:
        """The session, once every entry of the run's directory is accounted
        for: what the reader did not account for is kept as ``unused`` (role
        ``other``) with a ``read.unaccounted`` diagnostic. A directory counts
        as accounted when a file under it is."""
        root = self.root
        if not self.probe.is_dir(root):
            return self.session
        base = str(root) + os.sep
        accounted = self._accounted
        prefixes = {p[len(base):].split(os.sep, 1)[0] for p in accounted if p.startswith(base)}
        for name in sorted(self.probe.listdir(root) or ()):
            if name in prefixes:
                continue
            p = base + name
            is_dir = self.probe.is_dir(p)
            st = None if is_dir else self.probe.stat(p)
            self.account(p, "other", "unused", st.st_size if st is not None else None, note=f"not part of the {self.session.format} layout")
            self.diag(
                "read.unaccounted",
                f"{'directory' if is_dir else 'file'} not part of the {self.session.format} layout; left alone",
                INFO,
                file=p,
            )
        return self.session
