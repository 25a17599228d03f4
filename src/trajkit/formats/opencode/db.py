"""opencode's SQLite store (``opencode.db``, ``opencode-<channel>.db``), read-only.

Nothing of the store is written:

- a store with no ``-wal`` file beside it (no opencode process has it open:
  opencode keeps its store in WAL mode) is opened ``immutable``: no lock, no
  journal, no side file, nothing but reads;
- a store with a ``-wal`` file is opened read-only (``mode=ro``), so SQLite
  applies the writes still in the ``-wal`` (they live there until a
  checkpoint) and coordinates with a live opencode. SQLite's reader then
  keeps its read marks in the shared-memory index ``-shm``, as every reader
  of a WAL database does (opencode's own included); the database and its
  ``-wal`` are never written, and no checkpoint runs. When that open fails
  because a writer holds the store locked (exclusive locking mode), it falls
  back to ``immutable`` (the main file as last checkpointed) and says so.

A file that is not an SQLite database, or one whose pages are damaged,
becomes a diagnostic; an ``sqlite3`` error never leaves this module. Only
regular files are opened (a FIFO named ``opencode.db`` would block the
open), and the size cap of :class:`~trajkit.model.ReadOptions` applies to
the main file.

Diagnostic codes (see ``docs/diagnostics.md``): ``opencode.db-unreadable``,
``opencode.db-locked``, ``opencode.db-schema``, ``opencode.db-query``,
plus ``file.unreadable`` / ``file.too-large``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import quote

from ...diagnostics import ERROR, INFO, WARNING, Diagnostic

#: How long a read-only open waits for a writer's lock before falling back (seconds).
BUSY_TIMEOUT = 0.25

#: Columns each session table needs, and the ones read when present.
REQUIRED = {
    "session": ("id",),
    "message": ("id", "session_id", "data"),
    "part": ("id", "message_id", "data"),
}


def _uri(path: str, immutable: bool) -> str:
    q = quote(os.path.abspath(path), safe="/")
    return f"file:{q}?mode=ro" + ("&immutable=1" if immutable else "")


@dataclass
class Store:
    """An open store: the connection, how it was opened, its tables and columns."""

    path: str
    con: sqlite3.Connection
    mode: str  # "ro" | "immutable"
    tables: dict[str, list[str]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: the session tables it lacks (set by :func:`check_schema`)
    missing: list[str] | None = None

    def has(self, table: str, *cols: str) -> bool:
        have = self.tables.get(table)
        return have is not None and all(c in have for c in cols)

    def rows(self, sql: str, params: tuple[Any, ...] = (), what: str = "") -> Iterator[dict[str, Any]]:
        """The rows of ``sql`` as dicts; a failing query (damaged pages, a
        lock taken mid-read) ends the rows with an ``opencode.db-query``
        diagnostic instead of raising."""
        try:
            cur = self.con.execute(sql, params)
            cols = [d[0] for d in cur.description or ()]
            while True:
                try:
                    batch = cur.fetchmany(512)
                except sqlite3.Error as e:
                    self.diagnostics.append(Diagnostic(
                        "opencode.db-query", f"reading {what or 'rows'} stopped: {e}; the rows before were read", ERROR, file=self.path))
                    return
                if not batch:
                    return
                for r in batch:
                    yield dict(zip(cols, r))
        except sqlite3.Error as e:
            self.diagnostics.append(Diagnostic("opencode.db-query", f"cannot read {what or 'rows'}: {e}", ERROR, file=self.path))
            return

    def close(self) -> None:
        try:
            self.con.close()
        except sqlite3.Error:
            pass


def _check_file(path: str, cap: int) -> Diagnostic | None:
    try:
        st = os.stat(path)
    except OSError as e:
        return Diagnostic("file.unreadable", f"cannot read file: {e.strerror or e}", ERROR, file=path)
    if not stat.S_ISREG(st.st_mode):
        return Diagnostic("file.unreadable", "cannot read file: not a regular file; not read", ERROR, file=path)
    if st.st_size > cap:
        return Diagnostic("file.too-large", f"file is {st.st_size} bytes, over the size cap of {cap} bytes; not read", ERROR, file=path)
    return None


def _introspect(con: sqlite3.Connection) -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {}
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for name in names:
        if not isinstance(name, str):
            continue
        cols = [r[1] for r in con.execute(f"PRAGMA table_info(\"{name.replace(chr(34), chr(34) * 2)}\")")]
        tables[name] = cols
    return tables


def open_store(path: str, cap: int = 1 << 30) -> tuple[Store | None, list[Diagnostic]]:
    """Open the store at ``path`` read-only: the :class:`Store`, or None and why."""
    bad = _check_file(path, cap)
    if bad is not None:
        return None, [bad]
    diags: list[Diagnostic] = []
    last: Exception | None = None
    live = os.path.exists(path + "-wal")
    for immutable in ((False, True) if live else (True,)):
        try:
            con = sqlite3.connect(_uri(path, immutable), uri=True, timeout=BUSY_TIMEOUT, check_same_thread=False)
        except sqlite3.Error as e:
            last = e
            continue
        try:
            tables = _introspect(con)
        except sqlite3.Error as e:
            con.close()
            last = e
            msg = str(e).lower()
            if immutable or not ("locked" in msg or "unable to open" in msg or "busy" in msg or "readonly" in msg):
                break
            continue
        mode = "immutable" if immutable else "ro"
        if immutable and live:
            side = [s for s in ("-wal",) if os.path.exists(path + s) and os.path.getsize(path + s) > 0]
            diags.append(Diagnostic(
                "opencode.db-locked",
                f"the store could not be opened read-only with its journal ({last}); read as the main file was last "
                "checkpointed (immutable)" + (f": the writes still in {os.path.basename(path)}-wal are not seen" if side else ""),
                WARNING, file=path))
        store = Store(path, con, mode, tables, diags)
        return store, []
    return None, [Diagnostic("opencode.db-unreadable", f"not a readable SQLite store: {last}", ERROR, file=path)]


def check_schema(store: Store) -> list[str]:
    """The session tables this store lacks (each named in an ``opencode.db-schema`` diagnostic)."""
    missing: list[str] = []
    for table, cols in REQUIRED.items():
        have = store.tables.get(table)
        if have is None:
            missing.append(table)
            store.diagnostics.append(Diagnostic(
                "opencode.db-schema", f"the store has no `{table}` table (schema drift, or not an opencode store)", ERROR, file=store.path))
            continue
        lack = [c for c in cols if c not in have]
        if lack:
            missing.append(table)
            store.diagnostics.append(Diagnostic(
                "opencode.db-schema", f"table `{table}` lacks column(s) {', '.join(lack)}; it cannot be read", ERROR, file=store.path))
    if "session" in store.tables and "tokens_input" not in store.tables["session"]:
        store.diagnostics.append(Diagnostic(
            "opencode.db-schema", "table `session` has no tokens_* / cost columns (opencode before 1.16): session totals "
            "are summed from the step-finish parts", INFO, file=store.path))
    store.missing = missing
    return missing


