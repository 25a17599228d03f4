"""The OpenHands SDK (V1) reader over the shared corpus and the sdk fixtures."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from trajkit.formats.openhands_sdk import conversation_dir, find_sessions, read
from trajkit.model import ACTION, CONDENSATION, ERROR_EVENT, MESSAGE, OBSERVATION, OTHER, STATE, SYSTEM, ReadOptions
from trajkit.registry import detect
from trajkit.registry import read as registry_read

FIX = Path(__file__).parent / "fixtures" / "sdk"


@pytest.fixture(scope="module")
def v1(corpus: Path) -> Path:
    return corpus / "openhands_v1"


@pytest.fixture(scope="module")
def condensation(v1: Path) -> Path:
    return v1 / "generated/localconv_condensation/0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def subagent(v1: Path) -> Path:
    return v1 / "generated/localconv_subagent_confirm/fedcba9876543210fedcba9876543210"


@pytest.fixture(scope="module")
def server(v1: Path) -> Path:
    return v1 / "generated/agent_server/aaaaaaaabbbbccccddddeeeeeeeeeeee"


def all_conversations(v1: Path) -> list[Path]:
    return find_sessions(v1)


def test_every_corpus_conversation_reads_cleanly(v1):
    convs = all_conversations(v1)
    assert len(convs) == 12
    for c in convs:
        s = read(c)
        assert s.format == "openhands-sdk"
        assert s.id and s.events
        assert not [d for d in s.diagnostics if d.severity == "error"], (c, s.diagnostics)
        # every file of the directory is accounted for
        on_disk = {str(p) for p in c.rglob("*") if p.is_file() and "subagents" not in p.relative_to(c).parts}
        assert on_disk == {f.path for f in s.files}
        # sessions pickle (process pools) and serialize
        assert pickle.loads(pickle.dumps(s)).to_dict(events=True, raw=True) == s.to_dict(events=True, raw=True)


def test_detect_from_any_path_inside(condensation):
    for p in (condensation, condensation / "base_state.json", condensation / "events", next((condensation / "events").glob("event-00003-*.json")), condensation / "TASKS.json"):
        det = detect(p)
        assert det.format is not None and det.format.name == "openhands-sdk", p
        assert det.match.root == condensation
        assert conversation_dir(p) == condensation


def test_condensation_conversation_facts(condensation):
    s = registry_read(condensation)
    assert s.id == "01234567-89ab-cdef-0123-456789abcdef"
    assert len(s.events) == 20
    kinds = [e.kind for e in s.events]
    assert kinds[0] == SYSTEM and kinds[1] == MESSAGE and kinds[12] == CONDENSATION
    assert [e.extra["index"] for e in s.events] == list(range(20))
    md = s.metadata
    assert md["agent_kind"] == "Agent" and md["model"] == "openai/stub-model"
    assert md["execution_status"] == "finished" and md["reasoning_effort"] == "high"
    assert md["leaf_event_id"] == s.events[-1].id and md["head_is_empty"] is False
    assert md["working_dir"] == "/home/agent/runs/ws"
    assert set(md["stats"]) == {"agent", "condenser"}
    assert md["active_branch"] == [e.id for e in s.events]
    assert md["event_files"] == {"event": 20}
    assert s.task == "Create hello.txt containing hello, then finish."
    assert md["tasks"][0]["title"] == "create file"
    roles = {f.role for f in s.files}
    assert {"state", "event", "sidecar", "tasks"} <= roles
    assert {f.status for f in s.files if f.role == "sidecar"} == {"ignored"}
    # the parallel batch: two actions of one response, first carries the thought
    a4, a5 = s.events[4], s.events[5]
    assert a4.kind == a5.kind == ACTION and a4.response_id == a5.response_id == "chatcmpl-stub-0002"
    assert a4.text == "Now view it and record a plan." and a5.text == ""
    assert a4.tool_calls[0].name == "file_editor" and a4.tool_calls[0].call_id == "call_2_0"
    assert a4.tool_calls[0].arguments["path"] == "/home/agent/runs/ws/hello.txt"
    assert a4.extra["security_risk"] == "UNKNOWN" and a4.extra["summary"] == "view file"
    # usage joined by llm_response_id, on the first event of the response only
    assert a4.usage["prompt_tokens"] == 102 and a4.usage["usage_id"] == "agent" and "latency" in a4.usage
    assert a5.usage is None
    # observations name the action they answer
    o6 = s.events[6]
    assert o6.kind == OBSERVATION and o6.cause == a4.id and o6.call_id == "call_2_0" and o6.role == "tool"
    # the un-executable action and its agent error
    a8, e9 = s.events[8], s.events[9]
    assert a8.extra["executable"] is False and a8.tool_calls[0].name == "no_such_tool"
    assert e9.type == "AgentErrorEvent" and e9.kind == OBSERVATION and e9.cause == a8.id and e9.extra["is_error"]
    cond = s.events[12]
    assert len(cond.extra["forgotten_event_ids"]) == 8 and cond.extra["summary_offset"] == 2
    assert cond.response_id == "chatcmpl-stub-0005" and cond.usage["usage_id"] == "condenser"
    assert s.events[2].reasoning == "User wants hello.txt; use terminal."
    assert s.events[2].timestamp == "2026-11-29T17:47:06.717083"


def test_timestamps_take_a_zone(condensation):
    s = read(condensation, ReadOptions(tz="Europe/Paris"))
    assert s.events[2].timestamp == "2026-11-29T17:47:06.717083+01:00"
    assert s.events[2].raw["timestamp"] == "2026-11-29T17:47:06.717083"
    assert "sdk.unknown-view" in {d.code for d in read(condensation, ReadOptions(view="flat_export")).diagnostics}
    bad = read(condensation, ReadOptions(tz="Not/AZone"))
    assert any(d.code == "sdk.bad-timezone" for d in bad.diagnostics)
    assert bad.events[2].timestamp == "2026-11-29T17:47:06.717083"


def test_agent_server_state_updates_hang_off_the_branch(server):
    s = read(server)
    assert s.metadata["title"] == "SUMMARY: user asked for hello.txt; agent create..."
    assert s.metadata["meta_shape"] == "stored-conversation"
    assert s.metadata["meta"]["id"] == "aaaaaaaabbbbccccddddeeeeeeeeeeee"
    updates = [e for e in s.events if e.type == "ConversationStateUpdateEvent"]
    assert len(updates) == 6 and all(e.kind == STATE for e in updates)
    assert all(e.branch == "side" and e.extra["on_active_branch"] for e in updates)
    assert all(e.id not in s.metadata["active_branch"] for e in updates)
    assert s.metadata["abandoned_event_ids"] == []
    assert any(f.role == "sidecar" and f.path.endswith(".owner_lease.lock") for f in s.files)
    assert [st.action for st in s.steps] == ["echo hi", 'finish({"message": "Said hi.", "summary": "finish"})']


def test_subagent_is_a_child_matched_by_usage_metrics(subagent):
    s = read(subagent)
    assert len(s.children) == 1
    child = s.children[0]
    assert child.id == "76c59dea-abed-4b48-9302-acc428482219"
    assert child.task == "Run `cat hello.txt` and finish."
    step = next(st for st in s.steps if st.tool_type == "task")
    assert step.children == [child]
    (m,) = step.extra["child_match"]
    assert m["child_id"] == child.id and m["method"] == "usage-metrics" and "task:task_00000001" in m["detail"]
    assert child.metadata["spawned_by"]["step_id"] == step.step_id
    link = child.spawned_by
    assert (link.child_id, link.step_id, link.action_event_id, link.method, link.detail) == (
        child.id, step.step_id, step.action_event_id, "usage-metrics", m["detail"])
    # security analysis, user reject and pause are read and typed
    types = [e.type for e in s.events]
    assert types.count("SecurityAnalysisEvent") == 3 and "PauseEvent" in types
    reject = next(e for e in s.events if e.type == "UserRejectObservation")
    assert reject.text == "Action rejected: Not yet, try again" and reject.extra["rejection_source"] == "user"
    assert s.steps[0].observation == "Action rejected: Not yet, try again"
    assert s.steps[0].extra["answer"] == "user_reject"
    assert s.metadata["security_analyzer"] == "LLMSecurityAnalyzer"
    first = s.events[2]
    assert first.extra["security_risk"] == "LOW"  # an analyzer was set, so the model's value stands
    assert first.extra["analyzed_risk"] == {"risk": "LOW", "analysis_event_id": s.events[3].id}
    assert s.metadata["confirmation_policy"] == "NeverConfirm"
    # the child's usage lives in the parent's task:<id> metrics
    assert s.metadata["usage_by_response"]["chatcmpl-stub-0004"]["usage_id"] == "task:task_00000001"


def test_child_matched_by_prompt_when_metrics_do_not_say(subagent, tmp_path):
    import shutil

    import orjson

    dst = tmp_path / subagent.name
    shutil.copytree(subagent, dst)
    state = orjson.loads((dst / "base_state.json").read_bytes())
    del state["stats"]["usage_to_metrics"]["task:task_00000001"]
    (dst / "base_state.json").write_bytes(orjson.dumps(state))
    s = read(dst)
    step = next(st for st in s.steps if st.tool_type == "task")
    assert step.extra["child_match"][0]["method"] == "prompt" and step.children[0].spawned_by.method == "prompt"
    # and by time when neither metrics nor prompt tell
    child_events = dst / "subagents" / "76c59deaabed4b489302acc428482219" / "events"
    p = next(child_events.glob("event-00001-*.json"))
    ev = orjson.loads(p.read_bytes())
    ev["llm_message"]["content"][0]["text"] = "something else"
    p.write_bytes(orjson.dumps(ev))
    s = read(dst)
    step = next(st for st in s.steps if st.tool_type == "task")
    assert step.extra["child_match"][0]["method"] == "timestamp" and step.children[0].spawned_by.method == "timestamp"


def test_old_sdk_artifacts(v1):
    old = read(v1 / "sdk_pr_artifacts/4f4c68c16/cd94562403b9487ebdd4018e3f531dfd")
    assert all(not e.raw.get("parent_id") for e in old.events)
    assert old.metadata["leaf_source"] == "last-event"
    assert old.metadata["active_branch"] == [e.id for e in old.events]
    assert [st.tool_type for st in old.steps] == ["terminal", "finish"]
    assert old.steps[0].action == "pwd > tool_output.txt"
    probe = read(v1 / "sdk_pr_artifacts/d25a022a2/3fdb316098bb48e1aa029ce56805792a")
    assert probe.metadata["agent_kind"] == "ProbeAgent"
    unknown = [e for e in probe.events if e.type == "SystemPromptUpdateEvent"]
    assert len(unknown) == 1 and unknown[0].kind == OTHER and unknown[0].extra["unknown_kind"]
    assert unknown[0].raw["reason"] == "tools_changed"
    assert any(d.code == "sdk.unknown-kind" for d in probe.diagnostics)
    plugin = read(v1 / "sdk_pr_artifacts/570d4a052/00000000000000000000000000000203")
    assert plugin.events[1].extra["extended_text"].startswith("<EXTRA_INFO>")
    assert plugin.events[0].extra["dynamic_context"]


def test_certifier_fixtures_carry_end_signals(v1):
    base = v1 / "certifier_fixtures/conversations"
    status = {p.name: read(p).metadata["execution_status"] for p in sorted(base.iterdir())}
    assert status == {"blocked": "error", "finished": "finished", "max-iterations": "error", "paused": "paused", "running": "running", "stuck": "stuck"}
    s = read(base / "max-iterations")
    err = s.events[1]
    assert err.kind == ERROR_EVENT and err.extra["code"] == "MaxIterationsReached" and err.extra["on_active_branch"]
    assert s.metadata["stats"]["recipe"]["accumulated_cost"] == 0.0141


def test_legacy_execute_bash_reads_as_terminal():
    s = read(FIX / "legacy_execute_bash/11111111111111111111111111111111")
    a = s.events[2]
    assert a.raw["action"]["kind"] == "ExecuteBashAction" and a.extra["action_kind"] == "TerminalAction"
    assert s.events[3].extra["observation_kind"] == "TerminalObservation"
    assert [st.action for st in s.steps] == ["ls", "Two files; done soon."]
    assert s.steps[0].thinking == "Listing." and s.steps[1].thinking is None
    assert s.metadata["meta_shape"] == "embedded-agent" and s.metadata["title"] == "List files"
    # stats: 300.0 is 300 with a flag; -5 and 1.5 read as 0 with a warning
    acc = s.metadata["stats"]["agent"]["accumulated_token_usage"]
    assert acc["prompt_tokens"] == 300 and acc["cache_read_tokens"] == 0 and acc["reasoning_tokens"] == 0
    codes = {d.code for d in s.diagnostics}
    assert {"sdk.number-as-float", "sdk.bad-number"} <= codes
    agent = s.metadata["stats"]["agent"]
    assert [t["response_id"] for t in agent["token_usages"]] == ["resp-1", "resp-2"] and agent["calls"] == 2
    assert [c["cost"] for c in agent["costs"]] == [0.1, 0.15]
    assert [(x["response_id"], x["latency"]) for x in agent["response_latencies"]] == [("resp-1", 1.5), ("resp-2", 0.5)]
    # costs without response ids join by position when the lists line up
    assert s.steps[0].usage["prompt_tokens"] == 100 and s.steps[0].cost == 0.1
    assert s.steps[1].cost == 0.15 and s.steps[1].usage["cost_join"] == "position"
    assert s.steps[0].usage["latency"] == 1.5


def test_branches_are_kept_and_marked():
    s = read(FIX / "branched/33333333333333333333333333333333")
    place = {e.raw["id"][-2:]: e.branch for e in s.events}
    assert place == {"20": "active", "21": "active", "22": "abandoned", "23": "abandoned", "24": "side", "25": "active", "26": "active", "27": "abandoned"}
    assert s.metadata["active_branch"][-1].endswith("26")
    assert len(s.metadata["abandoned_event_ids"]) == 3
    assert [st.action for st in s.steps] == ["make"]
    assert any(d.code == "sdk.abandoned-branch" for d in s.diagnostics)
    # __root__ starts a new root: its effective parent is none
    restart = s.events[7]
    assert restart.parent_id == "__root__" and "effective_parent_id" not in restart.extra


def test_acp_agent_steps_are_observed_tool_calls():
    s = read(FIX / "acp_agent/22222222222222222222222222222222")
    assert s.metadata["context_rebuildable"] is False
    assert [(st.action, st.observation) for st in s.steps] == [('read({"path": "main.py"})', "print('hi')"), ('finish({"message": "Done."})', "Done.")]
    assert s.steps[0].extra["acp"] is True
    assert s.steps[1].thinking == "Looked at main.py."


def test_find_sessions_shapes(v1, condensation, tmp_path):
    import os

    assert find_sessions(condensation) == [condensation]
    assert find_sessions(condensation / "events" / next(os.scandir(condensation / "events")).name) == [condensation]
    under = find_sessions(v1 / "generated")
    assert [p.name for p in under] == ["aaaaaaaabbbbccccddddeeeeeeeeeeee", "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]
    # sub-agents belong to their parent
    assert not any("subagents" in p.parts for p in find_sessions(v1))
    diags = []
    assert find_sessions(tmp_path / "nope", diags) == [] and diags[0].code == "sdk.root-missing"


def test_every_diagnostic_code_is_documented():
    import re

    src = Path(__file__).resolve().parent.parent / "src" / "trajkit" / "formats" / "openhands_sdk"
    used = set()
    for f in src.glob("*.py"):
        used |= set(re.findall(r'"(sdk\.[a-z-]+)"', f.read_text()))
    doc = (Path(__file__).resolve().parent.parent / "docs" / "openhands-sdk.md").read_text()
    documented = set(re.findall(r"^\| `(sdk\.[a-z-]+)` \|", doc, re.M))
    assert used == documented


def test_meta_json_alone_is_a_weak_claim(server, tmp_path):
    import shutil

    only_meta = tmp_path / "aaaaaaaabbbbccccddddeeeeeeeeeeee"
    only_meta.mkdir()
    shutil.copy(server / "meta.json", only_meta / "meta.json")
    det = detect(only_meta)
    assert det.format.name == "openhands-sdk" and det.match.strength == "weak"
    s = read(only_meta)
    assert s.id == "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee" and s.task == "Say hi via terminal."
    assert s.task_source == "meta.json initial_message"
    assert {"sdk.state-missing", "sdk.events-missing"} <= {d.code for d in s.diagnostics}
    # a meta.json that is not the agent server's does not make a conversation
    other = tmp_path / "other"
    other.mkdir()
    (other / "meta.json").write_text('{"name": "something else"}')
    assert conversation_dir(other) is None
    assert detect(other).format is None or detect(other).format.name != "openhands-sdk"


@pytest.mark.parametrize("level", [None, 0, 1, 2, 3, 4])
def test_verifier_dir_above_a_conversation_and_its_subagent(tmp_path, subagent, level):
    """The reader answers the harbor ``verifier/`` look-up partly from the
    listings it holds (the conversation's folder, ``subagents/``); the answer
    must be the plain look-up's (stats of every candidate), for the
    conversation and its sub-agent, with the verifier at each level (4 is
    beyond the look-up's reach) and with decoys that are not one (a file
    named ``verifier``, a ``verifier/`` without ``ctrf.json``/``reward.txt``)."""
    import shutil

    from trajkit.vocab.trials import find_verifier_dir

    conv = tmp_path / "a" / "b" / "c" / "d" / subagent.name
    shutil.copytree(subagent, conv)
    (conv.parent / "verifier").write_text("a file, not the folder")  # decoy one level up
    (conv / "subagents" / "verifier").mkdir()  # decoy: no ctrf.json / reward.txt
    if level is not None:
        where = conv.parents[level - 1] if level else conv
        if level == 1:
            (where / "verifier").unlink()
        (where / "verifier").mkdir()
        (where / "verifier" / ("reward.txt" if level % 2 else "ctrf.json")).write_text("1\n")
    s = read(conv)
    child = next(c for c in s.children if c.source_path.endswith("76c59deaabed4b489302acc428482219"))
    assert s.run.verifier_dir == find_verifier_dir(str(conv))
    assert child.run.verifier_dir == find_verifier_dir(child.source_path)
    if level is None or level == 4:
        assert s.run.verifier_dir is None and child.run.verifier_dir is None
    else:
        assert s.run.verifier_dir == str(conv.parents[level - 1] / "verifier" if level else conv / "verifier")
        # the sub-agent sits two folders deeper: a verifier three above the conversation is out of its reach
        assert child.run.verifier_dir == (None if level >= 2 else s.run.verifier_dir)
