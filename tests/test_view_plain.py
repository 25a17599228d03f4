"""The steps table drawn without rich's console (trajkit.view.plain) is the
text rich draws on a pipe, byte for byte.

The expected text is always rich's own rendering of the same table
(``trajkit.view.terminal.draw_steps_table`` / ``draw_table`` on a console
that is not a terminal), so the two back-ends are compared, never a stored
copy: over every built-in format's example runs and the shared corpus at
many widths, and over random tables of hostile text (wide CJK and emoji,
combining marks, long words, runs of spaces, empty cells, markup-looking
brackets) at random widths.
"""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import pytest

from trajkit.registry import formats, read
from trajkit.view.plain import can_draw_plain, session_steps_parts, steps_table_text
from trajkit.view.terminal import draw_steps_table, draw_table, steps_table_parts
from trajkit.view.transcript import steps_table

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "corpus"
WIDTHS = (12, 33, 40, 57, 80, 99, 160)


def _rich(draw, width: int) -> str:
    from rich.console import Console

    con = Console(file=io.StringIO(), highlight=False, width=width, _environ={})
    draw(con)
    return con.file.getvalue()


def _runs() -> list[Path]:
    runs = [Path(e) for f in formats() for e in f.examples]
    runs += sorted(p for p in (REPO / "examples").iterdir() if not p.name.startswith("."))
    if SHARED.is_dir():
        runs += sorted(p for d in sorted(SHARED.iterdir()) if d.is_dir() for p in sorted(d.iterdir())
                       if not p.name.startswith(".") and p.suffix != ".md")[:60]
    return runs


def _sessions():
    out = []
    for run in _runs():
        try:
            session = read(run)
        except Exception:  # not one run (a container of several, a folder of notes): not a table to draw
            continue
        out.append((run, session))
    return out


_SESSIONS = _sessions()
_TABLES = [(run, steps_table(session)) for run, session in _SESSIONS]


def test_runs_were_found():
    assert len(_TABLES) >= 20
    assert any(t.steps for _, t in _TABLES)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_run_draws_as_rich_draws_it(width):
    drawn = 0
    for run, table in _TABLES:
        text = steps_table_text(*steps_table_parts(table), console_width=width)
        expected = _rich(lambda con: draw_steps_table(table, console=con), width)
        if text is None:  # this module declines (columns too narrow): the CLI uses rich
            continue
        assert text == expected, f"{run} at width {width}"
        drawn += 1
    # the plain text is what the CLI uses, so it must answer for nearly every run at usual widths
    if width >= 80:
        assert drawn == len(_TABLES)
    elif width >= 33:
        assert drawn >= len(_TABLES) // 2


_ALPHABET = (
    ["a", "b", "x", "Z", "0", "7", "\t", "-", "_", "/", ".", "(", ")", "{", "}", "\"", ":", ",", "[red]", "[/x]", ":smile:"]
    + [" "] * 8 + ["  ", "\u00a0", "\u3000"]
    + ["漢", "字", "한", "😀", "👍🏽", "e\u0301", "\u200b", "⏎", "→", "…", "ﬁ", "Ω", "\u0627\u0644"]
)


def _word(rng: random.Random) -> str:
    n = rng.choice((0, 1, 2, 3, 5, 8, 13, 40, 90))
    return "".join(rng.choice(_ALPHABET) for _ in range(n))


def _text(rng: random.Random) -> str:
    return " ".join(_word(rng) for _ in range(rng.choice((0, 1, 2, 4, 9, 25))))


@pytest.mark.parametrize("seed", range(24))
def test_random_tables_draw_as_rich_draws_them(seed):
    rng = random.Random(seed)
    drawn = 0
    for _ in range(25):
        ncols = rng.choice((1, 2, 5, 6))
        # headers are trajkit's own words (rich reads a str header as markup)
        columns = [(rng.choice(("#", "tool", "observation", "a much longer header", "漢字")), rng.choice(("left", "right")), rng.choice(("fold", "ellipsis")),
                    rng.choice((None, None, 4, 20, 40, 80))) for _ in range(ncols)]
        rows = [[_text(rng) for _ in range(ncols)] for _ in range(rng.choice((0, 1, 3, 8)))]
        lines = [_text(rng) for _ in range(rng.choice((0, 1, 3)))]
        width = rng.choice((8, 15, 24, 40, 61, 80, 133, 200))
        text = steps_table_text(lines, columns, rows, console_width=width)
        if text is None:
            continue
        assert text == _rich(lambda con: draw_table(lines, columns, rows, con), width), (seed, width, columns, rows, lines)
        drawn += 1
    assert drawn >= 5  # most random tables are drawn, not declined


@pytest.mark.parametrize("width", (40, 80, 200))
def test_the_parts_taken_from_a_session_are_the_parts_of_its_steps_table(width):
    """A piped ``trajkit steps`` takes the table's texts straight from the
    session (no presentation tree): the same texts as the tree's, with and
    without a per-view report, with and without labels."""
    import copy

    views = {"events": {"step_count": 4, "present": True}, "flat_export": 3, "cache": None}
    labelled = 0
    for run, session in _SESSIONS:
        for v in (None, {}, views):
            assert session_steps_parts(session, v, width) == steps_table_parts(steps_table(session, v), width), run
        if session.steps:
            tagged = copy.deepcopy(session)
            for i, st in enumerate(tagged.steps[:3]):
                st.labels = [[f"stage-{i}"], ["stage-1", "x\x1b[31m"], []][i]
            parts = session_steps_parts(tagged, views, width)
            assert parts == steps_table_parts(steps_table(tagged, views), width), run
            assert parts[1][-1][0] == "labels"
            labelled += 1
    assert labelled >= 10


def test_declines_what_it_does_not_lay_out():
    columns = [("#", "right", "ellipsis", None), ("text", "left", "fold", 80)]
    assert steps_table_text([], columns, [["1", "x\u2028y"]], 80) is None  # a line break only splitlines sees
    assert steps_table_text([], columns, [["1", "\x1b[2J"]], 80) is None  # not printable() yet
    assert steps_table_text([], columns, [["1", "abc"]], 4) is None  # columns narrower than their padding
    assert steps_table_text([], columns, [["1", "abc"]], 80) is not None


def test_plain_only_where_rich_would_not_style():
    class Stream(io.StringIO):
        def __init__(self, tty: bool, encoding: str | None = "utf-8"):
            super().__init__()
            self._tty, self._enc = tty, encoding

        def isatty(self):
            return self._tty

        @property
        def encoding(self):
            return self._enc

    assert can_draw_plain(Stream(False), {})
    assert can_draw_plain(Stream(False, None), {})  # rich takes a missing encoding as utf-8
    assert not can_draw_plain(Stream(True), {})
    assert not can_draw_plain(Stream(False, "latin-1"), {})  # rich draws an ASCII box there
    assert not can_draw_plain(Stream(False), {"FORCE_COLOR": "1"})
    assert not can_draw_plain(Stream(False), {"TTY_COMPATIBLE": "1"})


def test_cli_table_on_a_pipe_imports_no_rich_console():
    """``trajkit steps`` on a pipe prints the table without importing
    rich's console, and prints what rich prints (the table test above)."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['trajkit', 'steps', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('trajkit', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(repr(sorted(m for m in sys.modules if m.startswith('rich'))))\n"
    )
    run = REPO / "examples" / "openhands-v0-trial"
    p = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, cwd=REPO,
                       env={"PATH": "", "PYTHONPATH": str(REPO / "src"), "COLUMNS": "80", "PYTHONDONTWRITEBYTECODE": "1"})
    assert p.returncode == 0, p.stderr
    loaded = eval(p.stderr.strip().splitlines()[-1])
    assert "rich.console" not in loaded and "rich.table" not in loaded
    # nor the presentation tree: the texts come straight from the session
    code = code.replace("m.startswith('rich')", "m.startswith(('rich', 'trajkit.view'))")
    p2 = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, cwd=REPO,
                        env={"PATH": "", "PYTHONPATH": str(REPO / "src"), "COLUMNS": "80", "PYTHONDONTWRITEBYTECODE": "1"})
    views = [m for m in eval(p2.stderr.strip().splitlines()[-1]) if m.startswith("trajkit.view")]
    assert sorted(views) == ["trajkit.view", "trajkit.view.plain", "trajkit.view.safe"], views
    expected = _rich(lambda con: draw_steps_table(steps_table(read(run)), console=con), 80)
    assert p.stdout == expected
