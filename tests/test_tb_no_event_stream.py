"""A terminal-bench trial with no event stream (issue 14 item 10): only its
own ``results.json``, ``panes/``, ``commands.txt`` and the asciinema
recordings. It is read (0 events, 0 steps, a plain diagnostic), ``steps``
exits 0, and ``certify`` takes the trial's own verdict: ``agent_timeout`` ->
FailedBudget, ``parse_error`` / ``agent_installation_failed`` ->
FailedBlocked (docs/certify.md's table), never Succeeded without a record.

The trials are written by hand from the layout and field list in
shared/formats/openhands-v0.md §3.1; expected states come from that table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _tb_trial(run: Path, task: str, failure_mode: str, is_resolved: bool = False, parser_results: dict | None = None) -> Path:
    trial = run / task / f"{task}.1-of-1.2025-07-11__12-00-00"
    (trial / "panes").mkdir(parents=True)
    (trial / "sessions").mkdir()
    results = {
        "id": "0b0f4a58-2f0a-4f7e-9d5c-3f1a2b3c4d5e",
        "trial_name": trial.name,
        "task_id": task,
        "instruction": f"Solve {task}.",
        "is_resolved": is_resolved,
        "failure_mode": failure_mode,
        "parser_results": parser_results,
        "recording_path": f"2025-07-11__12-00-00/{task}/{trial.name}/sessions/agent.cast",
        "total_input_tokens": None,
        "total_output_tokens": None,
        "trial_started_at": "2025-07-11T12:00:00.000000+00:00",
        "trial_ended_at": "2025-07-11T12:30:00.000000+00:00",
        "agent_started_at": "2025-07-11T12:00:10.000000+00:00",
        "agent_ended_at": "2025-07-11T12:29:00.000000+00:00",
        "test_started_at": None,
        "test_ended_at": None,
    }
    (trial / "results.json").write_text(json.dumps(results, indent=4))
    for pane in ("pre-agent", "post-agent", "post-test"):
        (trial / "panes" / f"{pane}.txt").write_text("root@container:/app# \n")
    (trial / "commands.txt").write_text("['ls -la', 'Enter']\n")
    (trial / "sessions" / "agent.cast").write_text(
        json.dumps({"version": 2, "width": 160, "height": 40, "timestamp": 1752235210, "env": {"SHELL": "/bin/bash", "TERM": "tmux-256color"}})
        + "\n" + json.dumps([0.1, "o", "root@container:/app# "]) + "\n")
    (trial / "sessions" / "agent.log").write_text("root@container:/app# \n")
    return trial


def _run_level(run: Path) -> None:
    """The run's own aggregate results.json (trials listed under ``results``) and metadata."""
    trials = [json.loads(p.read_text()) for p in sorted(run.glob("*/*/results.json"))]
    (run / "results.json").write_text(json.dumps({"id": "run", "results": trials, "n_resolved": 0, "n_unresolved": len(trials)}, indent=4))
    (run / "run_metadata.json").write_text(json.dumps({"run_id": "2025-07-11__12-00-00", "agent_name": "openhands"}))


@pytest.mark.parametrize("failure_mode,state", [
    ("agent_timeout", "FailedBudget"),
    ("context_length_exceeded", "FailedBudget"),
    ("output_length_exceeded", "FailedBudget"),
    ("parse_error", "FailedBlocked"),
    ("agent_installation_failed", "FailedBlocked"),
    ("test_timeout", "FailedBlocked"),
    ("unknown_agent_error", "FailedBlocked"),
    ("fatal_llm_parse_error", "FailedBlocked"),
])
def test_certify_reads_the_trials_own_verdict(cli, tmp_path, failure_mode, state):
    trial = _tb_trial(tmp_path / "run", "hello-world", failure_mode)
    proc = cli("certify", trial, "--json")
    assert proc.returncode == 0, proc.stderr
    cert = json.loads(proc.stdout)
    assert cert["state"] == state, cert["reason"]
    assert failure_mode in cert["reason"]
    assert cert["run"]["format"] == "openhands-v0" and cert["run"]["events"] == 0 and cert["run"]["steps"] == 0
    assert "unreadable" not in cert["reason"]
    assert cert["capabilities"]["trajectory"] != "unreadable"  # issue 10: the run is not "unreadable"
    assert not any("unreadable" in d.get("message", "") for d in cert["diagnostics"] if d.get("code") == "certify.trajectory-incomplete")


def test_a_resolved_trial_without_a_record_is_not_succeeded(cli, tmp_path):
    trial = _tb_trial(tmp_path / "run", "hello-world", "unset", is_resolved=True, parser_results={"test_hello": "passed"})
    cert = json.loads(cli("certify", trial, "--json").stdout)
    assert cert["state"] == "FailedUnverifiable"
    assert cert["capabilities"]["trajectory"] == "incomplete"
    assert any(d["code"] == "certify.record-incomplete" and "v0.no-event-stream" in d["message"] for d in cert["diagnostics"])


def test_steps_says_there_is_nothing_to_count(cli, tmp_path):
    trial = _tb_trial(tmp_path / "run", "hello-world", "agent_timeout")
    proc = cli("steps", trial)
    assert proc.returncode == 0, proc.stderr
    assert "steps: 0" in proc.stdout and "events: 0" in proc.stdout
    assert "v0.no-event-stream" in proc.stderr and "no steps to count" in proc.stderr
    assert "Solve hello-world." in proc.stdout  # the task from results.json
    det = cli("detect", trial)
    assert det.returncode == 0 and det.stdout.startswith("openhands-v0\t")


def test_the_read_accounts_for_every_file(tmp_path):
    from trajkit import read

    trial = _tb_trial(tmp_path / "run", "hello-world", "agent_timeout")
    s = read(trial)
    assert (len(s.events), len(s.steps)) == (0, 0)
    assert [d.code for d in s.diagnostics] == ["v0.no-event-stream"]
    on_disk = {str(p) for p in trial.rglob("*") if p.is_file()}
    listed = {f.path for f in s.files}
    assert on_disk == listed
    assert s.metadata["results"]["failure_mode"] == "agent_timeout"


def test_the_run_folder_is_no_trial_and_fcr_finds_each_trial(cli, tmp_path):
    run = tmp_path / "run"
    _tb_trial(run, "hello-world", "agent_timeout")
    _tb_trial(run, "fix-git", "parse_error")
    _run_level(run)
    assert cli("detect", run).returncode == 2
    doc = json.loads(cli("fcr", run, "--json").stdout)
    assert sorted((Path(r["source"]).parent.name, r["state"]) for r in doc["runs_detail"]) == [
        ("fix-git", "FailedBlocked"), ("hello-world", "FailedBudget")]
