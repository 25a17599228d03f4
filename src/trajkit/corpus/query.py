"""SQL over an index through DuckDB (the ``[query]`` extra, imported lazily).

:func:`connect` opens an in-memory DuckDB database with one view per table
(``runs``, ``sessions``, ``steps``, ``tool_calls``, ``diagnostics``,
``certificates``, ``turns``) over the Parquet files the index's live
manifests name, so a query never sees a half-written batch. A table with no
file (``certificates`` without ``--certify``) is an empty view with the
documented columns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .index import live_files
from .tables import TABLES, schema

DUCKDB_MISSING = "trajkit query needs DuckDB: pip install 'trajkit[query]'"


class QueryError(Exception):
    """The query cannot run (DuckDB missing, not an index, bad SQL)."""


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def connect(index_dir: str | os.PathLike) -> Any:
    """A DuckDB connection with a view per table of the index at ``index_dir``."""
    try:
        import duckdb
    except ImportError:
        raise QueryError(DUCKDB_MISSING) from None
    files = live_files(Path(index_dir))
    con = duckdb.connect(":memory:")
    for t in TABLES:
        fs = files.get(t) or []
        if fs:
            listing = ", ".join(_quote(f) for f in fs)
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet([{listing}])")
        else:
            empty = schema(t).empty_table()
            con.register(f"_empty_{t}", empty)
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM _empty_{t}")
    return con


def query(index_dir: str | os.PathLike, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` over the index; (column names, rows)."""
    con = connect(index_dir)
    try:
        import duckdb

        try:
            cur = con.execute(sql)
        except duckdb.Error as e:
            raise QueryError(str(e)) from None
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()
    finally:
        con.close()
