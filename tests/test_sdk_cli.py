"""The CLI on OpenHands SDK conversations, in real subprocesses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "sdk"
COND = "openhands_v1/generated/localconv_condensation/0123456789abcdef0123456789abcdef"
SUB = "openhands_v1/generated/localconv_subagent_confirm/fedcba9876543210fedcba9876543210"


def test_ls_json_lists_conversations_not_subagents(cli, corpus):
    p = cli("ls", corpus / "openhands_v1", "--json", check=True)
    rows = json.loads(p.stdout)
    assert len(rows) == 12
    by_id = {r["id"]: r for r in rows}
    sub = by_id["fedcba98-7654-3210-fedc-ba9876543210"]
    assert sub["subagents"] == 1 and sub["events"] == 16 and sub["execution_status"] == "finished"
    assert "76c59dea-abed-4b48-9302-acc428482219" not in by_id
    server = by_id["aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"]
    assert server["title"].startswith("SUMMARY:") and server["updated"] == "2026-11-29T17:49:48.718642Z"
    assert by_id["00000000-0000-4000-8000-000000000002"]["cost"] == 0.0141
    assert set(server) >= {"id", "title", "execution_status", "events", "model", "cost", "updated"}


def test_ls_table_and_errors(cli, corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # piped output is COLUMNS wide (80 unset); the full id needs more
    p = cli("ls", corpus / COND, check=True)
    assert "01234567-89ab-cdef-0123-456789abcdef" in p.stdout and "finished" in p.stdout and "openai/stub-model" in p.stdout
    p = cli("ls", tmp_path / "missing")
    assert p.returncode == 2 and "no such file" in p.stderr
    p = cli("ls", tmp_path, "--json", check=True)
    assert json.loads(p.stdout) == []


def test_context_json_matches_a_logged_request(cli, corpus):
    p = cli("context", corpus / COND, "--json", check=True)
    entries = json.loads(p.stdout)
    assert [e["llm_response_id"] for e in entries][-1] == "chatcmpl-stub-0008"
    want = json.loads((corpus / "openhands_v1/generated/requests_run1/req-006.json").read_text())["body"]["messages"]
    assert next(e for e in entries if e["llm_response_id"] == "chatcmpl-stub-0006")["messages"] == want


def test_context_at_recursive_and_text(cli, corpus):
    conv = corpus / SUB
    p = cli("context", conv, "--recursive", "--json", check=True)
    entries = json.loads(p.stdout)
    assert {e["conversation_id"] for e in entries} == {"fedcba98-7654-3210-fedc-ba9876543210", "76c59dea-abed-4b48-9302-acc428482219"}
    p = cli("context", conv, "--at", "14cd8ef2-bf14-4752-ac44-f61daf8ec90c", "--json", check=True)
    (e,) = json.loads(p.stdout)
    assert e["llm_response_id"] == "chatcmpl-stub-0001" and [m["role"] for m in e["messages"]] == ["system", "user"]
    p = cli("context", conv / "events", check=True)
    assert "call 1: chatcmpl-stub-0001" in p.stdout and "Action rejected: Not yet, try again" in p.stdout
    p = cli("context", conv, "--at", "nope")
    assert p.returncode == 2 and "no event" in p.stderr


def test_context_refuses_acp_agent_plainly(cli):
    p = cli("context", FIX / "acp_agent/22222222222222222222222222222222", "--json")
    assert p.returncode == 2 and "ACPAgent" in p.stderr and "cannot be rebuilt" in p.stderr
    assert p.stdout == ""


def test_steps_and_show_on_a_conversation(cli, corpus):
    p = cli("steps", corpus / SUB, "--json", check=True)
    doc = json.loads(p.stdout)
    assert doc["format"] == "openhands-sdk" and doc["step_count"] == 4
    assert [s["action"] for s in doc["steps"]][:2] == ["echo hello > hello.txt", "echo hello > hello.txt"]
    task_step = doc["steps"][2]
    assert task_step["children"] == ["76c59dea-abed-4b48-9302-acc428482219"]
    assert task_step["extra"]["child_match"][0]["method"] == "usage-metrics"
    assert doc["children"][0]["step_count"] == 2
    p = cli("steps", corpus / COND, "--expect-steps", "8", check=True)
    assert "terminal" in p.stdout
    p = cli("steps", corpus / COND, "--expect-steps", "9")
    assert p.returncode == 1
    p = cli("show", corpus / SUB, "--width", "80", check=True)
    assert "sub-agent of step 3" in p.stdout and "Run `cat hello.txt` and finish." in p.stdout


def test_cli_size_cap_and_broken_conversation(cli, corpus, tmp_path):
    dst = tmp_path / "c"
    shutil.copytree(corpus / COND, dst)
    (dst / "base_state.json").write_bytes(b"{trunc")
    p = cli("steps", dst, "--json", "--max-file-bytes", "20000", check=True)
    doc = json.loads(p.stdout)
    got = {d["code"] for d in doc["diagnostics"]}
    assert {"sdk.state-malformed", "sdk.event-too-large"} <= got
    p = cli("detect", dst / "events", "--json", check=True)
    assert json.loads(p.stdout)["format"] == "openhands-sdk"


@pytest.mark.parametrize("verb", ["ls", "context"])
def test_help(cli, verb):
    p = cli(verb, "--help", check=True)
    assert "Usage" in p.stdout
