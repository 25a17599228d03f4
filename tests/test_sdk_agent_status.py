"""Pre-1.0 OpenHands SDK state (issue 14 item 11): ``agent_status`` is the old
name of ``execution_status``, in ``base_state.json`` and in
``ConversationStateUpdateEvent`` keys. ``ls`` shows it and ``certify`` finds it.

The pre-1.0 conversation is written by hand: the corpus events (the SDK event
envelope did not change), and a ``base_state.json`` with the pre-1.0 field
set (``agent_status``, ``confirmation_mode``,
``activated_knowledge_microagents``; no ``execution_status``, no tree HEAD).
The expected statuses are the values the test writes.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from certify_shapes import junit, v1_run
from trajkit.certify import CertifyOptions, certify


def _pre_1_0(dest: Path, status: str | None, updates: list[dict] | None = None) -> Path:
    conv = v1_run(dest, [{"terminal": "ls", "output": "README.md"}], status="finished")
    new = json.loads((conv / "base_state.json").read_text())
    old = {
        "id": new["id"],
        "agent": new["agent"],
        "workspace": new.get("workspace"),
        "persistence_dir": new.get("persistence_dir"),
        "max_iterations": new.get("max_iterations", 500),
        "stuck_detection": True,
        "confirmation_mode": False,
        "activated_knowledge_microagents": [],
        "stats": new.get("stats", {}),
    }
    if status is not None:
        old["agent_status"] = status
    (conv / "base_state.json").write_text(json.dumps(old))
    events = sorted((conv / "events").glob("event-*.json"))
    last = json.loads(events[-1].read_text())
    n = len(events)
    for i, (key, value) in enumerate((u["key"], u["value"]) for u in updates or []):
        eid = str(uuid.uuid4())
        ev = {"id": eid, "timestamp": "2025-09-01T10:00:0%d.000000" % i, "source": "environment", "parent_id": last["id"],
              "key": key, "value": value, "kind": "ConversationStateUpdateEvent"}
        (conv / "events" / f"event-{n + i:05d}-{eid}.json").write_text(json.dumps(ev))
        last = ev
    return conv


def test_ls_shows_the_pre_1_0_status(cli, tmp_path):
    conv = _pre_1_0(tmp_path / "convs" / "c1", "finished")
    assert "execution_status" not in json.loads((conv / "base_state.json").read_text())
    proc = cli("ls", tmp_path / "convs", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["execution_status"] == "finished"
    text = cli("ls", tmp_path / "convs").stdout
    assert "finished" in text and " ? " not in text


def test_certify_finds_the_pre_1_0_status(tmp_path):
    conv = _pre_1_0(tmp_path / "conv", "finished")
    green = junit(tmp_path / "green.xml", {"t": "passed"})
    cert = certify(str(conv), CertifyOptions(visible=(str(green),), holdout=(str(green),)))
    assert cert.engine["status"] == "finished" and cert.claimed_success is True
    assert cert.state == "Succeeded", cert.reason


@pytest.mark.parametrize("updates,state", [
    ([{"key": "agent_status", "value": "running"}, {"key": "agent_status", "value": "paused"}], "AbortedByHuman"),
    ([{"key": "full_state", "value": {"agent_status": "stuck", "confirmation_mode": False}}], "FailedBudget"),
])
def test_certify_reads_pre_1_0_state_updates(tmp_path, updates, state):
    # no status in base_state: the agent server's last state update decides
    conv = _pre_1_0(tmp_path / "conv", None, updates)
    green = junit(tmp_path / "green.xml", {"t": "passed"})
    cert = certify(str(conv), CertifyOptions(visible=(str(green),), holdout=(str(green),)))
    assert cert.state == state, cert.reason
    assert cert.engine["status"] == (updates[-1]["value"] if updates[-1]["key"] == "agent_status" else updates[-1]["value"]["agent_status"])


@pytest.mark.parametrize("status,state", [
    ("finished", "Succeeded"),
    ("paused", "AbortedByHuman"),
    ("stuck", "FailedBudget"),
    ("running", "FailedUnverifiable"),
])
def test_every_pre_1_0_status_in_base_state_decides(tmp_path, status, state):
    """Issue 10: a base_state.json from before 1.0 gives its status (agent_status), whichever it is."""
    from trajkit import read

    conv = _pre_1_0(tmp_path / "conv", status)
    s = read(conv)
    assert s.metadata["execution_status"] == status and s.outcome.status == status
    green = junit(tmp_path / "green.xml", {"t": "passed"})
    cert = certify(str(conv), CertifyOptions(visible=(str(green),), holdout=(str(green),)))
    assert cert.state == state, cert.reason
    assert cert.engine["status"] == status
