"""trajkit.cli._common builds every rich Console and Progress bar the verbs use:
the bars must have the columns each verb drew before the helpers existed."""

from __future__ import annotations

import io

import pytest
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from trajkit.cli import _common


def _kinds(p: Progress) -> list[type]:
    return [type(c) for c in p.columns]


def test_console_goes_to_stderr_when_asked():
    assert _common.console(stderr=True).stderr is True
    assert _common.console().stderr is False
    con = _common.console(highlight=False, soft_wrap=True, file=io.StringIO())
    con.print("[b]x[/b] 1")
    assert con.file.getvalue() == "x 1\n"


def test_progress_columns_match_each_verb():
    out = _common.console(stderr=True, file=io.StringIO())
    fcr = _common.progress("certifying", out, elapsed=True, disable=True)
    assert _kinds(fcr) == [TextColumn, BarColumn, MofNCompleteColumn, TimeElapsedColumn]
    assert fcr.columns[0].text_format == "certifying" and fcr.live.transient and fcr.disable
    turns = _common.progress("{task.description}", out)
    assert _kinds(turns) == [TextColumn, BarColumn, MofNCompleteColumn]
    assert turns.columns[0].text_format == "{task.description}" and turns.live.transient and not turns.disable
    ls = _common.progress(None, out)
    assert _kinds(ls) == [type(c) for c in Progress.get_default_columns()] and ls.live.transient
    assert ls.console is out
    with fcr as p:  # a disabled bar runs without drawing
        t = p.add_task("certify", total=2)
        p.update(t, completed=2)
    assert out.file.getvalue() == ""


@pytest.mark.parametrize("entry", ["trajkit.cli.app:main", "trajkit.cli:run"])
def test_steps_on_a_v0_run_loads_no_rich_export_certify_or_turns(tmp_path, entry):
    # The verbs are lazy: reading steps as JSON must not pay for the other areas,
    # whether click parses the line (the group) or the console entry does.
    import subprocess
    import sys
    from pathlib import Path

    trial = Path(__file__).resolve().parent.parent / "examples" / "openhands-v0-trial"
    dump = tmp_path / "modules.txt"
    code = (
        "import sys\n"
        f"from {entry.partition(':')[0]} import {entry.partition(':')[2]} as entry\n"
        "try:\n"
        f"    entry(['steps', {str(trial)!r}, '--json'])\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        f"open({str(dump)!r}, 'w').write('\\n'.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert '"steps"' in p.stdout
    loaded = dump.read_text().split("\n")
    assert "trajkit.cli.steps" in loaded and "trajkit.formats.openhands_v0" in loaded
    assert "trajkit.cli.read" not in loaded  # the other reading verbs are not defined for `steps`
    # trajkit.rl.calls (the model-call parser the rollout-trace reader uses) may load; turns, proxy and tokenizers not.
    heavy = [m for m in loaded if m == "rich" or m.startswith(("rich.", "trajkit.export", "trajkit.certify", "trajkit.spec",
                                                                "trajkit.rl.turns", "trajkit.rl.proxy", "trajkit.rl.tokenize",
                                                                "trajkit.cli.export", "trajkit.cli.certify", "trajkit.cli.rl"))]
    assert not heavy, heavy
    if entry == "trajkit.cli:run":  # the console entry reads this line without click
        assert not [m for m in loaded if m == "click" or m.startswith("click.")]
        assert "trajkit.cli.steps_cmd" not in loaded and "trajkit.cli.app" not in loaded
