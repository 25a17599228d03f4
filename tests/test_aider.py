"""Aider chat histories (issue 11): runs split at their headers and
addressed FILE#<header time>, prompts / replies / tool lines counted as the
format note says (an independent line count here), edit blocks as steps
paired with their applied lines, the lossy parts reported, bad input as
located diagnostics."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, REPO

from trajkit import registry
from trajkit.model import ReadOptions

CORPUS_FILE = CORPUS / "aider/kenn-io+agentsview/internal/parser/testdata/aider/myrepo/.aider.chat.history.md"
FIXTURE = REPO / "src/trajkit/formats/fixtures/aider/webhook/.aider.chat.history.md"


def count(path: Path) -> dict[str, dict[str, int]]:
    """aider.md §2/§5 by hand: per run header, the prompt blocks, the reply blocks, the '> ' lines after the first prompt,
    the SEARCH/REPLACE blocks and the applied/not-applied lines."""
    runs: dict[str, dict[str, int]] = {}
    cur = None
    prev = None
    for line in path.read_text().split("\n"):
        m = re.match(r"# aider chat started at (.*)$", line)
        if m:
            cur = runs.setdefault(m.group(1).replace(" ", "T"), {"prompts": 0, "replies": 0, "tool": 0, "blocks": 0, "applied": 0, "seen": 0})
            prev = None
            continue
        if cur is None:
            continue
        kind = "user" if line.startswith("#### ") else "tool" if line.startswith("> ") else "blank" if not line.strip() else "text"
        if kind == "user" and prev != "user":
            cur["prompts"] += 1
            cur["seen"] = 1
        if kind == "tool" and cur["seen"]:
            cur["tool"] += 1
            if re.match(r"> (Applied edit to|Did not apply edit to) ", line):
                cur["applied"] += 1
        if kind == "text" and cur["seen"] and prev not in ("text", "blank-in-text"):
            cur["replies"] += 1
        if line.strip() == "<<<<<<< SEARCH":
            cur["blocks"] += 1
        prev = "blank-in-text" if kind == "blank" and prev in ("text", "blank-in-text") else kind
    return runs


def _members(path: Path) -> list[str]:
    return [m.rsplit("#", 1)[1] for m in registry.members(str(path))]


def test_corpus_file_runs_and_counts():
    want = count(CORPUS_FILE)
    assert list(want) == ["2026-06-09T14:01:00", "2026-06-09T15:30:00", "2026-06-09T16:00:00"]
    assert _members(CORPUS_FILE) == list(want)
    # the note's own statement of the file: run 1 two prompts, two replies, five tool lines; run 2 one/one/one; run 3 empty
    assert [(w["prompts"], w["replies"], w["tool"]) for w in want.values()] == [(2, 2, 5), (1, 1, 1), (0, 0, 0)]
    for mid, w in want.items():
        s = registry.read(f"{CORPUS_FILE}#{mid}")
        assert s.format == "aider" and s.id == mid
        assert sum(1 for e in s.events if e.kind == "message" and e.role == "user") == w["prompts"]
        assert sum(1 for e in s.events if e.role == "assistant") == w["replies"]
        assert sum(1 for e in s.events if e.source == "environment" and e.type != "notice") == w["tool"]
        assert s.steps == []  # no edit blocks in this file
        assert s.run.started_at == mid
        assert "aider.lossy" in {d.code for d in s.diagnostics}
    empty = registry.read(f"{CORPUS_FILE}#2026-06-09T16:00:00")
    assert "aider.empty-run" in {d.code for d in empty.diagnostics}


def test_fixture_steps_pair_edit_blocks_with_applied_lines():
    want = count(FIXTURE)
    (mid,) = want
    s = registry.read(FIXTURE)
    assert s.id == mid
    assert want[mid]["blocks"] == want[mid]["applied"] == len(s.steps) == 3
    lines = FIXTURE.read_text().split("\n")
    applied = [l[2:].rstrip() for l in lines if re.match(r"> (Applied edit to|Did not apply edit to) ", l)]
    assert [st.observation for st in s.steps] == applied
    paths = [re.search(r"edit to (\S+)", a).group(1) for a in applied]
    assert [st.extra["call_id"] and json.loads(json.dumps(st.action)) and p in st.action for st, p in zip(s.steps, paths)] == [True] * 3
    # the Tokens lines: 4.5k sent / 429 received, $0.02; 5.1k sent / 88 received, $0.01 (rounded, approximate)
    usages = [(e.model_usage.input, e.model_usage.output, e.model_usage.cost) for e in s.events if e.model_usage is not None]
    assert usages == [(4500, 429, 0.02), (5100, 88, 0.01)]
    assert all("approximate" in e.model_usage.source for e in s.events if e.model_usage is not None)
    assert s.run.models == ["gpt-4o"] and s.run.harness_version == "0.86.1"
    # the '#### Step 1' heading inside the first reply: the applied lines still find their blocks, and say so
    assert [d.code for d in s.diagnostics if d.code == "aider.edit-result-earlier"] == ["aider.edit-result-earlier"] * 2
    prompts = [e.text for e in s.events if e.kind == "message" and e.role == "user"]
    assert prompts[1] == "retry the webhook call three times\nand read the timeout from the environment"
    assert prompts[0] == "/add src/webhook.py src/config.py"


def test_ids_stay_when_the_file_grows(tmp_path):
    f = tmp_path / ".aider.chat.history.md"
    f.write_bytes(CORPUS_FILE.read_bytes())
    before = _members(f)
    with f.open("a") as fh:
        fh.write("\n# aider chat started at 2026-06-09 16:00:00\n\n#### again\nok\n")
    after = _members(f)
    assert after[: len(before)] == before and after[-1] == "2026-06-09T16:00:00-2"


def test_cli_runs_over_every_run_and_tz(tmp_path):
    p = subprocess.run([sys.executable, "-m", "trajkit", "steps", str(CORPUS_FILE), "--jsonl"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    s = registry.read(f"{CORPUS_FILE}#2026-06-09T14:01:00", options=ReadOptions(tz="Europe/Paris"))
    assert s.run.started_at == "2026-06-09T12:01:00Z"


def test_convert_reports_what_is_lost(tmp_path):
    p = subprocess.run([sys.executable, "-m", "trajkit", "convert", str(FIXTURE), "--to", "atif", "--out", str(tmp_path / "o"),
                        "--report", str(tmp_path / "r.json"), "--json"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, (p.stdout, p.stderr)
    rep = json.loads((tmp_path / "r.json").read_text())
    lossy = [d for d in rep["diagnostics"] if d["code"] == "aider.lossy"]
    assert lossy and "per-message times" in lossy[0]["message"] and "exact token counts" in lossy[0]["message"]
    assert rep["unaccounted"] == []


@pytest.mark.parametrize("name,body,code,line", [
    ("no-runs", "# notes\n\njust text\n", "aider.no-runs", None),
    ("preamble", "stray text\n# aider chat started at 2026-01-01 00:00:00\n#### hi\nhello\n", "aider.text-before-first-run", 1),
    ("cut-block", "# aider chat started at 2026-01-01 00:00:00\n\n#### edit\n\na.py\n<<<<<<< SEARCH\nx\n", "aider.edit-cut", 6),
    ("not-utf8", b"# aider chat started at 2026-01-01 00:00:00\n\n#### caf\xe9\nok\n", "aider.not-utf8", None),
    ("empty-run", "# aider chat started at 2026-01-01 00:00:00\n", "aider.empty-run", 1),
])
def test_bad_input_is_located(name, body, code, line, tmp_path):
    f = tmp_path / f"{name}.md"
    (f.write_bytes if isinstance(body, bytes) else f.write_text)(body)
    s = registry.read(f, format="aider")
    found = [d for x in s.walk() for d in x.diagnostics if d.code == code]
    assert found, [str(d) for d in s.diagnostics]
    assert found[0].file == str(f) and (line is None or found[0].line == line)


def test_bad_tz_and_unknown_member(tmp_path):
    s = registry.read(f"{CORPUS_FILE}#2026-06-09T15:30:00", options=ReadOptions(tz="Nowhere/Land"))
    assert "aider.bad-tz" in {d.code for d in s.diagnostics}
    with pytest.raises(Exception) as e:
        registry.read(f"{CORPUS_FILE}#1999-01-01T00:00:00")
    assert "no session" in str(e.value)
    s = registry.get_format("aider").read(CORPUS_FILE, ReadOptions(member="1999-01-01T00:00:00"))
    assert [d.code for d in s.diagnostics if d.code == "aider.no-such-run"] == ["aider.no-such-run"]
