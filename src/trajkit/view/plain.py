"""The ``trajkit steps`` table drawn as text for a pipe or a file, the same
bytes rich draws there, without importing rich's console.

``rich.console`` and ``rich.table`` (with what they pull in: styles, colours,
markup, pickle, random, decimal) cost more CPU than reading a small run, and
on a pipe none of it shows: no colour, no styles, only the layout. This
module lays the table out as rich 15's ``Table`` does (column measurement,
collapsing wide columns, the ratio reduction, word wrapping with fold or
ellipsis, padding, the heavy-head box) and wraps the lines above it as
``Console.print`` wraps a ``Text``. The cell widths, word splitting and
cropping are rich's own light helpers (``rich.cells``, ``rich._wrap``,
``rich.box``), so wide and zero-width characters measure as rich measures
them.

What the table shows (:func:`steps_parts`) is taken here too, for rich's
drawing as for this one, and :func:`session_steps_parts` takes it straight
from a session, so a piped ``trajkit steps`` does not build the presentation
tree (:mod:`trajkit.view.transcript`, whose dataclasses alone cost more to
define than reading a small run).

It answers only where it is sure to match: :func:`can_draw_plain` says no
on a terminal, when an environment variable would make rich style the output
(``FORCE_COLOR``, ``TTY_COMPATIBLE``), for a non-UTF-8 stream (rich then
draws an ASCII box), and :func:`steps_table_text` returns None for texts or
widths it does not lay out (line separators other than ``\\n``, columns
narrower than their padding); the caller then draws with rich.
``tests/test_view_plain.py`` compares both over the example runs and random
tables, at many widths.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

from .safe import printable

if TYPE_CHECKING:
    from ..model import Session

#: Characters whose layout this module does not reproduce (``str.splitlines``,
#: which rich measures with, and rich's wrapping disagree on these breaks).
_UNSUPPORTED = ("\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def can_draw_plain(stream: Any, environ: Any = None) -> bool:
    """Whether rich would draw on ``stream`` without styles or colours, in UTF-8."""
    env = os.environ if environ is None else environ
    if os.name == "nt" or "FORCE_COLOR" in env or "TTY_COMPATIBLE" in env:
        return False
    try:
        if stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    encoding = (getattr(stream, "encoding", "utf-8") or "utf-8").lower()
    return encoding.startswith("utf")


# ---------------------------------------------------------------- what the table shows


def cut(text: str | None, width: int) -> str:
    """``text`` cut to ``width`` characters (the last one an ellipsis); "" for None."""
    if text is None:
        return ""
    if width and len(text) > width:
        return text[: width - 1] + "…"
    return text


def _one_line(text: str | None, width: int) -> str:
    return cut((text or "").replace("\r", "").replace("\n", "⏎ "), width)


def _short_id(event_id: Any) -> str:
    """An event id short enough for a table column (uuids cut to 8 characters)."""
    text = str(event_id)
    return text[:8] if len(text) > 12 else text


def steps_parts(header: Any, steps: Sequence[Any], labelled: bool,
                width: int = 80) -> tuple[list[str], list[tuple[str, str, str, int | None]], list[list[str]]]:
    """What the ``trajkit steps`` table shows, as printable texts: the lines
    above the table (task, view, step count), the columns as ``(header,
    justify, overflow, max_width)``, and the rows. ``header`` has the
    attributes of a :class:`~trajkit.view.transcript.Header` the lines show
    (``format``, ``source_path``, ``id``, ``view``, ``step_count``,
    ``event_count``, ``task``, ``task_source``, ``views`` as view -> step
    count); ``steps`` those of a step the rows show (``step_id``,
    ``tool_type``, ``action``, ``observation``, ``action_event_id``,
    ``observation_event_id``, ``labels``): a
    :class:`~trajkit.view.transcript.StepNode` or the
    :class:`~trajkit.model.Step` it copies. ``labelled`` adds the labels
    column."""
    h = header
    lines = [f"{h.format} {h.source_path}"]
    if h.id:
        lines.append(f"session {h.id}")
    lines.append(f"view: {h.view or '-'}   steps: {h.step_count}   events: {h.event_count}")
    if h.task:
        lines.append(f"task ({h.task_source}): {_one_line(h.task, 200)}")
    if h.views:
        lines.append("views: " + ", ".join(f"{k}={v}" for k, v in h.views.items()))
    columns: list[tuple[str, str, str, int | None]] = [
        ("#", "right", "ellipsis", None), ("tool", "left", "ellipsis", None), ("action", "left", "fold", width),
        ("observation", "left", "fold", width // 2), ("events", "left", "ellipsis", None),
    ]
    if labelled:
        columns.append(("labels", "left", "ellipsis", None))
    rows = []
    for s in steps:
        row = [str(s.step_id), s.tool_type, _one_line(s.action, width), _one_line(s.observation, width // 2),
               f"{_short_id(s.action_event_id)}→{_short_id(s.observation_event_id)}"]
        if labelled:
            row.append(",".join(s.labels))
        rows.append([printable(cell) for cell in row])
    return [printable(x) for x in lines], columns, rows


class _SessionHeader:
    """The facts of a session the steps table's lines show, as
    :func:`trajkit.view.transcript.steps_table` puts them in its header."""

    __slots__ = ("format", "source_path", "id", "view", "step_count", "event_count", "task", "task_source", "views")

    def __init__(self, session: "Session", views: dict[str, Any] | None) -> None:
        self.format, self.source_path, self.id, self.view = session.format, session.source_path, session.id, session.view
        self.step_count, self.event_count = len(session.steps), len(session.events)
        self.task, self.task_source = session.task, session.task_source
        self.views = None if views is None else {
            name: (v.get("step_count") if isinstance(v, dict) else v) for name, v in views.items()}


def session_steps_parts(session: "Session", views: dict[str, Any] | None = None,
                        width: int = 80) -> tuple[list[str], list[tuple[str, str, str, int | None]], list[list[str]]]:
    """:func:`steps_parts` of ``session`` (and ``views``, the per-view report
    of :func:`trajkit.registry.steps_per_view`, when measured): the texts of
    ``steps_table_parts(steps_table(session, views))`` straight from the
    session, without the presentation tree, whose dataclasses cost more to
    define than a small run costs to read (a piped ``trajkit steps``)."""
    return steps_parts(_SessionHeader(session, views), session.steps, any(s.labels for s in session.steps), width)


# ---------------------------------------------------------------- rich's measures


def _normalize(lo: int, hi: int) -> tuple[int, int]:
    lo = min(max(0, lo), hi)
    return max(0, lo), max(0, max(lo, hi))


def _get(lo: int, hi: int, max_width: int) -> tuple[int, int]:
    """``Measurement.get``'s treatment of a renderable's own measure."""
    lo, hi = _normalize(lo, hi)
    lo, hi = min(lo, max_width), min(hi, max_width)
    if hi < 1:
        return 0, 0
    return _normalize(lo, hi)


def _measure_cell(text: str, max_width: int, cell_len) -> tuple[int, int]:
    """A cell (its text in a one-space ``Padding`` on each side), measured in ``max_width``."""
    if max_width < 1:
        return 0, 0
    if max_width - 2 < 1:
        return _get(max_width, max_width, max_width)
    lines = text.splitlines()
    widest = max(cell_len(line) for line in lines) if lines else 0
    words = text.split()
    longest = max(cell_len(w) for w in words) if words else widest
    lo, hi = _get(longest, widest, max_width)
    return _get(min(lo + 2, max_width), min(hi + 2, max_width), max_width)


def _measure_column(cells: Sequence[str], max_width: int, column_max: int | None, cell_len) -> tuple[int, int]:
    if max_width < 1:
        return 0, 0
    ms = [_measure_cell(c, max_width, cell_len) for c in cells]
    lo = min(max(m[0] for m in ms), max_width)
    hi = min(max(m[1] for m in ms), max_width)
    if column_max is not None:
        lo, hi = min(lo, column_max + 2), min(hi, column_max + 2)
    return lo, hi


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """``rich._ratio.ratio_reduce`` (that module imports ``fractions``, which imports ``decimal``)."""
    ratios = [ratio if _max else 0 for ratio, _max in zip(ratios, maximums)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    total_remaining = total
    result: list[int] = []
    for ratio, maximum, value in zip(ratios, maximums, values):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * total_remaining / total_ratio))
            result.append(value - distributed)
            total_remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _collapse(widths: list[int], max_width: int) -> list[int]:
    """``Table._collapse_widths`` with every column wrapable."""
    total = sum(widths)
    excess = total - max_width
    while total and excess > 0:
        widest = max(widths)
        second = max((w if w != widest else 0) for w in widths)
        difference = widest - second
        ratios = [1 if w == widest else 0 for w in widths]
        if not any(ratios) or not difference:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, difference)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def _column_widths(columns: list[list[str]], maxes: list[int | None], max_width: int, cell_len) -> list[int]:
    """``Table._calculate_column_widths`` (no fixed widths, no ratios, not expanded)."""
    ranges = [_measure_column(c, max_width, m, cell_len) for c, m in zip(columns, maxes)]
    widths = [hi or 1 for _, hi in ranges]
    if sum(widths) > max_width:
        widths = _collapse(widths, max_width)
        if sum(widths) > max_width:
            widths = _ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
        widths = [_measure_column(c, w, m, cell_len)[1] or 0 for c, w, m in zip(columns, widths, maxes)]
    return widths


# ---------------------------------------------------------------- rich's wrapping


def _wrap(text: str, width: int, justify: str, overflow: str) -> list[str]:
    """``Text.wrap``: ``text`` split on newlines, tabs expanded, each line cut into
    lines of at most ``width`` cells, justified and truncated as rich does."""
    from rich._wrap import divide_line
    from rich.cells import cell_len, set_cell_size

    out: list[str] = []
    for line in text.split("\n"):
        if "\t" in line:
            line = _expand_tabs(line, cell_len)
        offsets = divide_line(line, width, fold=overflow == "fold")
        bounds = [0, *offsets, len(line)]
        pieces = [line[a:b] for a, b in zip(bounds, bounds[1:])] if offsets else [line]
        fitted = []
        for p in pieces:
            if len(p) > width:  # rstrip_end: trailing whitespace beyond the width goes
                trailing = len(p) - len(p.rstrip())
                if trailing:
                    p = p[: len(p) - min(trailing, len(p) - width)]
            fitted.append(p)
        done = []
        for p in fitted:
            if justify == "left":
                p = _truncate(p, width, overflow, cell_len, set_cell_size, pad=True)
            elif justify == "right":
                p = _truncate(p.rstrip(), width, overflow, cell_len, set_cell_size)
                p = " " * (width - cell_len(p)) + p if width - cell_len(p) > 0 else p
            elif justify != "default":
                raise ValueError(justify)
            done.append(_truncate(p, width, overflow, cell_len, set_cell_size))
        out.extend(done)
    return out


def _expand_tabs(line: str, cell_len, tab_size: int = 8) -> str:
    """``Text.expand_tabs`` of one line: each tab becomes a space, then spaces
    up to the next multiple of ``tab_size`` cells."""
    pieces = line.split("\t")
    out: list[str] = []
    position = 0
    for piece in pieces[:-1]:
        part = piece + " "
        position += cell_len(part)
        remainder = position % tab_size
        if remainder:
            part += " " * (tab_size - remainder)
            position += tab_size - remainder
        out.append(part)
    out.append(pieces[-1])
    return "".join(out)


def _truncate(text: str, width: int, overflow: str, cell_len, set_cell_size, pad: bool = False) -> str:
    length = cell_len(text)
    if length > width:
        text = set_cell_size(text, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(text, width)
    if pad and length < width:
        text = text + " " * (width - length)
    return text


def _fit(line: str, width: int, cell_len, set_cell_size, pad: bool) -> str:
    """``Segment.adjust_line_length`` of a one-segment line."""
    n = cell_len(line)
    if n < width:
        return line + " " * (width - n) if pad else line
    if n > width:
        return set_cell_size(line, width)
    return line


# ---------------------------------------------------------------- the table


def steps_table_text(lines: list[str], headers: list[tuple[str, str, str, int | None]], rows: list[list[str]],
                     console_width: int) -> str | None:
    """The text rich prints for ``lines`` (each a ``Text`` printed alone)
    and then a ``Table`` (default box, padding and edges; not expanded)
    whose columns are ``headers`` as ``(header, justify, overflow,
    max_width)`` and whose rows are ``rows``, on a console ``console_width``
    cells wide that is not a terminal. Every text must already be
    :func:`~trajkit.view.safe.printable`. None when this module cannot be
    sure to draw what rich draws (the caller draws with rich then)."""
    if console_width < 1:
        return None
    texts = [*lines, *(h[0] for h in headers), *(c for r in rows for c in r)]
    if any(ch in t for t in texts for ch in _UNSUPPORTED) or any(printable(t) != t for t in texts):
        return None
    from rich import box
    from rich.cells import cell_len, set_cell_size

    out: list[str] = []
    for text in lines:
        for line in _wrap(text, console_width, "default", "fold"):
            out.append(_fit(line, console_width, cell_len, set_cell_size, pad=False))
    columns = [[h[0], *(r[i] for r in rows)] for i, h in enumerate(headers)]
    extra = 2 + len(headers) - 1
    widths = _column_widths(columns, [h[3] for h in headers], console_width - extra, cell_len)
    if any(w < 3 for w in widths):
        return None
    heavy = box.HEAVY_HEAD
    table: list[str] = [heavy.get_top(widths)]
    for n, cells in enumerate(zip(*columns)):
        rendered = []
        for cell, w, (_, justify, overflow, _) in zip(cells, widths, headers):
            child = w - 2
            rendered.append([" " + _fit(x, child, cell_len, set_cell_size, pad=True) + " "
                             for x in _wrap(cell, child, justify, overflow)])
        height = max(len(c) for c in rendered)
        for i, (c, w) in enumerate(zip(rendered, widths)):
            blank = [" " * w] * (height - len(c))
            rendered[i] = blank + c if n == 0 else c + blank  # the header row sits at the bottom
        edge, divider = (heavy.head_left, heavy.head_vertical) if n == 0 else (heavy.mid_left, heavy.mid_vertical)
        right = heavy.head_right if n == 0 else heavy.mid_right
        if n and n == len(rows):  # the last row draws with the foot's sides
            edge, divider, right = heavy.foot_left, heavy.foot_vertical, heavy.foot_right
        for k in range(height):
            table.append(edge + divider.join(c[k] for c in rendered) + right)
        if n == 0:
            table.append(heavy.get_row(widths, "head", edge=True))
    table.append(heavy.get_bottom(widths))
    out.extend(_fit(t, console_width, cell_len, set_cell_size, pad=False) for t in table)
    return "".join(line + "\n" for line in out)
