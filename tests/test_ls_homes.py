"""``trajkit ls --harness NAME`` with no path lists the user's sessions from
the harness's home folder (issue 11, "Across formats"): the ``homes``
capability each format declares, expanded against the environment. Real
subprocesses with HOME (and the harness's own variables) pointed at a temp
dir holding real corpus conversations laid out as the harness lays them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, REPO

from trajkit.registry import CAPABILITIES, expand_home, get_format, home_dirs

SDK_RUNS = CORPUS / "openhands_v1" / "sdk_pr_artifacts"


def _ls(env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENHANDS_", "XDG_"))}
    env.update(env_extra, COLUMNS="400")
    return subprocess.run([sys.executable, "-m", "trajkit", "ls", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=300)


def _lay_out(dest: Path) -> dict[str, Path]:
    """Copy the corpus SDK conversations into ``dest`` as the OpenHands CLI
    keeps them (``<hex>/base_state.json``, ``<hex>/events/``); their ids and
    event counts from the raw files."""
    dest.mkdir(parents=True)
    out = {}
    for base in sorted(SDK_RUNS.glob("*/*/base_state.json")):
        conv = dest / base.parent.name
        shutil.copytree(base.parent, conv)
        out[base.parent.name] = conv
    return out


def test_expand_home_templates():
    env = {"HOME": "/h", "A": "/a", "EMPTY": ""}
    assert expand_home("~/.claude", env) == Path("/h/.claude")
    assert expand_home("~", env) == Path("/h")
    assert expand_home("$A/x", env) == Path("/a/x")
    assert expand_home("${A}/x", env) == Path("/a/x")
    assert expand_home("$UNSET/x", env) is None  # an unset variable without a default skips the entry
    assert expand_home("${UNSET}/x", env) is None
    assert expand_home("${UNSET:-~/.local/share}/opencode", env) == Path("/h/.local/share/opencode")
    assert expand_home("${EMPTY:-/d}/o", env) == Path("/d/o")  # empty counts as unset, as in the shell's :-
    assert expand_home("${A:-/d}/o", env) == Path("/a/o")
    nested = "${X:-${Y:-~/.openhands}/conversations}"
    assert expand_home(nested, env) == Path("/h/.openhands/conversations")
    assert expand_home(nested, dict(env, Y="/p")) == Path("/p/conversations")
    assert expand_home(nested, dict(env, X="/c", Y="/p")) == Path("/c")
    assert expand_home("~user/x", env) == Path("~user/x")  # only ~ alone or ~/ means HOME
    with pytest.raises(ValueError):
        expand_home("${A", env)


def test_homes_is_a_declared_capability():
    assert CAPABILITIES["homes"][0] == ("homes", "find_sessions", "summarize")
    sdk = get_format("openhands-sdk")
    assert sdk.can("homes")
    assert home_dirs(sdk, {"HOME": "/h"}) == [Path("/h/.openhands/conversations")]
    assert not get_format("openhands-v0").can("homes")


def test_ls_harness_lists_the_home_folder(tmp_path):
    home = tmp_path / "home"
    convs = _lay_out(home / ".openhands" / "conversations")
    p = _ls({"HOME": str(home)}, "--harness", "openhands-sdk", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert sorted(r["path"] for r in rows) == sorted(str(c) for c in convs.values())
    for r in rows:
        conv = Path(r["path"])
        assert r["format"] == "openhands-sdk"
        assert r["events"] == len(list((conv / "events").glob("event-*.json")))
        state = json.loads((conv / "base_state.json").read_text())
        assert r["id"].replace("-", "") == state["id"].replace("-", "")
    # the text table: the header and one row per session, ids and paths whole
    p = _ls({"HOME": str(home)}, "--harness", "openhands-sdk")
    assert p.returncode == 0, p.stderr
    for conv in convs.values():
        assert any(line.rstrip().endswith(str(conv)) for line in p.stdout.splitlines())


def test_ls_harness_follows_the_harness_variables(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    persist = _lay_out(tmp_path / "persist" / "conversations")
    p = _ls({"HOME": str(home), "OPENHANDS_PERSISTENCE_DIR": str(tmp_path / "persist")}, "--harness", "openhands-sdk", "--json")
    assert p.returncode == 0, p.stderr
    assert sorted(r["path"] for r in json.loads(p.stdout)) == sorted(map(str, persist.values()))
    direct = _lay_out(tmp_path / "direct")
    p = _ls({"HOME": str(home), "OPENHANDS_PERSISTENCE_DIR": str(tmp_path / "persist"),
             "OPENHANDS_CONVERSATIONS_DIR": str(tmp_path / "direct")}, "--harness", "openhands-sdk", "--json")
    assert p.returncode == 0, p.stderr
    assert sorted(r["path"] for r in json.loads(p.stdout)) == sorted(map(str, direct.values()))


def test_ls_harness_without_a_home_folder_cannot_run(tmp_path):
    p = _ls({"HOME": str(tmp_path)}, "--harness", "openhands-sdk")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == f"trajkit: no openhands-sdk home folder here (looked in {tmp_path}/.openhands/conversations)"


def test_ls_harness_errors(tmp_path):
    p = _ls({"HOME": str(tmp_path)}, "--harness", "openhands-v0")
    assert p.returncode == 2 and "openhands-v0 cannot list sessions" in p.stderr
    p = _ls({"HOME": str(tmp_path)}, "--harness", "nope")
    assert p.returncode == 2 and "unknown format 'nope'" in p.stderr
    p = _ls({"HOME": str(tmp_path)})
    assert p.returncode == 2 and "give a ROOT to list, or --harness NAME" in p.stderr and "openhands-sdk" in p.stderr
    p = _ls({"HOME": str(tmp_path)}, "--harness", "openhands-sdk", "--format", "rollout-trace")
    assert p.returncode == 2 and "name different formats" in p.stderr


def test_ls_harness_with_a_root_lists_that_root(tmp_path):
    convs = _lay_out(tmp_path / "elsewhere")
    p = _ls({"HOME": str(tmp_path)}, str(tmp_path / "elsewhere"), "--harness", "openhands-sdk", "--json")
    assert p.returncode == 0, p.stderr
    assert sorted(r["path"] for r in json.loads(p.stdout)) == sorted(map(str, convs.values()))


def test_ls_columns_tokens_from_base_state(tmp_path):
    """The token column: input + output summed over base_state.json's accumulated usage, computed here from the file."""
    home = tmp_path / "home"
    convs = _lay_out(home / ".openhands" / "conversations")
    p = _ls({"HOME": str(home)}, "--harness", "openhands-sdk", "--json")
    rows = {r["path"]: r for r in json.loads(p.stdout)}
    for conv in convs.values():
        state = json.loads((conv / "base_state.json").read_text())
        usage_ids = (((state.get("stats") or {}).get("usage_to_metrics")) or {}).values()
        want = [u.get(k) for m in usage_ids for u in [m.get("accumulated_token_usage") or {}]
                for k in ("prompt_tokens", "completion_tokens") if isinstance(u.get(k), int)]
        assert rows[str(conv)]["tokens"] == (sum(want) if want else None)
    p = _ls({"HOME": str(home)}, "--harness", "openhands-sdk")
    head = p.stdout.splitlines()[0].split()
    assert head == ["id", "status", "title", "model", "events", "steps", "tokens", "cost", "updated", "sub", "path"]


def test_ls_marks_an_estimated_cost(tmp_path):
    """A row whose cost is an estimate prints it with '~' (a format registered in-process, through the CLI's own code)."""
    from click.testing import CliRunner

    from trajkit import registry
    from trajkit.cli.app import main
    from trajkit.registry import Format, Reject

    run = tmp_path / "r1"
    run.mkdir()
    fmt = Format(name="ls-demo", description="demo", fingerprints=("nothing",), priority=1,
                 sniff=lambda probe, c, fp: Reject("no"), read=lambda root, opts: None,
                 find_sessions=lambda root, diags=None: [run],
                 summarize=lambda root, cap: {"id": "r1", "path": str(root), "title": "t", "status": "done", "events": 3,
                                              "steps": 2, "tokens": 1500, "model": "gpt-4o", "cost": 0.00725,
                                              "cost_estimated": True, "updated": None, "subagents": 0, "diagnostics": []})
    registry.register(fmt)
    try:
        res = CliRunner().invoke(main, ["ls", str(tmp_path), "--format", "ls-demo"], env={"COLUMNS": "300"})
    finally:
        registry.formats()[:] = [f for f in registry.formats() if f.name != "ls-demo"]
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("r1"))
    assert "~0.0073" in line and " 2 " in line and "1500" in line and line.rstrip().endswith(str(run))
