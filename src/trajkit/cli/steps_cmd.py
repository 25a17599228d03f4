"""``trajkit steps`` as a click command: its options and help. The verb's
body is :func:`trajkit.cli.steps.steps`, which the console entry also runs
without click when :func:`trajkit.cli.steps.parse` reads the command line
(``tests/test_cli_steps_parse.py`` checks the two agree)."""

from __future__ import annotations

import click

from ._options import format_option, member_option, size_option, tz_option, view_option
from .steps import steps


@click.command("steps")
@click.argument("path", type=click.Path(exists=False))
@format_option
@member_option
@tz_option
@size_option
@view_option
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
    steps(path, format_name, member, tz, max_file_bytes, view, as_json, as_jsonl, expect_steps, ctb_row, ctb_id, all_views)
