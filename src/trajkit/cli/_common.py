"""What every verb shares: exit codes, JSON output, failing with a message,
loading a session, printing diagnostics, and the one place where the rich
Console and Progress bars are built (the shared click options are in
:mod:`._options`).

Neither rich nor click is imported here at module level: rich only inside
:func:`console` and :func:`progress`, on first use, so a verb that prints no
table or bar never loads it; click only where :func:`echo` cannot write what
``click.echo`` would write (a stream without a proper encoding), so the
``trajkit steps`` process the console entry parses by hand
(:func:`trajkit.cli.run`) never loads click.
"""

from __future__ import annotations

import sys
from typing import Any

from ..model import DetectionError, ReadOptions, Session, TrajkitError

#: Exit codes, for every verb: 0 done; 1 done but a check failed (a step-count
#: gate, a verification); 2 could not run (bad usage, nothing readable at the
#: path, ambiguous format).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_CANNOT_RUN = 2


def echo(line: str, err: bool = False) -> None:
    """``click.echo(line, err=err)`` for a line of printable text
    (:func:`~trajkit.view.safe.printable`: no escape sequence for click to
    strip): written and flushed as click writes it. A stream click would
    re-wrap (no encoding or errors, or ASCII: see ``click._compat``) goes
    through click itself."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    if not _proper_text_stream(stream):
        import click

        click.echo(line, err=err)
        return
    stream.write(line + "\n")
    stream.flush()


def _proper_text_stream(stream: Any) -> bool:
    """Whether click writes to ``stream`` as it is: a text stream with an
    encoding and an error handler, the encoding not ASCII."""
    import codecs

    encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
    if not encoding or errors is None or not hasattr(stream, "buffer"):
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return True


def echo_json(obj: Any, indent: bool = True) -> None:
    """Write a JSON document to stdout."""
    from ..jsonio import dumps

    sys.stdout.buffer.write(dumps(obj, indent=indent) + b"\n")
    sys.stdout.flush()


def fail(message: str, code: int = EXIT_CANNOT_RUN) -> None:
    """Print an error to stderr (control characters escaped) and exit with ``code``."""
    from ..view.safe import printable

    echo(f"trajkit: {printable(message)}", err=True)
    sys.exit(code)


def _address(path: str, member: str | None) -> str:
    return f"{path}#{member}" if member is not None else path


def _check_exists(path: str) -> None:
    import os

    from ..registry import split_member

    if not os.path.exists(split_member(path)[0]):
        fail(f"{path}: no such file or directory")


def load_session(path: str, format_name: str | None = None, max_file_bytes: int = 1 << 30, member: str | None = None,
                 detection: Any = None, **opts: Any) -> Session:
    """Read a session for a verb, exiting with a clear message when nothing
    can be read. ``detection``: what :func:`session_targets` found at ``path``
    (not detected again)."""
    from ..registry import read, root_for

    path = _address(path, member)
    _check_exists(path)
    try:
        if format_name is not None:
            # a named format reads without detection; a path inside the run
            # still finds the run's root, as that format alone sees it
            path = root_for(path, format_name)
        return read(path, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes, **opts), detection=detection)
    except (DetectionError, TrajkitError) as e:
        fail(str(e))
        raise  # unreachable


def session_addresses(path: str, format_name: str | None = None, max_file_bytes: int = 1 << 30,
                      member: str | None = None) -> list[str]:
    """The sessions a verb runs over at ``path``: every member of a container
    file (``output.jsonl``, ``opencode.db``) unless one is named, else the
    one run. Exits 2 when nothing there can be read."""
    return [address for address, _ in session_targets(path, format_name, max_file_bytes, member)]


def session_targets(path: str, format_name: str | None = None, max_file_bytes: int = 1 << 30,
                    member: str | None = None) -> list[tuple[str, Any]]:
    """:func:`session_addresses`, each with the detection to hand to
    :func:`load_session` (the one made at ``path`` when it holds a single
    session, else None), so the run is not detected twice."""
    from ..registry import members_detected, root_for

    path = _address(path, member)
    _check_exists(path)
    try:
        if format_name is not None:
            path = root_for(path, format_name)
        addresses, det = members_detected(path, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes))
    except (DetectionError, TrajkitError) as e:
        fail(str(e))
        raise  # unreachable
    return [(a, det if a == path else None) for a in addresses]


def ctb_labels(session: Session, ctb_row: str | None, ctb_id: str | None) -> dict[str, Any] | None:
    """Attach the labels of a CodeTraceBench manifest row (``--ctb-row``,
    ``--ctb-id``) to the session's steps; the row, or None without one. A
    row that cannot be used is a could-not-run."""
    if not ctb_row:
        return None
    from ..bench.ctb import apply_ctb_labels, load_manifest_row

    try:
        row = load_manifest_row(ctb_row, ctb_id, session=session)
    except TrajkitError as e:
        fail(str(e))
    apply_ctb_labels(session, row)
    return row


def print_diagnostics(session: Session, min_severity: str = "info") -> None:
    """Diagnostics to stderr, one per line (control characters escaped: they quote run data)."""
    from ..view.safe import printable

    order = {"info": 0, "warning": 1, "error": 2}
    for s in session.walk():
        for d in s.diagnostics:
            if order.get(d.severity, 0) >= order[min_severity]:
                echo(printable(str(d)), err=True)


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


def piped_width() -> int:
    """How wide text output is when stdout is not a terminal: ``COLUMNS``, or 80."""
    import os

    env = os.environ.get("COLUMNS", "")
    return int(env) if env.isdigit() and int(env) > 0 else 80


def out_console(width: int | None = None, **kw: Any):
    """The rich console for a verb's text output on stdout. On a terminal it
    is the terminal's width; piped, it is ``COLUMNS`` (or 80), never wider;
    ``width`` caps it further."""
    cols: int | None = None
    if not sys.stdout.isatty():
        cols = piped_width()
    if width:
        cols = min(cols or console(**kw).width, width)
    return console(highlight=False, width=cols, **kw)


def _may_be_terminal(stream: Any) -> bool:
    """False when rich would certainly not call ``stream`` a terminal: it is no
    TTY and neither ``FORCE_COLOR`` nor ``TTY_COMPATIBLE`` says otherwise."""
    import os

    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class LiveProgress:
    """A transient progress display on stderr, shown only when stderr is a
    terminal (so piped or redirected output never holds it), drawn from its
    first moment: ``status(text)`` while a count is not known yet, then
    ``start(total, text)`` and ``update(done)``. ``rate``: also the items per
    second and the time remaining; ``quiet``: nothing at all."""

    def __init__(self, rate: bool = False, quiet: bool = False, unit: str = "runs") -> None:
        # rich is asked (and imported) only when stderr may be a terminal: not with --quiet, nor for a
        # stderr that is no TTY when no variable makes rich call it one (a re-index of an unchanged
        # corpus is over in a fraction of a second; importing rich.console was a tenth of it)
        self.console = None if quiet or not _may_be_terminal(sys.stderr) else console(stderr=True)
        self.enabled = self.console is not None and self.console.is_terminal
        self.rate = rate
        self.unit = unit
        self._p = None
        self._task = None

    def __enter__(self) -> "LiveProgress":
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
            if self.rate:
                unit = self.unit

                class Rate(TextColumn):
                    def render(self, task):  # items per second since the bar started; "…" before the first
                        from rich.text import Text

                        speed = task.finished_speed or task.speed
                        return Text(f"{speed:,.1f} {unit}/s" if speed else f"- {unit}/s")

                columns += [Rate(""), TextColumn("ETA"), TimeRemainingColumn()]
            self._p = Progress(*columns, console=self.console, transient=True, refresh_per_second=4, speed_estimate_period=10)
            self._p.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._p is not None:
            self._p.stop()

    def status(self, text: str) -> None:
        if self._p is not None:
            if self._task is None:
                self._task = self._p.add_task(text, total=None)
            else:
                self._p.update(self._task, description=text, total=None)
            self._p.refresh()

    def start(self, total: int, text: str) -> None:
        if self._p is not None:
            if self._task is None:
                self._task = self._p.add_task(text, total=total)
            else:
                self._p.reset(self._task, total=total, description=text)
            self._p.refresh()

    def update(self, done: int, total: int | None = None, text: str | None = None) -> None:
        if self._p is not None and self._task is not None:
            kw: dict[str, Any] = {"completed": done}
            if total is not None:
                kw["total"] = total
            if text is not None:
                kw["description"] = text
            self._p.update(self._task, **kw)


def warn_secrets(found: list[dict[str, Any]], limit: int = 10) -> None:
    """``secret.detected`` warnings on stderr: kind and place, never the value."""
    if not found:
        return
    import click  # the places are file paths as written: click strips what it strips

    kinds: dict[str, int] = {}
    for f in found:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    summary = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
    click.echo(f"trajkit: warning: {len(found)} secret(s) in the output ({summary}); "
               "pass --redact-secrets to replace them", err=True)
    for f in found[:limit]:
        where = [f["file"]]
        if f.get("line") is not None:
            where[0] += f":{f['line']}"
        for key in ("entry", "event_id", "step", "pointer", "offset"):
            if f.get(key) is not None:
                where.append(f"{key} {f[key]}")
        click.echo(f"  warning[secret.detected] {f['kind']} in {', '.join(map(str, where))}", err=True)
    if len(found) > limit:
        click.echo(f"  … and {len(found) - limit} more", err=True)
