"""ASF as input (issue 11): every entry kind read, negative files read with
located diagnostics, sub-sessions linked to their call, and ASF -> Session
-> ASF keeping every content-addressed id (checked by recomputing the ids
from the written lines with RFC 8785 here, independently of trajkit)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785

from conftest import CORPUS, REPO

from trajkit import registry

SESSIONS = CORPUS / "asf" / "agentsession" / "testdata" / "sessions"
FIXTURES = REPO / "src" / "trajkit" / "formats" / "fixtures" / "asf"
NEGATIVE = {"bad-base-parent", "bad-base-prefix", "bad-base-root", "bad-first-kept", "bad-handback", "bad-handback-folded",
            "bad-omit", "bad-parent", "bad-parents", "bad-records", "bad-resume", "corrupt-middle", "duplicate-id",
            "missing-id", "truncated", "unsupported-format"}
ALL = sorted(SESSIONS.glob("*.jsonl")) + sorted((SESSIONS / "v0.4").glob("*.jsonl")) + \
    sorted((CORPUS / "asf/agenteval/testdata/sessions").glob("*.jsonl"))
VALID = [p for p in ALL if p.stem not in NEGATIVE]


def _id(p: Path) -> str:
    return str(p.relative_to(CORPUS / "asf"))


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def _sha(obj) -> str:
    try:
        data = rfc8785.dumps(obj)
    except Exception:  # integers beyond 2^53 (normalised.jsonl): sorted compact JSON, as the corpus README says
        data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def recomputed_id(entry: dict) -> str:
    """RFC 0001 §3.1: id = sha256(JCS({type, parent, ts, content: sha256(JCS(content)), [parents]}))."""
    content = {k: v for k, v in entry.items() if k not in ("id", "type", "parent", "parents", "ts")}
    env = {"type": entry["type"], "parent": entry.get("parent"), "ts": entry.get("ts"), "content": _sha(content)}
    if entry.get("parents"):
        env["parents"] = entry["parents"]
    return _sha(env)


def _convert(src: Path, out: Path, target: str = "asf") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trajkit", "convert", str(src), "--to", target, "--out", str(out), "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def _is_legacy(path: Path) -> bool:
    fmt = _lines(path)[0].get("format", "")
    return int(fmt.rsplit(".", 1)[1]) < 5


@pytest.mark.parametrize("src", VALID, ids=_id)
def test_round_trip_keeps_every_id(src, tmp_path):
    p = _convert(src, tmp_path)
    assert p.returncode == 0, (p.stdout, p.stderr)
    rep = json.loads(p.stdout)
    (out,) = [Path(x) for x in rep["outputs"] if Path(x).name == f"{_lines(src)[0]['id']}.jsonl"]
    assert out.read_bytes() == src.read_bytes()
    if not _is_legacy(src):
        for e in _lines(out)[1:]:
            assert recomputed_id(e) == e["id"]


@pytest.mark.parametrize("name", ["basic", "branch", "compaction", "extensions", "instructions"])
def test_legacy_files_keep_their_migrated_ids(name, tmp_path):
    """A v0.4 file is passed through as written; read again, its migrated ids
    are those of the 0.5+ fixture of the same name (corpus README)."""
    src = SESSIONS / "v0.4" / f"{name}.jsonl"
    p = _convert(src, tmp_path)
    assert p.returncode == 0, p.stderr
    out = Path(json.loads(p.stdout)["outputs"][0])
    s = registry.read(out)
    assert [e.id for e in s.events] == [e["id"] for e in _lines(SESSIONS / f"{name}.jsonl")[1:]]


def _live_path(entries: list[dict]) -> list[dict]:
    by = {e["id"]: e for e in entries}
    leaf = None
    for e in entries:
        if e.get("type") == "label" and e.get("label") == "leaf":
            leaf = e["target"]
    leaf = leaf or entries[-1]["id"]
    out, cur = [], by.get(leaf)
    while cur is not None:
        out.append(cur)
        cur = by.get(cur.get("parent"))
    return out[::-1]


@pytest.mark.parametrize("src", [p for p in VALID if not _is_legacy(p)], ids=_id)
def test_steps_and_usage_from_the_raw_lines(src):
    entries = _lines(src)[1:]
    path = _live_path(entries)
    items = [e["item"] for e in path if e["type"] == "item" and isinstance(e.get("item"), dict)]
    answered = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    expected = [i["call_id"] for i in items if i.get("type") == "function_call" and i["call_id"] in answered]
    s = registry.read(src)
    assert s.format == "asf"
    assert [st.extra["call_id"] for st in s.steps] == expected
    # per-call usage: one Usage per response entry that has usage and output items
    want = sorted((r["usage"].get("input_tokens"), r["usage"].get("output_tokens")) for r in entries
                  if r["type"] == "response" and isinstance(r.get("usage"), dict)
                  and any(e.get("response") == r.get("response_id") for e in entries if e["type"] == "item"))
    got = sorted((e.model_usage.input, e.model_usage.output) for e in s.events if e.model_usage is not None)
    assert got == want


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_negative_files_are_read_with_located_errors(name, tmp_path):
    src = SESSIONS / f"{name}.jsonl"
    s = registry.read(src)
    errors = [d for d in s.diagnostics if d.severity == "error"]
    assert errors, [str(d) for d in s.diagnostics]
    assert all(d.file == str(src) for d in errors)
    assert all(d.code.startswith("asf.") for d in errors)
    p = _convert(src, tmp_path)
    assert p.returncode in (1, 2) and "Traceback" not in p.stderr, p.stderr


def test_truncated_and_corrupt_lines_are_located():
    s = registry.read(SESSIONS / "truncated.jsonl")
    (d,) = [d for d in s.diagnostics if d.code == "asf.truncated-final-line"]
    assert d.line == len((SESSIONS / "truncated.jsonl").read_bytes().rstrip(b"\n").split(b"\n"))
    s = registry.read(SESSIONS / "corrupt-middle.jsonl")
    bad = [n for n, x in enumerate((SESSIONS / "corrupt-middle.jsonl").read_bytes().split(b"\n"), 1) if x.strip() and not _parses(x)]
    assert [d.line for d in s.diagnostics if d.code == "asf.corrupt-line"] == bad


def _parses(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def test_every_entry_is_an_event_and_kinds_follow_the_items():
    src = SESSIONS / "runs.jsonl"
    entries = _lines(src)[1:]
    s = registry.read(src)
    assert [e.id for e in s.events] == [e["id"] for e in entries]
    kinds = {e.id: e.kind for e in s.events}
    for e in entries:
        if e["type"] == "item" and e["item"].get("type") == "function_call":
            assert kinds[e["id"]] == "action"
        elif e["type"] == "item" and e["item"].get("type") == "function_call_output":
            assert kinds[e["id"]] == "observation"
        elif e["type"] in ("run", "dispatch", "decision", "label", "outcome"):
            assert kinds[e["id"]] == "other"
    ends = [e for e in _live_path(entries) if e["type"] == "run" and e.get("phase") == "end"]
    assert s.outcome.status == ends[-1]["reason"]


def test_branches_mark_abandoned_entries():
    src = SESSIONS / "branch.jsonl"
    entries = _lines(src)[1:]
    live = {e["id"] for e in _live_path(entries)}
    s = registry.read(src)
    assert {e.id for e in s.events if e.branch == "active"} == live
    assert {e.id for e in s.events if e.branch == "abandoned"} == {e["id"] for e in entries} - live


def test_subsession_is_linked_to_its_call(tmp_path):
    parent = FIXTURES / "delegation" / "187c8a39-f505-5133-9018-31a948b15551.jsonl"
    entries = _lines(parent)[1:]
    (link,) = [e for e in entries if e["type"] == "link"]
    s = registry.read(parent)
    (child,) = s.children
    assert child.id == link["session"]
    step = next(st for st in s.steps if st.extra["call_id"] == link["call_id"])
    assert step.children == [child] and child.spawned_by.step_id == step.step_id
    # the round trip writes both files back unchanged
    p = _convert(parent, tmp_path)
    assert p.returncode == 0, p.stderr
    for out in json.loads(p.stdout)["outputs"]:
        assert Path(out).read_bytes() == (parent.parent / Path(out).name).read_bytes()


def test_missing_subsession_is_reported(tmp_path):
    parent = FIXTURES / "delegation" / "187c8a39-f505-5133-9018-31a948b15551.jsonl"
    alone = tmp_path / parent.name
    alone.write_bytes(parent.read_bytes())
    s = registry.read(alone)
    assert not s.children
    assert [d.code for d in s.diagnostics if d.code == "asf.subsession-missing"] == ["asf.subsession-missing"]


def test_atif_export_of_asf_input_validates(tmp_path):
    p = _convert(SESSIONS / "runs.jsonl", tmp_path, "atif")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["validated"] is True and rep["problems"] == []


def test_header_only_and_not_asf(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"type":"session","format":"agentsession/0.11","id":"a","created_at":"2026-01-01T00:00:00Z","payload":"openresponses/2026-04-24"}\n')
    s = registry.read(f)
    assert s.format == "asf" and s.events == [] and s.steps == []
    g = tmp_path / "y.jsonl"
    g.write_text('{"a": 1}\n')
    assert registry.detect(g).format is None
    s = registry.read(g, format="asf")
    assert "asf.not-a-session" in {d.code for d in s.diagnostics} or "asf.header-invalid" in {d.code for d in s.diagnostics}
