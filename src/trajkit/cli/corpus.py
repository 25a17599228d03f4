"""The corpus verbs: ``index`` (runs into Parquet tables; ``index status``,
``index compact``) and ``query`` (SQL over an index through DuckDB)."""

from __future__ import annotations

import importlib.util
import sys

import click

from ._common import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, EXIT_OK, LiveProgress, echo_json, fail, out_console


class _IndexGroup(click.Group):
    """``trajkit index ROOT... --out DIR`` builds; ``index status DIR`` and
    ``index compact DIR`` are subcommands (a ROOT named ``status`` or
    ``compact`` is written ``./status``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["build", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("trajkit index", "ROOT... --out DIR [OPTIONS] | status DIR | compact DIR")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        build = self.commands["build"]
        build.format_options(click.Context(build, info_name="index", parent=ctx.parent), formatter)
        self.format_commands(ctx, formatter)


@click.group("index", cls=_IndexGroup)
def index_cmd() -> None:
    """Index the runs under ROOT... into Parquet tables in DIR (see docs/index.md).

    \b
      trajkit index ROOT... --out DIR   build or update the index
      trajkit index status DIR          what the index holds
      trajkit index compact DIR         merge its batches into one file per table

    Tables: runs, sessions, steps, tool_calls, diagnostics (always),
    certificates (--certify), turns (--turns). Re-running skips runs whose
    files are unchanged (path, size, mtime) and resumes a killed index at
    its last committed batch. Query it with `trajkit query DIR "SQL"`.
    """


@index_cmd.command("build", hidden=True)
@click.argument("roots", nargs=-1, required=True, type=click.Path(exists=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="The index directory (created).")
@click.option("--engine", type=click.Choice(["process", "serial", "ray"]), default="process", show_default=True,
              help="How runs are read: worker processes, this process, or Ray Data (the [ray] extra).")
@click.option("--jobs", "-j", type=int, default=None, help="Worker processes (or local Ray CPUs); default: the CPUs available.")
@click.option("--batch-size", type=int, default=1000, show_default=True,
              help="Runs per committed batch (a killed index resumes after the last one); workers get chunks of at most 64.")
@click.option("--ray-address", default=None, metavar="ADDR", help="Join this Ray cluster instead of starting a local Ray.")
@click.option("--certify", "do_certify", is_flag=True, help="Also certify each run (the certificates table).")
@click.option("--turns", "do_turns", is_flag=True, help="Also derive training turns from runs that capture model calls (the turns table).")
@click.option("--tokenizer", type=click.Path(exists=True), default=None, help="Tokenizer directory for --turns (unless the traces captured prompt ids).")
@click.option("--max-file-bytes", type=int, default=1 << 30, show_default=True, help="Files (and archive members) larger than this are reported, not read.")
@click.option("--max-archive-bytes", type=int, default=64 << 30, show_default=True, help="Stop reading an archive past this many uncompressed bytes.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
def index_build_cmd(roots, out_dir, engine, jobs, batch_size, ray_address, do_certify, do_turns, tokenizer, max_file_bytes,
                    max_archive_bytes, quiet, as_json):
    import os

    from ..corpus.index import IndexError_, build
    from ..corpus.run import EngineError
    from ..corpus.tasks import IndexOptions

    for r in roots:
        if not os.path.exists(r):
            fail(f"{r}: no such file or directory")
    if jobs is not None and jobs < 1:
        fail("--jobs must be at least 1")
    if engine == "ray":
        try:
            import ray  # noqa: F401 - checked before any work starts
        except ImportError:
            fail("the ray engine needs Ray Data: pip install 'trajkit[ray]'")
    # found, not imported: an index of an unchanged corpus writes nothing and
    # never needs it (importing pyarrow was a fifth of such a re-index)
    if importlib.util.find_spec("pyarrow") is None:
        fail("trajkit index needs pyarrow: pip install 'trajkit[tables]'")
    opts = IndexOptions(max_file_bytes=max_file_bytes, certify=do_certify, turns=do_turns, tokenizer=tokenizer,
                        max_member_bytes=max_file_bytes, max_total_bytes=max_archive_bytes)
    problems: list[str] = []
    with LiveProgress(rate=True, quiet=quiet) as bar:
        # runs are read while they are still being found: the total grows until the walk ends
        seen = {"found": 0, "done": 0, "final": False}
        bar.start(0, "indexing (finding runs)")

        def found(n: int) -> None:
            seen["found"] = n
            bar.update(seen["done"], total=max(n, seen["done"]))

        def progressed(done: int) -> None:
            seen["done"] = done
            bar.update(done, total=max(seen["found"], done) if not seen["final"] else None)

        def walked(total: int, _skipped: int) -> None:
            seen["found"], seen["final"] = total, True
            bar.update(seen["done"], total=total, text="indexing")

        try:
            res = build(
                list(roots), out_dir, opts, engine=engine, jobs=jobs, batch_size=batch_size, address=ray_address,
                on_discovered=found, on_start=walked, on_progress=progressed, on_problem=problems.append,
            )
        except (IndexError_, EngineError) as e:
            fail(str(e))
            raise  # unreachable
        except ImportError as e:  # pyarrow there but broken: said when the writer first needs it
            fail(f"trajkit index needs a working pyarrow ({e}): pip install 'trajkit[tables]'")
            raise  # unreachable
        except OSError as e:
            fail(f"{out_dir}: cannot write the index: {e.strerror or e}")
            raise  # unreachable
    res.problems.extend(problems)
    if as_json:
        echo_json(res.to_dict())
    else:
        click.echo(
            f"{res.found:,} found, {res.skipped:,} unchanged, {res.indexed:,} indexed "
            f"({res.runs_read:,} runs read, {res.unreadable:,} unreadable) in {res.batches} batch(es), "
            f"{res.seconds:.1f}s, engine {res.engine} x{res.jobs}; index: {res.out}",
            err=True)
        for p in res.problems:
            click.echo(f"  {p}", err=True)
    sys.exit(EXIT_OK)


@index_cmd.command("status")
@click.argument("out_dir", type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def index_status_cmd(out_dir, as_json):
    """What the index in OUT_DIR holds: batches, runs, rows per table, options, leftovers."""
    from ..corpus.index import status

    import os

    if not os.path.isdir(out_dir):
        fail(f"{out_dir}: no such directory")
    st = status(out_dir)
    if not st["index"]:
        fail(f"{out_dir}: not a trajkit index (no _manifests/)")
    if as_json:
        echo_json(st)
        sys.exit(EXIT_OK)
    click.echo(f"{st['out']}: {st['runs']:,} runs ({st['unreadable']:,} unreadable) in {st['batches']} batch(es)"
               + (f", {st['superseded_batches']} superseded" if st["superseded_batches"] else "")
               + (f", {st['stray_files']} stray file(s) (a killed index; removed by the next run)" if st["stray_files"] else "")
               + ("; a writer is active" if st["writer_active"] else ""))
    for t, n in st["rows"].items():
        click.echo(f"  {t:<12} {n:>12,} rows")
    click.echo(f"  trajkit {', '.join(st['trajkit_versions']) or '-'}; options {', '.join(st['options_hashes']) or '-'}")
    sys.exit(EXIT_OK)


@index_cmd.command("compact")
@click.argument("out_dir", type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
def index_compact_cmd(out_dir, as_json):
    """Merge the batches of the index in OUT_DIR into one file per table."""
    import os

    from ..corpus.index import IndexError_, compact, status

    if not os.path.isdir(out_dir) or not status(out_dir)["index"]:
        fail(f"{out_dir}: not a trajkit index (no _manifests/)")
    try:
        doc = compact(out_dir)
    except IndexError_ as e:
        fail(str(e))
        raise  # unreachable
    if as_json:
        echo_json(doc)
    else:
        click.echo(f"{doc['out']}: {doc['batches_before']} batch(es) -> {doc['batches_after']}", err=True)
    sys.exit(EXIT_OK)


@click.command("query")
@click.argument("index_dir", type=click.Path(exists=False))
@click.argument("sql")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the rows as CSV.")
def query_cmd(index_dir, sql, as_json, as_csv):
    """Run SQL over the index in INDEX_DIR through DuckDB (the [query] extra).

    Every table is a view of its name: runs, sessions, steps, tool_calls,
    diagnostics, certificates, turns. Worked queries are in docs/index.md.
    """
    import os

    from ..corpus.index import status
    from ..corpus.query import QueryError, query

    if not os.path.isdir(index_dir) or not status(index_dir)["index"]:
        fail(f"{index_dir}: not a trajkit index (no _manifests/); build one with `trajkit index ROOT --out DIR`")
    try:
        cols, rows = query(index_dir, sql)
    except QueryError as e:
        fail(str(e))
        raise  # unreachable
    if as_json:
        echo_json([dict(zip(cols, _plain(r))) for r in rows])
    elif as_csv:
        import csv

        w = csv.writer(sys.stdout)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if v is None else v for v in _plain(r)])
    else:
        from rich.table import Table

        from ..view.safe import printable

        t = Table(show_header=True, header_style="bold")
        for c in cols:
            t.add_column(printable(c), overflow="fold")
        for r in rows:
            t.add_row(*("NULL" if v is None else printable(str(v)) for v in _plain(r)))
        out_console().print(t)
        click.echo(f"{len(rows)} row(s)", err=True)
    sys.exit(EXIT_OK)


def _plain(row) -> list:
    """DuckDB values as JSON-able Python (decimals, dates and the like as text or float)."""
    import datetime
    import decimal

    out = []
    for v in row:
        if isinstance(v, decimal.Decimal):
            v = float(v)
        elif isinstance(v, (datetime.date, datetime.datetime, datetime.time, datetime.timedelta)):
            v = str(v)
        out.append(v)
    return out


__all__ = ["EXIT_CANNOT_RUN", "EXIT_CHECK_FAILED", "index_cmd", "query_cmd"]
