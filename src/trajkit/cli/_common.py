"""What every verb shares: exit codes, common options, JSON output, failing
with a message, loading a session, printing diagnostics, and the one place
where the rich Console and Progress bars are built.

rich is imported only inside :func:`console` and :func:`progress`, on first
use, so a verb that prints no table or bar never loads it.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..model import DetectionError, ReadOptions, Session, TrajkitError

#: Exit codes, for every verb: 0 done; 1 done but a check failed (a step-count
#: gate, a verification); 2 could not run (bad usage, nothing readable at the
#: path, ambiguous format).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_CANNOT_RUN = 2


def size_option(f):
    return click.option(
        "--max-file-bytes",
        type=int,
        default=1 << 30,
        show_default=True,
        help="Files larger than this are reported, not read.",
    )(f)


def format_option(f):
    return click.option("--format", "format_name", default=None, help="Read as this format instead of detecting it.")(f)


def tz_option(f):
    return click.option("--tz", default=None, help="IANA zone for formats that write naive local timestamps (e.g. Europe/Paris).")(f)


def echo_json(obj: Any, indent: bool = True) -> None:
    """Write a JSON document to stdout."""
    from ..jsonio import dumps

    sys.stdout.buffer.write(dumps(obj, indent=indent) + b"\n")
    sys.stdout.flush()


def fail(message: str, code: int = EXIT_CANNOT_RUN) -> None:
    """Print an error to stderr and exit with ``code``."""
    click.echo(f"trajkit: {message}", err=True)
    sys.exit(code)


def load_session(path: str, format_name: str | None = None, max_file_bytes: int = 1 << 30, **opts: Any) -> Session:
    """Read a session for a verb, exiting with a clear message when nothing can be read."""
    from ..registry import read

    try:
        return read(path, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes, **opts))
    except (DetectionError, TrajkitError) as e:
        fail(str(e))
        raise  # unreachable


def print_diagnostics(session: Session, min_severity: str = "info") -> None:
    """Diagnostics to stderr, one per line."""
    order = {"info": 0, "warning": 1, "error": 2}
    for s in session.walk():
        for d in s.diagnostics:
            if order.get(d.severity, 0) >= order[min_severity]:
                click.echo(str(d), err=True)


def console(stderr: bool = False, **options: Any):
    """A rich ``Console`` on stdout (or stderr); ``options`` go to rich as they are."""
    from rich.console import Console

    return Console(stderr=stderr, **options)


def progress(label: str | None, out, elapsed: bool = False, **options: Any):
    """A transient rich ``Progress`` drawn on the console ``out``.

    With a ``label`` (a rich format string such as ``"{task.description}"``)
    the bar shows the label, a bar and done/total (and the elapsed time when
    ``elapsed``); without one, rich's default columns. ``options`` (e.g.
    ``disable``) go to rich as they are.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if label is None:
        return Progress(console=out, transient=True, **options)
    columns = [TextColumn(label), BarColumn(), MofNCompleteColumn()]
    if elapsed:
        columns.append(TimeElapsedColumn())
    return Progress(*columns, console=out, transient=True, **options)
