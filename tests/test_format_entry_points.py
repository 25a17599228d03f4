"""Formats load through the ``trajkit.formats`` entry points, and bad plugins
never take trajkit down.

Each case lays real distributions (``*.dist-info`` with ``entry_points.txt``
and a module) in a temporary folder and runs ``python -m trajkit`` with that
folder on ``PYTHONPATH``, so ``importlib.metadata`` finds them as it finds
installed packages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trajkit.registry import BUILTIN_FORMATS, get_format

from conftest import REPO

from trajkit import registry

EXAMPLE_V0 = REPO / "examples" / "openhands-v0-trial"

#: A format module template: sniff claims files named *.boom; behaviour switches on the file name.
RAISING = '''
from pathlib import Path
from trajkit.registry import Format, Match

NAME = {name!r}

def sniff(probe, candidate, fingerprint):
    if not candidate.is_file():
        return None
    if candidate.name.startswith("sniff-raises"):
        raise RuntimeError("sniff exploded")
    return Match(candidate, fingerprint, "strong", "a .boom file")

def read(root, options):
    raise ValueError("read exploded on " + Path(root).name)

FORMAT = Format(name=NAME, description="test plugin", fingerprints=("*.boom",), priority={priority},
                sniff=sniff, read=read)
'''


def dist(site: Path, name: str, entries: dict[str, str], modules: dict[str, str]) -> None:
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[trajkit.formats]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    for mod, text in modules.items():
        (site / f"{mod}.py").write_text(textwrap.dedent(text))


def trajkit(site: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trajkit", *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(site)}, timeout=300)


def test_builtins_come_through_the_entry_points():
    """The installed trajkit declares its built-ins as entry points (not just the fallback table)."""
    from importlib.metadata import entry_points

    from trajkit import registry

    eps = {ep.name: ep.value for ep in entry_points(group=registry.ENTRY_POINT_GROUP) if ep.dist.name == "trajkit"}
    assert eps == registry.BUILTIN_FORMATS
    assert [e.origin.split()[0] for e in registry.entries()][:3] == ["trajkit"] * 3


def test_plugin_that_fails_to_import_is_a_diagnostic(tmp_path):
    site = tmp_path / "site"
    dist(site, "broken-plugin", {"broken": "broken_plugin:FORMAT"}, {"broken_plugin": "raise ImportError('needs libfoo')\n"})
    p = trajkit(site, "detect", EXAMPLE_V0, "--why")
    assert p.returncode == 0, p.stderr  # the built-ins still work
    assert p.stdout.startswith("openhands-v0\t")
    assert "format.plugin-failed" in p.stderr and "broken-plugin 0.1" in p.stderr and "needs libfoo" in p.stderr
    j = json.loads(trajkit(site, "detect", EXAMPLE_V0, "--json").stdout)
    (prob,) = j["diagnostics"]
    assert prob["code"] == "format.plugin-failed" and "broken_plugin:FORMAT" in prob["message"]
    s = json.loads(trajkit(site, "steps", EXAMPLE_V0, "--json").stdout)
    assert s["step_count"] == json.loads((EXAMPLE_V0 / "EXPECTED.json").read_text())["expected_step_count"]
    assert "format.plugin-failed" in [d["code"] for d in s["diagnostics"]]


def test_entry_point_naming_something_else_is_a_diagnostic(tmp_path):
    site = tmp_path / "site"
    dist(site, "wrong-plugin", {"wrong": "wrong_plugin:FORMAT"}, {"wrong_plugin": "FORMAT = 'not a format'\n"})
    p = trajkit(site, "detect", EXAMPLE_V0, "--why")
    assert p.returncode == 0
    assert "format.plugin-failed" in p.stderr and "not a trajkit Format" in p.stderr


def test_plugin_raising_in_sniff_or_read_is_a_diagnostic_naming_it(tmp_path):
    site = tmp_path / "site"
    dist(site, "boom-plugin", {"boom": "boom_plugin:FORMAT"}, {"boom_plugin": RAISING.format(name="boom", priority=30)})
    (tmp_path / "sniff-raises.boom").write_text("x")
    (tmp_path / "read-raises.boom").write_text("x")
    p = trajkit(site, "detect", tmp_path / "sniff-raises.boom", "--why")
    assert p.returncode == 2  # nothing matched; no traceback
    assert "Traceback" not in p.stderr
    assert "sniff-error" in p.stdout and "boom-plugin 0.1" in p.stdout and "sniff exploded" in p.stdout
    s = trajkit(site, "steps", tmp_path / "read-raises.boom", "--json")
    assert s.returncode == 0, s.stderr
    assert "Traceback" not in s.stderr
    doc = json.loads(s.stdout)
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "read.format-failed"]
    assert d["severity"] == "error" and "boom-plugin 0.1" in d["message"] and "read exploded on read-raises.boom" in d["message"]
    assert (doc["format"], doc["step_count"]) == ("boom", 0)


def test_two_plugins_claiming_one_name_first_wins_and_is_reported(tmp_path):
    site = tmp_path / "site"
    dist(site, "twin-b", {"twin": "twin_b:FORMAT"}, {"twin_b": RAISING.format(name="twin", priority=31)})
    dist(site, "twin-a", {"twin": "twin_a:FORMAT"}, {"twin_a": RAISING.format(name="twin", priority=32)})
    # and one that claims a built-in's name: the built-in wins
    dist(site, "usurper", {"openhands-v0": "twin_a:FORMAT"}, {})
    (tmp_path / "x.boom").write_text("x")
    for _ in range(2):  # deterministic: same winner every time
        p = trajkit(site, "detect", tmp_path / "x.boom", "--why", "--json")
        d = json.loads(p.stdout)
        (m,) = [c for c in d["considered"] if c["outcome"] == "match"]
        assert (m["format"], m["priority"]) == ("twin", 32)  # twin-a sorts first
        msgs = [x["message"] for x in d["diagnostics"] if x["code"] == "format.duplicate-name"]
        assert any("'twin'" in x and "twin-a 0.1" in x and "twin-b 0.1" in x for x in msgs), msgs
        assert any("'openhands-v0'" in x and "usurper 0.1" in x and "using trajkit" in x for x in msgs), msgs
    s = json.loads(trajkit(site, "steps", EXAMPLE_V0, "--json").stdout)
    assert s["format"] == "openhands-v0" and s["step_count"] > 0


def test_listing_entry_points_imports_no_format(tmp_path):
    """`trajkit --help` and format names come from metadata alone; format modules load when detection needs them."""
    code = (
        "import sys; from trajkit import registry; names = registry.format_names(); "
        "loaded = [m for m in sys.modules if m.startswith('trajkit.formats')]; "
        "print(names, loaded)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    # every built-in, in table order (the list grows as formats land), and no format module loaded
    assert p.stdout.strip() == f"{list(BUILTIN_FORMATS)} []"
    h = subprocess.run([sys.executable, "-X", "importtime", "-m", "trajkit", "--help"], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert h.returncode == 0
    imported = [line.rsplit("|", 1)[-1].strip() for line in h.stderr.splitlines() if line.startswith("import time:")]
    assert not [m for m in imported if m.startswith("trajkit.formats") or m == "importlib.metadata"], imported


CAPABLE = '''
import json
from pathlib import Path
from trajkit import Event, Session
from trajkit.registry import Format, Match

def sniff(probe, candidate, fingerprint):
    return Match(candidate, fingerprint, "strong", "an .echo file") if candidate.is_file() else None

def read(root, options):
    s = Session(format="echo", source_path=str(root), id=Path(root).stem)
    for n, line in enumerate(Path(root).read_text().splitlines(), 1):
        s.events.append(Event(n, "message", "line", line, role="user", text=line))
    return s

def find_sessions(root, diagnostics=None):
    root = Path(root)
    return sorted(root.rglob("*.echo")) if root.is_dir() else [root]

def summarize(root, max_file_bytes):
    lines = Path(root).read_text().splitlines()
    return {"id": Path(root).stem, "path": str(root), "title": lines[0], "status": "done", "events": len(lines),
            "model": "echo-1", "cost": None, "updated": None, "subagents": 0, "diagnostics": []}

def context(session, at=None):
    return [{"llm_response_id": f"echo-{e.id}", "event_id": e.id, "messages": [{"role": "user", "content": e.text}]}
            for e in session.events if at is None or e.id == at]

FORMAT = Format(name="echo", description="lines", fingerprints=("*.echo",), priority=30, sniff=sniff, read=read,
                find_sessions=find_sessions, summarize=summarize, context=context)
'''


def test_ls_and_context_dispatch_to_any_format_that_declares_them(tmp_path):
    """A plugin declaring find_sessions/summarize and context gets `ls` and `context` without any trajkit change."""
    site = tmp_path / "site"
    dist(site, "echo-plugin", {"echo": "echo_plugin:FORMAT"}, {"echo_plugin": CAPABLE})
    runs = tmp_path / "runs"
    (runs / "deep").mkdir(parents=True)
    (runs / "a.echo").write_text("first task\nsecond line\n")
    (runs / "deep" / "b.echo").write_text("other task\n")
    p = trajkit(site, "ls", runs, "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(r["format"], r["id"], r["events"], r["title"]) for r in rows] == [
        ("echo", "a", 2, "first task"), ("echo", "b", 1, "other task")]
    p = trajkit(site, "ls", runs)
    assert p.returncode == 0 and "first task" in p.stdout and "other task" in p.stdout
    p = trajkit(site, "context", runs / "a.echo", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [
        {"llm_response_id": "echo-1", "event_id": 1, "messages": [{"role": "user", "content": "first task"}]},
        {"llm_response_id": "echo-2", "event_id": 2, "messages": [{"role": "user", "content": "second line"}]},
    ]
    p = trajkit(site, "context", EXAMPLE_V0)
    # the built-ins that declare context, then the plugin
    # (in the order `formats that can` lists them: by priority, as registry.formats() ranks them)
    from trajkit.registry import formats_that_can

    builtin_can = ", ".join(n for n in formats_that_can("context") if n in BUILTIN_FORMATS)
    assert p.returncode == 2 and f"formats that can: {builtin_can}, echo" in p.stderr


def test_fast_entry_point_scan_agrees_with_importlib_metadata(tmp_path):
    """The registry reads entry_points.txt itself (importing importlib.metadata costs more than a
    detection); it must find what importlib.metadata finds, plugins on PYTHONPATH included."""
    site = tmp_path / "site"
    dist(site, "twin-b", {"twin": "twin_b:FORMAT"}, {})
    dist(site, "Odd.Name_Plugin", {"odd": "odd_mod:FORMAT [extra]", "odd2": "odd_mod:OTHER"}, {})
    # the same distribution twice on the path: the first one wins, as in importlib.metadata
    shadow = tmp_path / "shadow"
    dist(shadow, "twin-b", {"twin": "shadowed:FORMAT"}, {})
    code = (
        "import json; from importlib.metadata import entry_points; from trajkit import registry\n"
        "fast = sorted(registry._entry_points('trajkit.formats'))\n"
        "slow = sorted((e.name, e.value, registry._dist_name(e.dist.name), e.dist.version) for e in entry_points(group='trajkit.formats'))\n"
        "print(json.dumps([fast, slow]))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                       env={**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{shadow}"})
    assert p.returncode == 0, p.stderr
    fast, slow = json.loads(p.stdout)
    assert fast == slow
    assert ["odd", "odd_mod:FORMAT [extra]", "odd-name-plugin", "0.1"] in fast
    assert ["twin", "twin_b:FORMAT", "twin-b", "0.1"] in fast and not any(v == "shadowed:FORMAT" for _, v, _, _ in fast)
    assert {n for n, _, d, _ in fast if d == "trajkit"} == set(BUILTIN_FORMATS)
