"""Containers: one file holding many sessions (an evaluation ``output.jsonl``,
an ``opencode.db``). A session inside one is addressed ``PATH#ID`` and read
with ``ReadOptions.member``; ``read_all``, ``discover`` and the CLI verbs run
over every member when none is named; ``read`` never guesses.

The container format here is made in the test (registered at run time): a
JSON Lines file whose lines are ``{"id": ..., "steps": [...]}``, one session
per line. Expected ids and step counts come from the lines the test writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajkit
from trajkit import registry
from trajkit.corpus import discover
from trajkit.model import DetectionError, Event, ReadOptions, Session, Step
from trajkit.registry import STRONG, Match

NAME = "lines-container-test"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _sniff(probe, cand: Path, fp: str):
    if cand.name.endswith(".box.jsonl") and probe.is_file(str(cand)):
        return Match(cand, fp, STRONG, "a .box.jsonl file")
    return None


def _members(root: Path, options: ReadOptions) -> list[str]:
    return [r["id"] for r in _records(root)]


def _read(root: Path, options: ReadOptions) -> Session:
    s = Session(format=NAME, source_path=str(root))
    for r in _records(root):
        if r["id"] != options.member:
            continue
        s.id = r["id"]
        for i, text in enumerate(r["steps"], 1):
            s.events.append(Event(i, "action", "run", {"text": text}))
            s.steps.append(Step(step_id=i, action=text, tool_type="run", observation=""))
    return s


@pytest.fixture
def container(tmp_path):
    saved = list(registry.formats())
    registry.register(registry.Format(
        name=NAME, description="test container", fingerprints=("*.box.jsonl",), priority=999,
        sniff=_sniff, read=_read, members=_members,
    ))
    path = tmp_path / "eval.box.jsonl"
    rows = [{"id": "django__django-1", "steps": ["ls", "cat a.py"]},
            {"id": "astropy-7", "steps": ["pytest"]},
            {"id": "sympy#3", "steps": ["a", "b", "c"]}]  # "#" inside an id: the longest existing part is the container
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    yield path, rows
    registry.formats()[:] = saved


def test_split_member(tmp_path):
    f = tmp_path / "out.jsonl"
    f.write_text("")
    assert registry.split_member(f"{f}#abc") == (str(f), "abc")
    assert registry.split_member(str(f)) == (str(f), None)
    odd = tmp_path / "name#with-hash"  # a file whose own name holds '#' is that file
    odd.write_text("")
    assert registry.split_member(str(odd)) == (str(odd), None)
    assert registry.split_member(f"{tmp_path}/missing#x") == (f"{tmp_path}/missing#x", None)


def test_read_names_one_member_and_never_guesses(container):
    path, rows = container
    with pytest.raises(DetectionError, match="holds 3 .* sessions; name one as PATH#ID"):
        trajkit.read(path)
    for r in rows:
        s = trajkit.read(f"{path}#{r['id']}")
        assert (s.id, len(s.steps)) == (r["id"], len(r["steps"]))
    s = trajkit.read(path, options=ReadOptions(member="astropy-7"))
    assert s.id == "astropy-7"
    with pytest.raises(DetectionError, match="no session 'nope'"):
        trajkit.read(f"{path}#nope")


def test_member_of_a_single_session_run_is_an_error(tmp_path):
    run = Path(__file__).resolve().parents[1] / "examples" / "openhands-v0-trial"
    with pytest.raises(DetectionError, match="holds one session"):
        trajkit.read(f"{run}#x")


def test_read_all_and_members(container):
    path, rows = container
    assert registry.members(path) == [f"{path}#{r['id']}" for r in rows]
    got = [(s.id, len(s.steps)) for s in trajkit.read_all(path)]
    assert got == [(r["id"], len(r["steps"])) for r in rows]
    assert registry.members(f"{path}#astropy-7") == [f"{path}#astropy-7"]


def test_detect_reports_the_member(container):
    path, _ = container
    det = registry.detect(f"{path}#astropy-7")
    assert det.format.name == NAME and det.member == "astropy-7" and det.to_dict()["member"] == "astropy-7"


def test_discover_expands_a_container(container):
    path, rows = container
    refs = discover([path.parent])
    assert [str(r.path) for r in refs] == [f"{path}#{r['id']}" for r in rows]
    assert [str(r.path) for r in discover([f"{path}#astropy-7"])] == [f"{path}#astropy-7"]


def test_cli_steps_over_every_member(container):
    from trajkit.cli.app import main

    path, rows = container
    r = CliRunner().invoke(main, ["steps", str(path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [len(s["steps"]) for s in doc["sessions"]] == [len(x["steps"]) for x in rows]
    r = CliRunner().invoke(main, ["steps", str(path), "--member", "sympy#3", "--json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)["steps"]) == 3
    r = CliRunner().invoke(main, ["steps", f"{path}#astropy-7", "--expect-steps", "1"])
    assert r.exit_code == 0, r.output
    # a count check over every member: exit 1 naming the ones that differ
    r = CliRunner().invoke(main, ["steps", str(path), "--expect-steps", "2"])
    assert r.exit_code == 1 and r.stderr.count("trajkit:") == 2
    r = CliRunner().invoke(main, ["steps", f"{path}#missing"])
    assert r.exit_code == 2 and "no session 'missing'" in r.stderr


def test_discover_finds_a_run_kept_under_a_dot_name(tmp_path):
    """Hidden entries are not walked, but a file a format names exactly (an
    Aider ``.aider.chat.history.md``) is a run: each of its chat runs is found.
    Expected: the ``# aider chat started at`` headers of the corpus file."""
    import shutil

    from conftest import CORPUS

    src = next((CORPUS / "aider").rglob(".aider.chat.history.md"))
    repo = tmp_path / "myrepo"
    repo.mkdir()
    shutil.copy(src, repo / ".aider.chat.history.md")
    (repo / ".hidden-dir").mkdir()
    shutil.copy(src, repo / ".hidden-dir" / "copy.md")  # under a hidden folder: not walked
    headers = [ln for ln in src.read_text().splitlines() if ln.startswith("# aider chat started at")]
    refs = discover([tmp_path])
    assert len(refs) == len(headers) and len(headers) >= 2
    assert all(str(r.path).startswith(str(repo / ".aider.chat.history.md") + "#") for r in refs)
