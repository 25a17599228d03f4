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
  back to ``immutable`` (the main file as last checkpointed) and says so;
- a store inside a run archive (a memory tree mounted by
  :mod:`trajkit.reading.fs`) is read from memory: the committed frames of
  its ``-wal`` member are applied to a copy of its bytes, as SQLite's
  read-only open applies them, and the copy is handed to an in-memory
  connection (``Connection.deserialize``) that only reads (``query_only``).

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
import struct
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import quote

from ...diagnostics import ERROR, INFO, WARNING, Diagnostic
from ...reading import fs

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
        st = fs.stat(path)
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
    tree = fs.current()
    if tree is not None:
        return _open_memory(path, tree)
    diags: list[Diagnostic] = []
    last: Exception | None = None
    live = fs.exists(path + "-wal")
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
            side = [s for s in ("-wal",) if fs.exists(path + s) and fs.getsize(path + s) > 0]
            diags.append(Diagnostic(
                "opencode.db-locked",
                f"the store could not be opened read-only with its journal ({last}); read as the main file was last "
                "checkpointed (immutable)" + (f": the writes still in {os.path.basename(path)}-wal are not seen" if side else ""),
                WARNING, file=path))
        store = Store(path, con, mode, tables, diags)
        return store, []
    return None, [Diagnostic("opencode.db-unreadable", f"not a readable SQLite store: {last}", ERROR, file=path)]


def _open_memory(path: str, tree: Any) -> tuple[Store | None, list[Diagnostic]]:
    """:func:`open_store` for a store held in memory (a run archive's member):
    its bytes with the committed writes of its ``-wal`` member applied (as the
    read-only open of the same files on disk applies them: mode ``ro``; with
    no ``-wal``, the main file as it is: ``immutable``), deserialized into a
    connection that only reads. Nothing is written anywhere."""
    wal = tree.data(path + "-wal")
    image = apply_wal(tree.data(path) or b"", wal or b"")
    if len(image) >= 20 and image[18] == 2 and image[19] == 2:
        image[18] = image[19] = 1  # WAL mode in the header: the in-memory copy has no -wal beside it
    if not hasattr(sqlite3.Connection, "deserialize"):  # Python 3.10, or an SQLite built without it
        return None, [Diagnostic("opencode.db-unreadable", "a store inside an archive is read from memory, which needs "
                                 "sqlite3's Connection.deserialize (Python 3.11 or later); not read", ERROR, file=path)]
    try:
        con = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            con.deserialize(image)  # SQLite takes its own copy
            con.execute("PRAGMA query_only=ON")
            tables = _introspect(con)
        except sqlite3.Error:
            con.close()
            raise
    except sqlite3.Error as e:
        return None, [Diagnostic("opencode.db-unreadable", f"not a readable SQLite store: {e}", ERROR, file=path)]
    return Store(path, con, "immutable" if wal is None else "ro", tables, []), []


_WAL_MAGIC = (0x377F0682, 0x377F0683)


def _wal_checksum(data: bytes, s0: int, s1: int, order: str) -> tuple[int, int]:
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def apply_wal(db: bytes, wal: bytes) -> bytearray:
    """The bytes of the database ``db`` as a reader sees it with its write-ahead
    log ``wal``: the pages of every frame up to the last commit frame, while
    the frames' salts and running checksums hold (SQLite's own rule), written
    over a copy of ``db``. An empty, damaged or foreign ``wal`` leaves the
    copy as ``db``."""
    image = bytearray(db)
    if len(wal) < 32:
        return image
    magic, _version, page_size, _seq, salt1, salt2, c1, c2 = struct.unpack(">8I", wal[:32])
    if magic not in _WAL_MAGIC or page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return image
    order = ">" if magic & 1 else "<"
    s0, s1 = _wal_checksum(wal[:24], 0, 0, order)
    if (s0, s1) != (c1, c2):
        return image
    pending: dict[int, bytes] = {}
    committed: dict[int, bytes] = {}
    size_pages = None
    off = 32
    step = 24 + page_size
    while off + step <= len(wal):
        pgno, commit, f_salt1, f_salt2, f_c1, f_c2 = struct.unpack(">6I", wal[off:off + 24])
        if (f_salt1, f_salt2) != (salt1, salt2) or pgno == 0:
            break
        page = wal[off + 24:off + step]
        s0, s1 = _wal_checksum(wal[off:off + 8], s0, s1, order)
        s0, s1 = _wal_checksum(page, s0, s1, order)
        if (s0, s1) != (f_c1, f_c2):
            break
        pending[pgno] = page
        if commit:
            committed.update(pending)
            pending.clear()
            size_pages = commit
        off += step
    if size_pages is None:
        return image
    want = size_pages * page_size
    if len(image) < want:
        image.extend(bytes(want - len(image)))
    del image[want:]
    for pgno, page in committed.items():
        if pgno <= size_pages:
            image[(pgno - 1) * page_size:pgno * page_size] = page
    return image


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


