"""The terminal back-end: the presentation tree of :mod:`trajkit.view.transcript`
drawn through ``rich`` (``trajkit show`` and the ``trajkit steps`` table).

Output degrades to plain text when stdout is not a terminal (no colour codes
in pipes, ``COLUMNS`` or 80 columns wide). Long texts
are cut to a width here, never in the tree.

Agent output is hostile: every text that comes from the run (ids, types,
paths, tasks, actions, observations, diagnostics) reaches rich as a
``Text`` object, never as console markup, so ``[/x]`` in a task cannot crash
the table, ``[red]`` cannot restyle it and ``:smile:`` stays as written.
Only the styles trajkit itself adds are styles. Terminal escapes in that
text (OSC 52 clipboard writes, title changes, clear-screen) are shown as
escapes, never obeyed (:mod:`trajkit.view.safe`).
"""

from __future__ import annotations

import sys
from typing import Any

from ..model import Session
from .plain import cut, steps_parts
from .safe import printable
from .transcript import StepsTable, Transcript, steps_table, transcript


def _console():
    import os

    from rich.console import Console

    # Piped: COLUMNS, else 80 (rich would take the width of a terminal on stderr).
    env = os.environ.get("COLUMNS", "")
    piped = int(env) if env.isdigit() and int(env) > 0 else 80
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else piped)


def _text(*parts: Any):
    """A rich ``Text`` of ``parts``: strings as written, ``(string, style)``
    pairs styled. Never parsed as markup or emoji codes; control characters
    and lone surrogates are shown escaped (:func:`~trajkit.view.safe.printable`),
    never sent to the terminal."""
    from rich.text import Text

    return Text.assemble(*(printable(p) if isinstance(p, str) else (printable(p[0]), *p[1:]) for p in parts))


def _block(text: str | None, width: int, indent: str) -> str:
    """``text`` cut to ``width`` characters, every line indented by ``indent``."""
    return "\n".join(indent + line for line in cut(text, width).splitlines() or [""])


# ---------------------------------------------------------------- steps table


def steps_table_parts(table: StepsTable, width: int = 80) -> tuple[list[str], list[tuple[str, str, str, int | None]], list[list[str]]]:
    """What the steps table shows, as printable texts: the lines above the
    table (task, view, step count), the columns as ``(header, justify,
    overflow, max_width)``, and the rows (:func:`~trajkit.view.plain.steps_parts`
    of the table's header and steps). :func:`draw_steps_table` draws them
    with rich; :func:`~trajkit.view.plain.steps_table_text` draws the same
    bytes without rich's console, for a pipe."""
    return steps_parts(table.header, table.steps, table.labelled, width)


def draw_steps_table(table: StepsTable, width: int = 80, console: Any = None) -> None:
    """The steps as a table, with the task, view and step count above it."""
    lines, columns, rows = steps_table_parts(table, width)
    draw_table(lines, columns, rows, console or _console(), bold=len(printable(table.header.format)))


def draw_table(lines: list[str], columns: list[tuple[str, str, str, int | None]], rows: list[list[str]], console: Any,
               bold: int = 0) -> None:
    """``lines`` (the first ``bold`` characters of the first one in bold),
    then a table of ``columns`` (``(header, justify, overflow, max_width)``)
    and ``rows``, drawn with rich on ``console``. Texts are printable
    already and reach rich as ``Text``, never as markup."""
    from rich.table import Table
    from rich.text import Text

    for i, line in enumerate(lines):
        console.print(Text.assemble((line[:bold], "bold"), line[bold:]) if i == 0 and bold else Text(line))
    t = Table(show_lines=False, expand=False)
    for header, justify, overflow, max_width in columns:
        kw: dict[str, Any] = {"justify": justify} if justify != "left" else {}
        if overflow != "ellipsis":
            kw["overflow"] = overflow
        if max_width is not None:
            kw["max_width"] = max_width
        t.add_column(header, **kw)
    for row in rows:
        t.add_row(*(Text(cell) for cell in row))
    console.print(t)


def print_steps_table(session: Session, per_view: dict[str, Any] | None = None, width: int = 80) -> None:
    """``session``'s steps table (see :func:`draw_steps_table`); ``per_view``
    is :func:`trajkit.registry.steps_per_view`'s report, when measured."""
    draw_steps_table(steps_table(session, per_view), width)


# ---------------------------------------------------------------- transcript


def draw_transcript(tree: Transcript, width: int = 400, indent: str = "", console: Any = None) -> None:
    """The transcript: header and task, each event in order with steps
    marked, then the sub-agents (under the step that spawned them, then the
    unattached ones), then the diagnostics."""
    con = console or _console()
    h = tree.header
    con.print(_text(indent, (h.format, "bold"), f" {h.id or ''}  ({h.source_path})"))
    if h.facts:
        con.print(_text(indent + "  ".join(f"{k}={v}" for k, v in h.facts)))
    if h.task:
        con.print(_text(indent, ("task", "bold"), f" ({h.task_source}):"))
        con.print(_text(_block(h.task, width, indent + "  ")))
    cost = ""
    if h.cost is not None:
        cost = f", cost ${h.cost:.4f}" + (" (estimated from the price table)" if h.cost_estimated else "")
    con.print(_text(f"{indent}{h.event_count} events, {h.step_count} steps, {h.diagnostic_count} diagnostics{cost}"))
    con.rule()
    for e in tree.events:
        step = e.step
        head = f"{indent}#{e.id} {e.kind}:{e.type}" + (f" ({e.source})" if e.source else "")
        if e.off_branch:
            head += f" [{e.branch} branch]"
        if step:
            con.print(_text(head, " ", (f"step {step.step_id}", "bold cyan"), " "))
            if step.thinking:
                con.print(_text(_block("thought: " + step.thinking, width, indent + "  ")))
            con.print(_text(_block("$ " + step.action, width, indent + "  ")))
        else:
            con.print(_text(head))
            if e.text:
                con.print(_text(_block(e.text, width, indent + "  ")))
            for c in e.calls:
                con.print(_text(f"{indent}  call {c.name}({cut(str(c.arguments), width)})"))
    for s in tree.steps:
        for sub in s.sub_agents:
            said = f" (matched by {sub.method}: {sub.detail or ''})" if sub.method else ""
            con.rule(_text(f"sub-agent of step {s.step_id}{said}"))
            draw_transcript(sub.transcript, width, indent + "    ", con)
    for sub in tree.sub_agents:
        con.rule(_text("sub-agent"))
        draw_transcript(sub.transcript, width, indent + "    ", con)
    if tree.diagnostics:
        con.rule(_text("diagnostics"))
        for d in tree.diagnostics:
            con.print(_text(indent + d.text))


def print_session(session: Session, width: int = 400) -> None:
    """``session`` as a transcript (see :func:`draw_transcript`)."""
    draw_transcript(transcript(session), width)
