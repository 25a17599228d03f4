"""Engine outcome per harness, and the end-to-end state over the certifier fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from certify_shapes import V1_FIXTURES, fixture_copy, junit, v1_run
from trajkit.certify import CertifyOptions, certify
from trajkit.certify.engine import engine_outcome
from trajkit.registry import read

GREEN_WS = V1_FIXTURES / "workspaces" / "green"
STALE_WS = V1_FIXTURES / "workspaces" / "stale"


@pytest.fixture
def gates(tmp_path):
    """Visible check "artifact.txt exists" and withheld check "content equals the expected text",
    evaluated on the fixture workspaces as the recipe defines them."""
    def make(ws: Path) -> tuple[Path, Path]:
        art = ws / "artifact.txt"
        vis = junit(tmp_path / f"{ws.name}-visible.xml", {"artifact_exists": "passed" if art.is_file() else "failed"})
        ok = art.is_file() and art.read_text().strip() == "hello from openhands"
        hold = junit(tmp_path / f"{ws.name}-holdout.xml", {"artifact_content": "passed" if ok else "failed"})
        return vis, hold
    return make


@pytest.mark.parametrize("name,state,engine", [
    ("finished", "Succeeded", {"reached_end": True, "claimed_success": True}),
    ("max-iterations", "FailedBudget", {"budget_exhausted": True, "external_error": None}),
    ("blocked", "FailedBlocked", {"budget_exhausted": False}),
    ("stuck", "FailedBudget", {"budget_exhausted": True}),
    ("paused", "AbortedByHuman", {"human_abort": True}),
    ("running", "FailedUnverifiable", {"reached_end": False}),
])
def test_certifier_fixtures_with_green_workspace(name, state, engine, gates):
    vis, hold = gates(GREEN_WS)
    cert = certify(V1_FIXTURES / "conversations" / name, CertifyOptions(workspace=str(GREEN_WS), visible=[str(vis)], holdout=[str(hold)]))
    assert cert.state == state, cert.reason
    for k, v in engine.items():
        assert cert.engine[k] == v
    assert cert.findings == []
    if name == "blocked":
        assert cert.engine["external_error"].startswith("LLMAuthenticationError")


def test_stale_workspace_is_a_false_completion(gates):
    vis, hold = gates(STALE_WS)
    cert = certify(V1_FIXTURES / "conversations" / "finished", CertifyOptions(workspace=str(STALE_WS), visible=[str(vis)], holdout=[str(hold)]))
    assert cert.state == "FailedUnverifiable" and cert.false_completion is True and cert.claimed_success is True
    assert cert.gate["verdict"] == "FalseCompletion"


def _set_error(conv: Path, code: str, detail: str, classification: dict | None = None) -> None:
    f = next((conv / "events").glob("event-00001-*.json"))
    ev = json.loads(f.read_text())
    ev["code"], ev["detail"] = code, detail
    if classification is not None:
        ev["classification"] = classification
    f.write_text(json.dumps(ev))


@pytest.mark.parametrize("code,detail,classification,expect", [
    ("MaxBudgetReached", "Conversation reached its USD budget", None, "budget"),
    ("MaxIterationsReached", "Agent reached maximum iterations limit (3).", {"kind": "agent_action", "retryable": False, "user_action": "none"}, "budget"),
    ("LLMBadRequestError", "usage ended", {"kind": "x", "cause": "run_limit"}, "budget"),
    ("LLMBadRequestError", "daily quota", {"kind": "quota", "cause": "quota"}, "budget"),
    ("LLMAuthenticationError", "bad key", {"kind": "auth", "retryable": False, "user_action": "settings"}, "blocked"),
    ("LLMBadRequestError", "insufficient balance", {"kind": "quota", "retryable": False, "user_action": "settings"}, "blocked"),
    ("APIConnectionError", "dns failed", {"kind": "unknown", "cause": "network"}, "blocked"),
    ("ServiceUnavailableError", "503", {"kind": "transient", "cause": "provider_unavailable"}, "blocked"),
    ("ConversationOwnershipLostError", "lease lost", {"kind": "agent_action"}, "blocked"),
])
def test_v1_error_classification(tmp_path, code, detail, classification, expect):
    conv = fixture_copy("blocked", tmp_path / "conv")
    _set_error(conv, code, detail, classification)
    out = engine_outcome(read(conv))
    if expect == "budget":
        assert out.budget_exhausted and not out.external_error
    else:
        assert out.external_error and code in out.external_error and not out.budget_exhausted


def test_v1_error_without_error_event_is_blocked_unclassified(tmp_path):
    conv = fixture_copy("max-iterations", tmp_path / "conv")
    next((conv / "events").glob("event-00001-*.json")).unlink()
    out = engine_outcome(read(conv))
    assert out.external_error.startswith("unclassified engine error")


def test_v1_error_before_the_last_user_message_does_not_count(tmp_path):
    """An error of an earlier run, followed by a new user message and a finished run."""
    conv = v1_run(tmp_path / "conv", [{"terminal": "ls", "output": "a.py"}], status="error", finish=False)
    # only an old error (before the last user message): reorder so the user message comes last
    ev_files = sorted((conv / "events").glob("event-*.json"))
    err = json.loads(next((V1_FIXTURES / "conversations" / "max-iterations" / "events").glob("event-00001-*.json")).read_text())
    user = json.loads(ev_files[1].read_text())
    last = json.loads(ev_files[-1].read_text())
    err["parent_id"] = last["id"]
    user2 = dict(user, id="11111111-2222-4333-8444-555555555555", parent_id=err["id"])
    n = len(ev_files)
    (conv / "events" / f"event-{n:05d}-{err['id']}.json").write_text(json.dumps(err))
    (conv / "events" / f"event-{n + 1:05d}-{user2['id']}.json").write_text(json.dumps(user2))
    state = json.loads((conv / "base_state.json").read_text())
    state["leaf_event_id"] = user2["id"]
    (conv / "base_state.json").write_text(json.dumps(state))
    out = engine_outcome(read(conv))
    assert out.external_error and out.external_error.startswith("unclassified")


def test_v1_waiting_for_confirmation_and_idle(tmp_path):
    for status in ("waiting_for_confirmation", "idle"):
        conv = fixture_copy("running", tmp_path / status)
        st = json.loads((conv / "base_state.json").read_text())
        st["execution_status"] = status
        (conv / "base_state.json").write_text(json.dumps(st))
        out = engine_outcome(read(conv))
        assert out.reached_end is False and not out.human_abort and not out.budget_exhausted
        assert out.approval_wait is (status == "waiting_for_confirmation")


def test_v1_generated_runs_reach_their_end(corpus):
    for conv in ["localconv_condensation/0123456789abcdef0123456789abcdef", "agent_server/aaaaaaaabbbbccccddddeeeeeeeeeeee",
                 "localconv_subagent_confirm/fedcba9876543210fedcba9876543210"]:
        out = engine_outcome(read(corpus / "openhands_v1" / "generated" / conv))
        assert out.reached_end and out.claimed_success, conv


def test_v0_trials(corpus):
    trials = corpus / "openhands_v0" / "reconstructed_trials"
    killed = engine_outcome(read(trials / "vue-todo-app.1-of-1.killed-run"))
    assert killed.budget_exhausted and killed.status == "agent_timeout" and not killed.claimed_success
    done = engine_outcome(read(trials / "game-2048-session.1-of-1.all-views"))
    assert done.reached_end and done.claimed_success


def _v0_trial_with_state(tmp_path, corpus, state: str, reason: str | None, failure_mode: str = "unset") -> Path:
    src = corpus / "openhands_v0" / "reconstructed_trials" / "vue-todo-app.1-of-1.killed-run"
    dst = tmp_path / "trial"
    shutil.copytree(src, dst)
    res = json.loads((dst / "results.json").read_text())
    res["failure_mode"] = failure_mode
    (dst / "results.json").write_text(json.dumps(res, indent=4))
    ev_dir = next((dst / "sessions" / "sessions").iterdir()) / "events"
    tmpl = json.loads((ev_dir / "0.json").read_text())  # a real agent_state_changed observation
    assert tmpl["observation"] == "agent_state_changed"
    n = max(int(p.stem) for p in ev_dir.glob("*.json")) + 1
    tmpl["id"] = n
    tmpl["extras"]["agent_state"] = state
    if reason is not None:
        tmpl["extras"]["reason"] = reason
    (ev_dir / f"{n}.json").write_text(json.dumps(tmpl))
    return dst


@pytest.mark.parametrize("state,reason,failure_mode,expect", [
    ("error", "RuntimeError: Agent reached maximum iteration. Current iteration: 30, max iteration: 30", "unset", "budget"),
    ("error", "RuntimeError: Agent reached maximum budget for conversation.Current budget: 1.01, max budget: 1.00", "unset", "budget"),
    ("error", "STATUS$ERROR_LLM_AUTHENTICATION", "unset", "blocked"),
    ("error", "STATUS$ERROR_RUNTIME_DISCONNECTED", "unset", "blocked"),
    ("rate_limited", None, "unset", "blocked"),
    ("running", None, "agent_installation_failed", "blocked"),
    ("running", None, "context_length_exceeded", "budget"),
    ("awaiting_user_input", None, "unset", "no-end"),
])
def test_v0_end_signals(tmp_path, corpus, state, reason, failure_mode, expect):
    out = engine_outcome(read(_v0_trial_with_state(tmp_path, corpus, state, reason, failure_mode)))
    assert {"budget": out.budget_exhausted, "blocked": bool(out.external_error), "no-end": not out.reached_end}[expect], out
    assert not (out.budget_exhausted and out.external_error)


def _harbor_trial(tmp_path, corpus, exception_info=None, reward="1") -> Path:
    """A harbor-layout trial (agent/sessions, result.json, verifier/) around a real V0 stream."""
    src = corpus / "openhands_v0" / "reconstructed_trials" / "game-2048-session.1-of-1.all-views"
    trial = tmp_path / "job" / "game-2048__abc"
    (trial / "agent").mkdir(parents=True)
    shutil.copytree(src / "sessions" / "sessions", trial / "agent" / "sessions")
    shutil.copy(next((src / "sessions").glob("*.json")), trial / "agent" / "openhands.trajectory.json")
    (trial / "verifier").mkdir()
    (trial / "verifier" / "reward.txt").write_text(reward + "\n")
    (trial / "result.json").write_text(json.dumps({
        "id": "x", "task_name": "game-2048", "trial_name": trial.name,
        "verifier_result": {"rewards": {"reward": float(reward)}}, "exception_info": exception_info,
    }))
    return trial


def test_harbor_verifier_is_the_default_holdout_and_exceptions_map(tmp_path, corpus):
    trial = _harbor_trial(tmp_path / "ok", corpus)
    cert = certify(trial, CertifyOptions())
    assert cert.gate["verdict"] == "Succeeded" and cert.gate["sources"]["holdout"]["kind"] == "harbor-verifier"
    assert cert.engine["reached_end"] and cert.claimed_success
    red = certify(_harbor_trial(tmp_path / "red", corpus, reward="0"), CertifyOptions())
    assert red.gate["verdict"] == "NotReady" and red.gate["passed_holdout"] is False
    timeout = engine_outcome(read(_harbor_trial(tmp_path / "to", corpus, {"exception_type": "AgentTimeoutError", "exception_message": "timed out after 900s"})))
    assert timeout.budget_exhausted and not timeout.external_error
    crash = engine_outcome(read(_harbor_trial(tmp_path / "cr", corpus, {"exception_type": "DockerDaemonError", "exception_message": "daemon gone"})))
    assert crash.external_error.startswith("harbor exception DockerDaemonError")
    assert certify(trial, CertifyOptions(harness_gate=False)).gate["verdict"] == "NotReady"


def test_v1_legacy_tail_error_on_another_branch_is_not_this_runs_end(tmp_path):
    """An error event hung off an event outside the active branch (a legacy tail) must not decide the end."""
    conv = fixture_copy("max-iterations", tmp_path / "conv")
    f = next((conv / "events").glob("event-00001-*.json"))
    ev = json.loads(f.read_text())
    ev["parent_id"] = "99999999-9999-4999-8999-999999999999"
    f.write_text(json.dumps(ev))
    out = engine_outcome(read(conv))
    assert not out.budget_exhausted  # the MaxIterationsReached of another branch is not ours
    assert out.external_error and out.external_error.startswith("unclassified")


def test_generic_chat_format_ends_with_a_final_answer(corpus):
    """The opencode proxy trace (a generic tool-call format) ends with an assistant message that calls no tool."""
    out = engine_outcome(read(corpus / "opencode" / "proxy_trace_synthetic.jsonl"))
    assert out.reached_end and out.claimed_success and out.status == "final-answer"
