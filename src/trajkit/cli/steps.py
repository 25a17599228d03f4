"""``trajkit steps``: the steps of a run at benchmark granularity, as a
table, one JSON document or JSON lines.

In a module of its own (see :data:`trajkit.cli.LAZY_COMMANDS`): a
``trajkit steps`` process defines only this verb, and on a pipe draws the
table without rich's console (:func:`draw_steps`)."""

from __future__ import annotations

import sys

import click

from ..model import ReadOptions, TrajkitError
from ..view.safe import printable
from ._common import (
    EXIT_CHECK_FAILED,
    ctb_labels,
    echo_json,
    fail,
    format_option,
    load_session,
    member_option,
    out_console,
    piped_width,
    print_diagnostics,
    session_addresses,
    size_option,
    tz_option,
)


@click.command("steps")
@click.argument("path", type=click.Path(exists=False))
@format_option
@member_option
@tz_option
@size_option
@click.option("--view", default=None, help="Use this on-disk view instead of the first available.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: task, view, steps, diagnostics (for a file of many sessions: {\"path\", \"sessions\": [...]}).")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="A header line, then one line per step (per session, one after the other).")
@click.option("--expect-steps", type=int, default=None, help="Exit 1 unless the run (every session, in a file of many) has exactly N steps.")
@click.option("--ctb-row", type=click.Path(exists=True), default=None, help="A CodeTraceBench manifest row (JSON, JSONL or Parquet): check step_count and attach labels.")
@click.option("--ctb-id", default=None, help="With a multi-row manifest: the traj_id / trial_name to use.")
@click.option("--all-views", is_flag=True, help="Report the step count under every view present.")
def steps_cmd(path, format_name, member, tz, max_file_bytes, view, as_json, as_jsonl, expect_steps, ctb_row, ctb_id, all_views):
    """List the steps of the run at PATH, counted as the benchmark counts them.

    PATH may be a file holding many sessions (an evaluation output.jsonl):
    each one is listed in turn; name one as PATH#ID or with --member ID."""
    from .. import steps as steps_mod

    addresses = session_addresses(path, format_name, max_file_bytes, member)
    many = len(addresses) > 1
    if many and (ctb_row or all_views):
        fail(f"{path} holds {len(addresses)} sessions; --ctb-row and --all-views take one: name it as PATH#ID or with --member ID")
    docs: list[dict] = []
    mismatches: list[str] = []
    for address in addresses:
        session = load_session(address, format_name, max_file_bytes, view=view, tz=tz)
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
            from ..view.terminal import steps_table

            if many:
                click.echo(printable(f"== {address}"))
            draw_steps(steps_table(session, per_view))
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
    for m in mismatches:
        click.echo(printable(f"trajkit: {m}"), err=True)
    if mismatches:
        sys.exit(EXIT_CHECK_FAILED)


def draw_steps(table) -> None:
    """The steps table on stdout: on a pipe or a file, the text rich would
    draw there, laid out without importing rich's console
    (:mod:`trajkit.view.plain`); on a terminal, or where that module cannot
    be sure of rich's bytes, drawn by rich."""
    from ..view.plain import can_draw_plain, steps_table_text
    from ..view.terminal import draw_steps_table, steps_table_parts

    if can_draw_plain(sys.stdout):
        try:
            text = steps_table_text(*steps_table_parts(table), console_width=piped_width())
        except ImportError:  # a rich without the light helpers the plain layout borrows: rich draws it
            text = None
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
    draw_steps_table(table, console=out_console())
