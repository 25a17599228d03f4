"""The ``trajkit`` command line: one verb per library function.

Core verbs (detect, steps, show, normalize) live here. Verbs of other areas
live in ``trajkit/commands/<area>.py`` and are listed in :data:`LAZY_COMMANDS`,
imported only when used so ``trajkit --help`` stays fast.

Exit codes, for every verb: 0 done; 1 done but a check failed (a step-count
gate, a verification); 2 could not run (bad usage, nothing readable at the
path, ambiguous format).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

from . import __version__
from .model import DetectionError, ReadOptions, Session, TrajkitError

#: verb -> "module:attribute" of a click command, imported on first use.
LAZY_COMMANDS: dict[str, str] = {
    "verify": "trajkit.commands.export:verify_cmd",
    "convert": "trajkit.commands.export:convert_cmd",
    "turns": "trajkit.commands.rl:turns_cmd",
    "proxy": "trajkit.commands.rl:proxy_cmd",
    "ls": "trajkit.commands.sdk:ls_cmd",
    "context": "trajkit.commands.sdk:context_cmd",
    "certify": "trajkit.commands.certify:certify_cmd",
    "fcr": "trajkit.commands.certify:fcr_cmd",
}

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_CANNOT_RUN = 2


class LazyGroup(click.Group):
    """A click group whose area verbs are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in LAZY_COMMANDS:
            return cmd
        mod, _, attr = LAZY_COMMANDS[name].partition(":")
        return getattr(importlib.import_module(mod), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="trajkit")
def main() -> None:
    """Read, step through, export, certify and train from coding-agent runs."""


# ---------------------------------------------------------------- shared helpers

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
    from .jsonio import dumps

    sys.stdout.buffer.write(dumps(obj, indent=indent) + b"\n")
    sys.stdout.flush()


def fail(message: str, code: int = EXIT_CANNOT_RUN) -> None:
    """Print an error to stderr and exit with ``code``."""
    click.echo(f"trajkit: {message}", err=True)
    sys.exit(code)


def load_session(path: str, format_name: str | None = None, max_file_bytes: int = 1 << 30, **opts: Any) -> Session:
    """Read a session for a verb, exiting with a clear message when nothing can be read."""
    from .registry import read

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


# ---------------------------------------------------------------- detect

@main.command("detect")
@click.argument("path", type=click.Path(exists=False))
@click.option("--why", is_flag=True, help="Show every format and fingerprint considered.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def detect_cmd(path: str, why: bool, as_json: bool) -> None:
    """Say which format PATH holds (a run, or any path inside one)."""
    from .registry import detect

    det = detect(path, exhaustive=why)
    if as_json:
        echo_json(det.to_dict())
    else:
        if det.format is None:
            click.echo(f"{path}: no known format")
        else:
            amb = "  (AMBIGUOUS)" if det.ambiguous else ""
            click.echo(f"{det.format.name}\t{det.match.root}\tfingerprint {det.match.fingerprint!r}{amb}")
        if why:
            for c in det.considered:
                extra = f" -> {c.root} ({c.strength}; {c.reason})" if c.outcome == "match" else (f" ({c.reason})" if c.reason else "")
                click.echo(f"  considered {c.format} [priority {c.priority}] at {c.path}: fingerprint {c.fingerprint!r} {c.outcome}{extra}")
    if det.format is None:
        sys.exit(EXIT_CANNOT_RUN)
    if det.ambiguous:
        sys.exit(EXIT_CHECK_FAILED)


# ---------------------------------------------------------------- steps

@main.command("steps")
@click.argument("path", type=click.Path(exists=True))
@format_option
@tz_option
@size_option
@click.option("--view", default=None, help="Use this on-disk view instead of the first available.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: task, view, steps, diagnostics.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="A header line, then one line per step.")
@click.option("--expect-steps", type=int, default=None, help="Exit 1 unless the run has exactly N steps.")
@click.option("--ctb-row", type=click.Path(exists=True), default=None, help="A CodeTraceBench manifest row (JSON, JSONL or Parquet): check step_count and attach labels.")
@click.option("--ctb-id", default=None, help="With a multi-row manifest: the traj_id / trial_name to use.")
@click.option("--all-views", is_flag=True, help="Report the step count under every view present.")
def steps_cmd(path, format_name, tz, max_file_bytes, view, as_json, as_jsonl, expect_steps, ctb_row, ctb_id, all_views):
    """List the steps of the run at PATH, counted as the benchmark counts them."""
    from . import steps as steps_mod

    session = load_session(path, format_name, max_file_bytes, view=view, tz=tz)
    per_view = None
    if all_views:
        per_view = steps_mod.steps_per_view(session.source_path, session.format, ReadOptions(max_file_bytes=max_file_bytes))
    row = None
    if ctb_row:
        from .bench.ctb import apply_ctb_labels, load_manifest_row

        try:
            row = load_manifest_row(ctb_row, ctb_id, session=session)
        except TrajkitError as e:
            fail(str(e))
        apply_ctb_labels(session, row)
    if as_json:
        doc = session.to_dict()
        if per_view is not None:
            doc["views"] = per_view
        echo_json(doc)
    elif as_jsonl:
        from .jsonio import dumps

        head = {k: v for k, v in session.to_dict().items() if k != "steps"}
        if per_view is not None:
            head["views"] = per_view
        out = sys.stdout.buffer
        out.write(dumps(head) + b"\n")
        for s in session.steps:
            out.write(dumps(s.to_dict()) + b"\n")
        out.flush()
    else:
        from .view.terminal import print_steps_table

        print_steps_table(session, per_view)
        print_diagnostics(session, "warning")
    expected = expect_steps
    if row is not None and expected is None:
        expected = row.get("step_count")
    if expected is not None:
        try:
            steps_mod.check_step_count(session, int(expected))
        except TrajkitError as e:
            fail(str(e), EXIT_CHECK_FAILED)


# ---------------------------------------------------------------- show

@main.command("show")
@click.argument("path", type=click.Path(exists=True))
@format_option
@tz_option
@size_option
@click.option("--view", default=None, help="Use this on-disk view instead of the first available.")
@click.option("--width", type=int, default=400, show_default=True, help="Cut long texts to this many characters (0: never).")
def show_cmd(path, format_name, tz, max_file_bytes, view, width):
    """Print the run at PATH as a readable transcript."""
    from .view.terminal import print_session

    session = load_session(path, format_name, max_file_bytes, view=view, tz=tz)
    print_session(session, width=width)


# ---------------------------------------------------------------- normalize

@main.command("normalize")
@click.argument("path", type=click.Path(exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write steps.json and task.md into.")
@format_option
@tz_option
@size_option
@click.option("--view", default=None)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def normalize_cmd(path, out_dir, format_name, tz, max_file_bytes, view, as_json):
    """Write CodeTracer-compatible steps.json and task.md for the run at PATH."""
    from .export.codetracer import write_normalized

    session = load_session(path, format_name, max_file_bytes, view=view, tz=tz)
    written = write_normalized(session, Path(out_dir))
    if as_json:
        echo_json({"written": [str(p) for p in written], "step_count": len(session.steps), "view": session.view})
    else:
        for p in written:
            click.echo(str(p))


def run() -> None:  # pragma: no cover - console entry
    main()


if __name__ == "__main__":  # pragma: no cover
    main()
