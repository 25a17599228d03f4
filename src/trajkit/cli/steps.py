"""``trajkit steps``: the steps of a run at benchmark granularity, as a
table, one JSON document or JSON lines.

The verb without click: its body (:func:`steps`), a parser for its command
line (:func:`parse`) and :func:`run_parsed`, which the console entry
(:func:`trajkit.cli.run`) calls for a ``trajkit steps`` line. Its click
declaration (options, help) is :mod:`.steps_cmd`, whose callback is
:func:`steps`. :func:`parse` reads only what it is sure click reads the same
way (the value types of :data:`VALUE_OPTIONS`, the flags of
:data:`FLAG_OPTIONS`, one PATH); anything else returns None and click
parses the line, so help, usage and error messages stay click's.

On a pipe the table is drawn without rich's console (:func:`draw_steps`)."""

from __future__ import annotations

import os
import sys
from typing import Any

from ..model import ReadOptions, TrajkitError
from ._common import (
    EXIT_CHECK_FAILED,
    ctb_labels,
    echo,
    echo_json,
    fail,
    load_session,
    out_console,
    piped_width,
    print_diagnostics,
    session_targets,
)

#: The options :func:`parse` reads that take a value: name -> (parameter, type).
#: ``tests/test_cli_steps_parse.py`` checks them against :mod:`.steps_cmd`.
VALUE_OPTIONS: dict[str, tuple[str, type]] = {
    "--format": ("format_name", str),
    "--member": ("member", str),
    "--instance": ("member", str),
    "--tz": ("tz", str),
    "--max-file-bytes": ("max_file_bytes", int),
    "--view": ("view", str),
    "--expect-steps": ("expect_steps", int),
    "--ctb-id": ("ctb_id", str),
}

#: The flags :func:`parse` reads: name -> parameter.
FLAG_OPTIONS: dict[str, str] = {"--json": "as_json", "--jsonl": "as_jsonl", "--all-views": "all_views"}

#: Every parameter of :func:`steps` with its default (the click command's defaults).
DEFAULTS: dict[str, Any] = {
    "format_name": None, "member": None, "tz": None, "max_file_bytes": 1 << 30, "view": None, "as_json": False,
    "as_jsonl": False, "expect_steps": None, "ctb_row": None, "ctb_id": None, "all_views": False,
}


def parse(args: list[str]) -> dict[str, Any] | None:
    """The parameters of :func:`steps` for the command line ``args`` (after
    ``steps``), or None unless click would accept the line with these very
    values. Stricter than click on purpose: no option named twice, no value
    that starts with ``-`` or is empty, no ``--``, no option it does not
    list (``--ctb-row``, whose path click checks, and ``--help`` go to
    click), one PATH that click's ``Path(exists=False)`` accepts as it is."""
    params: dict[str, Any] = {"path": None}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if name in VALUE_OPTIONS:
                if not eq:
                    if i == len(args):
                        return None
                    value = args[i]
                    i += 1
                if not value or value.startswith("-"):
                    return None
                dest, kind = VALUE_OPTIONS[name]
                if kind is int:
                    try:
                        value = int(value)  # what click's INT does with the text
                    except ValueError:
                        return None
            elif name in FLAG_OPTIONS and not eq:
                dest, value = FLAG_OPTIONS[name], True
            else:
                return None
            if dest in params:
                return None
            params[dest] = value
        elif params["path"] is None:
            params["path"] = arg
        else:
            return None
    path = params["path"]
    if path is None or not path:
        return None
    try:
        os.stat(path)
    except OSError:
        pass
    except ValueError:
        return None
    else:
        if not os.access(path, os.R_OK):  # click.Path(readable=True) refuses it
            return None
    return {**DEFAULTS, **params}


def run_parsed(args: list[str]) -> None:
    """Run ``trajkit steps ARGS`` and exit as click's standalone mode exits,
    when :func:`parse` reads ``args``; return (for click) when it does not,
    or when the shell asks for completion (click answers that)."""
    if any(k.startswith("_") and k.endswith("_COMPLETE") and v for k, v in os.environ.items()):
        return
    params = parse(args)
    if params is None:
        return
    # what click.BaseCommand.main does around the command: ^C and EOF print
    # "Aborted!" and exit 1; a closed pipe exits 1 quietly
    exit_code = 1
    try:
        aborted = False
        try:
            steps(**params)
            exit_code = 0
        except (EOFError, KeyboardInterrupt):
            sys.stderr.write("\n")
            sys.stderr.flush()
            aborted = True
        except OSError as e:
            import errno

            if e.errno != errno.EPIPE:
                raise
            sys.stdout = _QuietFlush(sys.stdout)  # type: ignore[assignment]
            sys.stderr = _QuietFlush(sys.stderr)  # type: ignore[assignment]
        if aborted:
            sys.stderr.write("Aborted!\n")
            sys.stderr.flush()
        sys.exit(exit_code)
    except (EOFError, KeyboardInterrupt):
        sys.exit(exit_code)


class _QuietFlush:
    """A stream whose ``flush`` ignores a closed pipe (click's wrapper after
    EPIPE), so the interpreter's last flush at exit prints nothing."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as e:
            import errno

            if e.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)


def steps(path, format_name, member, tz, max_file_bytes, view, as_json, as_jsonl, expect_steps, ctb_row, ctb_id,
          all_views) -> None:
    """``trajkit steps PATH [options]``: see :mod:`.steps_cmd` for each option."""
    from .. import steps as steps_mod

    targets = session_targets(path, format_name, max_file_bytes, member)
    many = len(targets) > 1
    if many and (ctb_row or all_views):
        fail(f"{path} holds {len(targets)} sessions; --ctb-row and --all-views take one: name it as PATH#ID or with --member ID")
    docs: list[dict] = []
    mismatches: list[str] = []
    for address, detection in targets:
        session = load_session(address, format_name, max_file_bytes, detection=detection, view=view, tz=tz)
        per_view = None
        if all_views:
            from ..registry import steps_per_view

            per_view = steps_per_view(session.source_path, session.format, ReadOptions(max_file_bytes=max_file_bytes))
        row = ctb_labels(session, ctb_row, ctb_id)
        if as_json:
            doc = session.to_dict()
            if per_view is not None:
                doc["views"] = per_view
            docs.append(doc)
        elif as_jsonl:
            from ..jsonio import dumps

            head = {k: v for k, v in session.to_dict().items() if k != "steps"}
            if per_view is not None:
                head["views"] = per_view
            out = sys.stdout.buffer
            out.write(dumps(head) + b"\n")
            for s in session.steps:
                out.write(dumps(s.to_dict()) + b"\n")
            out.flush()
        else:
            if many:
                from ..view.safe import printable

                echo(printable(f"== {address}"))
            draw_steps(session, per_view)
            print_diagnostics(session, "warning")
        expected = expect_steps
        if row is not None and expected is None:
            expected = row.get("step_count")
        if expected is not None:
            try:
                steps_mod.check_step_count(session, int(expected))
            except TrajkitError as e:
                mismatches.append(str(e))
    if as_json:
        echo_json({"path": path, "sessions": docs} if many else docs[0])
    if mismatches:
        from ..view.safe import printable

        for m in mismatches:
            echo(printable(f"trajkit: {m}"), err=True)
        sys.exit(EXIT_CHECK_FAILED)


def draw_steps(session, per_view: dict[str, Any] | None) -> None:
    """The steps table of ``session`` on stdout: on a pipe or a file, the
    text rich would draw there, laid out without importing rich's console
    or building the presentation tree (:mod:`trajkit.view.plain`); on a
    terminal, or where that module cannot be sure of rich's bytes, drawn by
    rich (:func:`trajkit.view.terminal.draw_steps_table`)."""
    from ..view.plain import can_draw_plain, session_steps_parts, steps_table_text

    if can_draw_plain(sys.stdout):
        try:
            text = steps_table_text(*session_steps_parts(session, per_view), console_width=piped_width())
        except ImportError:  # a rich without the light helpers the plain layout borrows: rich draws it
            text = None
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
    from ..view.terminal import draw_steps_table, steps_table

    draw_steps_table(steps_table(session, per_view), console=out_console())
