"""``trajkit steps`` parsed by hand (:func:`trajkit.cli.steps.parse`, what the
console entry :func:`trajkit.cli.run` uses to skip click) behaves exactly as
the click command (:mod:`trajkit.cli.steps_cmd`): the same parameters for
every line it accepts, and, over a matrix of runs and options (good, bad,
``--help``, a missing path), the same stdout, stderr and exit code from a
whole process."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest

from trajkit.cli import run, steps as fast
from trajkit.cli.app import main
from trajkit.cli.steps_cmd import steps_cmd

REPO = Path(__file__).resolve().parent.parent
V0 = REPO / "examples" / "openhands-v0-trial"
SDK = REPO / "examples" / "openhands-sdk-conversation"
MANY = REPO / "src" / "trajkit" / "formats" / "fixtures" / "openhands-eval" / "v0" / "output.jsonl"
CTB = REPO.parent / "shared" / "corpus" / "openhands_v0" / "ctb_manifest_rows" / "smoke-labels-openhands.json"


def _click_params(args: list[str]) -> dict | None:
    """What click makes of ``args`` (the parameters), or None when it refuses them."""
    try:
        ctx = steps_cmd.make_context("steps", list(args), resilient_parsing=False)
    except click.exceptions.Exit:
        return None
    except click.ClickException:
        return None
    return ctx.params


# ---------------------------------------------------------------- the tables


def test_the_parser_knows_the_click_options_it_reads():
    """Every option of the click command is one the parser reads with the
    same name, parameter and type, or one it leaves to click (--ctb-row: a
    path click checks; --help); the defaults are click's."""
    left_to_click = {"--ctb-row", "--help"}
    seen: set[str] = set()
    for p in steps_cmd.get_params(click.Context(steps_cmd)):
        if isinstance(p, click.Argument):
            assert p.name == "path" and p.nargs == 1 and isinstance(p.type, click.Path) and not p.type.exists
            continue
        names = set(p.opts) | set(p.secondary_opts)
        seen |= names
        if names & left_to_click:
            assert names <= left_to_click | {"-h"}
            continue
        assert not p.multiple and p.envvar is None
        if p.is_flag:
            assert {n: fast.FLAG_OPTIONS.get(n) for n in names} == {n: p.name for n in names}
            assert fast.DEFAULTS[p.name] is False
        else:
            kind = int if isinstance(p.type, click.types.IntParamType) else str
            assert kind is int or isinstance(p.type, click.types.StringParamType), (names, p.type)
            assert {n: fast.VALUE_OPTIONS.get(n) for n in names} == {n: (p.name, kind) for n in names}
            assert fast.DEFAULTS[p.name] == p.default
    assert set(fast.VALUE_OPTIONS) | set(fast.FLAG_OPTIONS) == seen - left_to_click - {"-h"}
    assert set(fast.DEFAULTS) == {p.name for p in steps_cmd.params} - {"path"}


# ---------------------------------------------------------------- parameters


_WORDS = [
    str(V0), str(MANY), "missing/path", "--json", "--jsonl", "--all-views", "--format", "openhands-v0", "--format=openhands-v0",
    "--format=", "--member", "basic", "--instance=basic", "--tz", "Europe/Paris", "--max-file-bytes", "10", "--max-file-bytes=1_000",
    "--max-file-bytes", "x", "--view", "flat_export", "--expect-steps", "4", "--expect-steps", "-1", "--expect-steps= 4",
    "--ctb-id", "abc", "--ctb-row", str(V0), "--", "-", "-h", "--help", "--json=1", "--jsn", "--forma", "", "#basic",
]


def test_every_line_the_parser_reads_click_reads_the_same():
    rng = random.Random(15)
    lines = [[str(V0)], [str(V0), "--json"], ["--json", str(V0)], [str(MANY), "--member", "basic", "--jsonl"]]
    lines += [[w] for w in _WORDS] + [list(p) for p in itertools.permutations([str(V0), "--format", "openhands-v0", "--json"])]
    lines += [[rng.choice(_WORDS) for _ in range(rng.randint(0, 6))] for _ in range(3000)]
    accepted = 0
    for args in lines:
        got = fast.parse(args)
        if got is None:
            continue
        accepted += 1
        assert got == _click_params(args), args
    assert accepted > 200  # the matrix exercises the parser's yes, not only its no


@pytest.mark.parametrize("args", [
    [], ["--json"], [str(V0), str(V0)], [str(V0), "--help"], [str(V0), "-h"], [str(V0), "--json", "--json"],
    [str(V0), "--member", "a", "--instance", "b"], [str(V0), "--format"], [str(V0), "--format", "--json"],
    [str(V0), "--expect-steps", "four"], [str(V0), "--json=yes"], [str(V0), "--bogus"], ["--", str(V0)],
    [str(V0), "--ctb-row", str(CTB)], [str(V0), "--view", ""], [str(V0), "--expect-steps", "-4"],
])
def test_lines_the_parser_leaves_to_click(args):
    assert fast.parse(args) is None


def test_an_unreadable_path_is_left_to_click():
    """A file its reader may not read: the parser leaves it to click, which
    refuses it. Root reads every file, so as root the check runs in a child
    process that gives up root (``setuid`` to nobody) after its imports."""
    d = Path(tempfile.mkdtemp(prefix="trajkit-unreadable-"))
    try:
        d.chmod(0o755)  # traversable by anyone: only the file itself is closed
        f = d / "run.json"
        f.write_text("{}")
        f.chmod(0)
        if not (hasattr(os, "geteuid") and os.geteuid() == 0):
            assert fast.parse([str(f)]) is None and _click_params([str(f)]) is None
            return
        code = (
            "import os, sys\n"
            "sys.path.insert(0, sys.argv[2])\n"
            "import test_cli_steps_parse as t\n"
            "readable = t.fast.parse([sys.argv[3]])\n"  # as root: the file reads, so the parser takes it
            "os.setgid(65534); os.setuid(65534)\n"
            "print(readable is not None, os.access(sys.argv[1], os.R_OK), t.fast.parse([sys.argv[1]]) is None, t._click_params([sys.argv[1]]) is None)\n"
        )
        p = subprocess.run([sys.executable, "-c", code, str(f), str(REPO / "tests"), str(V0)],
                           capture_output=True, text=True, cwd=REPO, timeout=300)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["True", "False", "True", "True"], p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- whole processes


def _process(route: str, args: list[str], tmp_path: Path) -> tuple[int, str, str, bool]:
    """``trajkit steps ARGS`` as a process through ``route`` (the console
    entry, or the click group), the program named ``trajkit`` either way;
    with whether click was imported."""
    probe = tmp_path / f"modules-{os.urandom(6).hex()}"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(probe)!r}, 'w').write(str('click' in sys.modules)))\n"
        "sys.argv[0] = 'trajkit'\n"
        + ("from trajkit.cli import run\nrun()\n" if route == "run" else "from trajkit.cli.app import main\nmain()\n")
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env["COLUMNS"] = "100"
    p = subprocess.run([sys.executable, "-c", code, "steps", *args], capture_output=True, env=env, cwd=REPO, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), probe.read_text() == "True"


_MATRIX: list[list[str]] = [
    [str(V0)], [str(V0), "--json"], [str(V0), "--jsonl"], [str(V0), "--json", "--jsonl"], [str(V0), "--all-views"],
    [str(V0), "--all-views", "--json"], [str(V0), "--format", "openhands-v0", "--jsonl"], [str(V0), "--format=nope"],
    [str(V0), "--expect-steps", "4"], [str(V0), "--expect-steps=3", "--json"], [str(V0), "--max-file-bytes", "100"],
    [str(V0), "--view", "nope"], [str(V0), "--tz", "Nope/Zone", "--json"], [str(V0 / "events")],
    [str(SDK), "--json"], [str(SDK)], [str(MANY)], [str(MANY), "--jsonl"], [str(MANY), "--expect-steps", "2"],
    [str(MANY), "--member", "basic", "--json"], [f"{MANY}#basic", "--jsonl"], [f"{MANY}#missing"], [str(MANY), "--all-views"],
    ["no/such/run"], ["no/such/run", "--json"],
    # left to click: help, usage errors, the options it checks itself
    [], [str(V0), "--help"], ["-h"], [str(V0), "--bogus"], [str(V0), "--expect-steps", "four"], [str(V0), str(V0)],
    [str(V0), "--json=1"], [str(V0), "--ctb-row", "no/such/row.json"], [str(V0), "--ctb-row", str(CTB), "--json"],
]


def test_the_console_entry_and_click_give_the_same_process(tmp_path):
    def both(args):
        return _process("run", args, tmp_path), _process("click", args, tmp_path)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(both, _MATRIX))
    skipped_click = 0
    for args, (mine, theirs) in zip(_MATRIX, results):
        assert mine[:3] == theirs[:3], args
        assert theirs[3]  # the click route imports click
        if fast.parse(args) is not None:
            assert not mine[3], args  # ... the console entry did not need it
            skipped_click += 1
        else:
            assert mine[3], args
    assert skipped_click >= 20
    codes = {r[0][0] for r in results}
    assert codes == {0, 1, 2}  # the matrix covers success, a failed check and could-not-run
    assert any('"steps"' in r[0][1] for r in results) and any("Usage: trajkit steps" in r[0][2] for r in results)


# ---------------------------------------------------------------- click's standalone handlers


@pytest.mark.parametrize("error", [KeyboardInterrupt, EOFError, BrokenPipeError])
def test_an_interrupt_or_a_closed_pipe_ends_the_process_as_click_ends_it(error, monkeypatch, capfd):
    def boom(*args, **kwargs):
        raise error(32, "Broken pipe") if error is BrokenPipeError else error()

    stdout, stderr = sys.stdout, sys.stderr
    results = []
    for route in ("run", "click"):
        monkeypatch.setattr(fast, "steps", boom)
        monkeypatch.setattr("trajkit.cli.steps_cmd.steps", boom)
        with pytest.raises(SystemExit) as e:
            run(["steps", str(V0)]) if route == "run" else main(["steps", str(V0)])
        wrapped = sys.stdout is not stdout
        sys.stdout, sys.stderr = stdout, stderr
        out, err = capfd.readouterr()
        results.append((e.value.code, out, err, wrapped))
    assert results[0] == results[1]
    assert results[0][0] == 1
    assert results[0][2] == ("" if error is BrokenPipeError else "\nAborted!\n")
    assert results[0][3] == (error is BrokenPipeError)

