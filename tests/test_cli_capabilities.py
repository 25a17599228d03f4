"""Verbs dispatch on what a format declares, and wrong paths exit 2 saying why
(issue 14 item 1 and item 16): real subprocesses, real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajkit.registry import formats_that_can

from conftest import REPO

V0_TRIAL = REPO / "examples" / "openhands-v0-trial"
SDK_CONV = REPO / "examples" / "openhands-sdk-conversation"
ROLLOUT = REPO / "examples" / "rollout"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


@pytest.fixture
def junk(tmp_path):
    (tmp_path / "other.json").write_text('{"a":1}')
    (tmp_path / "img.png").write_bytes(PNG)
    (tmp_path / "empty").mkdir()
    return tmp_path


@pytest.mark.parametrize("verb", ["certify", "fcr", "context", "turns", "ls", "steps", "show"])
def test_missing_path_exits_2(cli, verb, tmp_path):
    missing = tmp_path / "nonexistent"
    p = cli(verb, missing)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.strip() == f"trajkit: {missing}: no such file or directory"
    assert p.stdout == ""


def test_turns_on_json_that_is_no_rollout_exits_2(cli, junk):
    p = cli("turns", junk / "other.json")
    assert p.returncode == 2 and p.stdout == ""
    assert f"trajkit: {junk / 'other.json'}: no known format" in p.stderr
    assert "formats that give model calls: rollout-trace" in p.stderr


@pytest.mark.parametrize("name", ["img.png", "empty"])
def test_context_on_nothing_readable_exits_2(cli, junk, name):
    p = cli("context", junk / name)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(f"trajkit: {junk / name}: no known format")


def test_context_on_a_format_without_it_names_the_formats_that_can(cli):
    p = cli("context", V0_TRIAL)
    assert p.returncode == 2 and p.stdout == ""
    from trajkit.registry import formats_that_can

    can = formats_that_can("context")
    assert "openhands-sdk" in can and "openhands-v0" not in can
    assert p.stderr.strip() == (f"trajkit: {V0_TRIAL}: read as openhands-v0; openhands-v0 cannot show what the model saw; "
                                f"formats that can: {', '.join(formats_that_can('context'))}")
    assert "openhands-sdk" in formats_that_can("context")
    p = cli("context", ROLLOUT, "--json")
    assert p.returncode == 2 and "read as rollout-trace; rollout-trace cannot show what the model saw" in p.stderr


def test_turns_on_a_format_without_model_calls(cli):
    p = cli("turns", V0_TRIAL)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == (f"trajkit: {V0_TRIAL}: read as openhands-v0; openhands-v0 cannot give model calls for "
                                f"training turns; formats that can: {', '.join(formats_that_can('model_calls'))}")
    assert "rollout-trace" in formats_that_can("model_calls") and "openhands-v0" not in formats_that_can("model_calls")


def test_ls_on_a_format_without_listing(cli, tmp_path):
    p = cli("ls", V0_TRIAL)
    assert p.returncode == 2
    assert "read as openhands-v0; openhands-v0 cannot list sessions; formats that can: openhands-sdk" in p.stderr
    p = cli("ls", "--format", "openhands-v0", tmp_path)
    assert p.returncode == 2 and "openhands-v0 cannot list sessions" in p.stderr
    p = cli("ls", "--format", "nope", tmp_path)
    assert p.returncode == 2 and "unknown format 'nope'" in p.stderr


def test_ls_rows_carry_their_format_and_common_keys(cli):
    p = cli("ls", SDK_CONV, "--json", check=True)
    (row,) = json.loads(p.stdout)
    state = json.loads((SDK_CONV / "base_state.json").read_text())
    assert row["format"] == "openhands-sdk" and row["path"] == str(SDK_CONV)
    assert row["status"] == row["execution_status"] == state["execution_status"]
    assert row["events"] == len(list((SDK_CONV / "events").glob("event-*.json")))


def test_context_still_works_where_declared(cli):
    p = cli("context", SDK_CONV, "--json", check=True)
    entries = json.loads(p.stdout)
    assert entries and all(set(e) >= {"llm_response_id", "event_id", "messages"} for e in entries)


def test_certify_on_a_file_that_exists_but_no_format_cannot_run(cli, junk):
    """A path holding nothing of a known format is a could-not-run too (issue 14 item 1): exit 2, no certificate."""
    p = cli("certify", junk / "other.json", "--json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == f"trajkit: {junk / 'other.json'}: no known format (name one with --format)"


def test_fcr_with_one_missing_path_among_good_ones(cli, tmp_path):
    p = cli("fcr", V0_TRIAL, tmp_path / "gone")
    assert p.returncode == 2 and p.stderr.strip() == f"trajkit: {tmp_path / 'gone'}: no such file or directory"


def _conversation_id(conv: Path) -> str:
    """The conversation's id as base_state.json spells it (hex or dashed), dashed."""
    import uuid

    return str(uuid.UUID(json.loads((conv / "base_state.json").read_text())["id"]))


def test_ls_at_80_columns_keeps_ids_whole_and_shows_the_path():
    """Issue 14 item 5: at 80 columns ls cut ids and models to 8 characters and had no path."""
    import os
    import subprocess
    import sys

    conv = Path(__file__).resolve().parent.parent / "examples" / "openhands-sdk-conversation"
    env = dict(os.environ, COLUMNS="80")
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", str(conv.parent)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    ident = _conversation_id(conv)
    assert lines[0].startswith(ident + "  ")
    assert f"  {conv}" in lines  # the path, whole, on a line of its own
    state = json.loads((conv / "base_state.json").read_text())
    model = state["agent"]["llm"]["model"]
    assert any(model in line for line in lines)  # the model name, uncut
    assert all(len(line) <= 80 for line in lines if not line.strip().startswith("/"))
    # Wide enough: one table row per session, with a path column.
    env["COLUMNS"] = "400"
    p = subprocess.run([sys.executable, "-m", "trajkit", "ls", str(conv.parent)], capture_output=True, text=True, env=env)
    head = p.stdout.splitlines()[0].split()
    assert head[0] == "id" and head[-1] == "path"
    row = next(line for line in p.stdout.splitlines() if line.startswith(ident))
    assert row.rstrip().endswith(str(conv)) and model in row
