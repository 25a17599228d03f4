"""OpenHands V0 trial directories: views, pairing, rendering, layouts, bad input."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import trajkit
from trajkit import registry
from trajkit.formats.openhands_v0 import reader as v0
from trajkit.formats.openhands_v0.layout import sniff  # the light part detection imports
from trajkit.model import DetectionError, ReadOptions, StepCountMismatch
from trajkit.reading.probe import Probe
from trajkit.registry import steps_per_view
from trajkit.steps import check_step_count, render_action

from conftest import CORPUS, run_cli

TRIALS = CORPUS / "openhands_v0" / "reconstructed_trials"
FLAT = CORPUS / "openhands_v0" / "flat_exports"
ROWS = CORPUS / "openhands_v0" / "ctb_manifest_rows"
TRIAL_DIRS = sorted(p for p in TRIALS.iterdir() if p.is_dir())


def codes(session):
    return [d.code for d in session.diagnostics]


# ---------------------------------------------------------------- EXPECTED.json parity


@pytest.mark.parametrize("trial", TRIAL_DIRS, ids=lambda p: p.name)
def test_reconstructed_trial_matches_expected(trial: Path):
    exp = json.loads((trial / "EXPECTED.json").read_text())
    s = trajkit.read(trial)
    assert s.format == "openhands-v0"
    assert s.view == exp["view_used"]
    assert s.metadata["view_path"] == exp["view_path"]
    assert s.task == exp["expected_task_text"]
    assert s.task_source == exp["task_text_source"]
    assert len(s.steps) == exp["expected_step_count"]
    got = [
        {
            "step_id": st.step_id,
            "action_event_id": st.action_event_id,
            "action": st.tool_type,
            "action_source": s.event_by_id(st.action_event_id).source,
            "observation_event_id": st.observation_event_id,
            "observation": s.event_by_id(st.observation_event_id).type,
        }
        for st in s.steps
    ]
    assert got == exp["steps"]
    assert [k for k, v in exp["views_present"].items() if v] == v0.views_present(trial)


@pytest.mark.parametrize("trial", TRIAL_DIRS, ids=lambda p: p.name)
def test_every_view_matches_expected(trial: Path):
    exp = json.loads((trial / "EXPECTED.json").read_text())
    per_view = steps_per_view(str(trial), "openhands-v0")
    assert set(per_view) == set(exp["per_view"])
    for name, want in exp["per_view"].items():
        got = per_view[name]
        assert got["step_count"] == want["step_count"], name
        assert got["event_count"] == want["event_count"], name
        assert got["path"] == want["path"], name
        assert got["actions_without_observation"] == want["actions_without_observation"], name
        s = trajkit.read(trial, options=ReadOptions(view=name))
        assert s.events[0].id == want["first_id"] and s.events[-1].id == want["last_id"]


def test_all_views_cli_reports_each_view():
    trial = TRIALS / "game-2048-session.1-of-1.all-views"
    p = run_cli("steps", trial, "--all-views", "--json", check=True)
    doc = json.loads(p.stdout)
    assert {k: v["step_count"] for k, v in doc["views"].items()} == {"flat_export": 4, "events": 11, "event_cache": 8}
    assert doc["view"] == "flat_export" and doc["step_count"] == 4


# ---------------------------------------------------------------- rendering


def test_render_rules_are_byte_exact():
    assert render_action("run", {"command": "ls -la", "thought": "x"}) == "ls -la"
    blanks = "\n\n\necho hi\n\n"
    assert render_action("run", {"command": blanks}) == blanks  # never stripped for identity
    assert render_action("run", {"command": ""}) == '""'
    assert render_action("run", {"command": "\n"}) == '"\\n"'
    assert render_action("run_ipython", {"code": "print(1)"}) == "print(1)"
    assert render_action("think", {"thought": "plan: é"}) == "plan: é"
    args = {"path": "/w/é.py", "command": "view", "thought": "look", "view_range": [1, 2], "start": 0}
    assert render_action("read", args) == 'read({"path": "/w/é.py", "command": "view", "view_range": [1, 2], "start": 0})'
    assert render_action("recall", {"recall_type": "workspace_context", "query": "q", "thought": ""}) == (
        'recall({"recall_type": "workspace_context", "query": "q"})'
    )
    assert render_action("finish", {}) == "finish({})"
    # a single-argument action without its argument, or with a value that is no string
    assert render_action("run", {"thought": "t"}) == '""'
    assert render_action("run", {"command": ["ls", " "]}) == '["ls", " "]'
    assert render_action("run", {"command": " "}) == '" "'
    # no args, args that are no mapping, and a mapping json cannot write (its text instead, thought left out)
    assert render_action("finish", None) == "finish({})"
    assert render_action("run", "ls") == 'run("ls")'
    assert render_action("x", {"a": {1}, "thought": "t"}) == 'x("{\'a\': {1}}")'


def test_flat_export_steps_render_from_args():
    s = trajkit.read(FLAT / "basic.json")
    assert s.view == "flat_export"
    assert [st.tool_type for st in s.steps] == ["edit"]
    raw = s.event_by_id(s.steps[0].action_event_id).raw
    args = {k: v for k, v in raw["args"].items() if k != "thought"}
    assert s.steps[0].action == "edit(" + json.dumps(args, ensure_ascii=False) + ")"
    assert s.steps[0].observation == s.event_by_id(s.steps[0].observation_event_id).raw["content"]


@pytest.mark.parametrize("name", ["basic.json", "basic_gui_mode.json", "basic_interactions.json", "wrong_initial_state.json"])
def test_flat_exports_pair_by_cause(name):
    data = json.loads((FLAT / name).read_text())
    answered = {}
    for e in data:
        if "observation" in e and isinstance(e.get("cause"), int):
            answered.setdefault(e["cause"], e["id"])
    want = [e["id"] for e in data if "action" in e and e["id"] in answered]
    s = trajkit.read(FLAT / name)
    assert [st.action_event_id for st in s.steps] == want
    assert [st.step_id for st in s.steps] == list(range(1, len(want) + 1))
    for st in s.steps:
        a = s.event_by_id(st.action_event_id).raw
        t = a.get("args", {}).get("thought")
        if a["action"] != "think" and isinstance(t, str) and t.strip():
            assert st.thinking == t
        else:
            assert st.thinking is None


def test_flat_export_refs_carry_exact_line_ranges():
    path = FLAT / "basic_gui_mode.json"
    lines = path.read_text().split("\n")
    s = trajkit.read(path)
    for e in s.events:
        block = "\n".join(lines[e.ref.line_start - 1 : e.ref.line_end]).strip().rstrip(",")
        assert json.loads(block) == e.raw


def test_message_steps_in_gui_mode_stream():
    # basic_gui_mode.json is a complete stream: message actions get null answers.
    s = trajkit.read(FLAT / "basic_gui_mode.json")
    types = [st.tool_type for st in s.steps]
    assert "message" in types and "change_agent_state" in types
    msg = next(st for st in s.steps if st.tool_type == "message")
    assert msg.action.startswith('message({"content": ')
    assert msg.observation == ""


# ---------------------------------------------------------------- layouts and detection


def _events_from_flat(name: str):
    return json.loads((FLAT / name).read_text())


def make_harbor(tmp: Path, with_flat=True, with_events=True) -> Path:
    trial = tmp / "job" / "task__abc123"
    ev = _events_from_flat("basic_gui_mode.json")
    sid = "0123456789abcdef-0123456789abcde"
    agent = trial / "agent"
    (agent / "sessions" / sid / "events").mkdir(parents=True)
    if with_events:
        for e in ev:
            (agent / "sessions" / sid / "events" / f"{e['id']}.json").write_text(json.dumps(e))
    if with_flat:
        keep = [e for e in ev if e.get("action") not in ("null", "change_agent_state") and e.get("observation") not in ("null", "agent_state_changed")]
        (agent / "openhands.trajectory.json").write_text(json.dumps(keep, indent=4))
    (trial / "result.json").write_text(json.dumps({"task_name": "t", "verifier_result": {"rewards": {"reward": 1.0}}, "exception_info": None}))
    (trial / "config.json").write_text(json.dumps({"agent": {"name": "openhands"}}))
    (trial / "verifier").mkdir()
    (trial / "verifier" / "reward.txt").write_text("1\n")
    return trial


def test_harbor_layout_flat_then_events(tmp_path):
    trial = make_harbor(tmp_path)
    s = trajkit.read(trial)
    assert s.metadata["layout"] == "harbor" and s.view == "flat_export"
    assert s.metadata["view_path"] == "agent/openhands.trajectory.json"
    assert s.metadata["result"]["verifier_result"]["rewards"]["reward"] == 1.0
    assert s.task.startswith("I want to create a VueJS app")
    flat_steps = len(s.steps)
    ev = trajkit.read(trial, options=ReadOptions(view="events"))
    assert ev.view == "events" and ev.id == "0123456789abcdef-0123456789abcde"
    assert len(ev.steps) > flat_steps  # null-answered messages count only in events/
    # killed run: no flat export -> events/
    trial2 = make_harbor(tmp_path / "k", with_flat=False)
    s2 = trajkit.read(trial2)
    assert s2.view == "events" and "v0.flat-missing" in codes(s2)
    assert len(s2.steps) == len(ev.steps)


@pytest.mark.parametrize(
    "inner",
    [
        "agent",
        "agent/openhands.trajectory.json",
        "agent/sessions",
        "agent/sessions/0123456789abcdef-0123456789abcde",
        "agent/sessions/0123456789abcdef-0123456789abcde/events",
        "agent/sessions/0123456789abcdef-0123456789abcde/events/3.json",
        "verifier",
    ],
)
def test_any_path_inside_a_harbor_trial_finds_the_trial(tmp_path, inner):
    trial = make_harbor(tmp_path)
    det = registry.detect(trial / inner)
    assert det.format is not None and det.format.name == "openhands-v0"
    assert det.match.root == trial
    assert trajkit.read(trial / inner).view == "flat_export"


@pytest.mark.parametrize("inner", ["sessions", "sessions/agent.cast", "sessions/sessions", "results.json"])
def test_any_path_inside_a_tb_trial_finds_the_trial(inner):
    trial = TRIALS / "game-2048-session.1-of-1.all-views"
    det = registry.detect(trial / inner)
    assert det.format.name == "openhands-v0" and det.match.root == trial


def test_agent_logs_variant_and_bare_layouts(tmp_path):
    trial = tmp_path / "t.1-of-1.x"
    (trial / "agent-logs").mkdir(parents=True)
    shutil.copy(FLAT / "basic.json", trial / "agent-logs" / "abcd.json")
    (trial / "results.json").write_text(json.dumps({"instruction": "from results"}))
    s = trajkit.read(trial)
    assert s.metadata["layout"] == "agent-logs" and s.view == "flat_export" and s.id == "abcd"
    assert s.task.startswith("Please create a simple 2048 game")
    # bare session dir
    src = next((TRIALS / "vue-todo-app.1-of-1.killed-run" / "sessions" / "sessions").iterdir())
    bare = tmp_path / "bare" / src.name
    shutil.copytree(src, bare)
    s = trajkit.read(bare)
    assert s.metadata["layout"] == "session-dir" and s.view == "events" and len(s.steps) == 5
    # bare flat export file anywhere
    f = tmp_path / "export.json"
    shutil.copy(FLAT / "wrong_initial_state.json", f)
    assert trajkit.read(f).view == "flat_export"


def test_task_falls_back_to_results_instruction(tmp_path):
    # A cache-only trial shorter than 25 events: empty view, 0 steps, task from results.json.
    trial = tmp_path / "short.1-of-1.x"
    sd = trial / "sessions" / "sessions" / "sid" / "event_cache"
    sd.mkdir(parents=True)
    (trial / "results.json").write_text(json.dumps({"instruction": "Do the thing.", "failure_mode": "agent_timeout"}))
    ev = [{"id": 0, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "loading"}}]
    (sd.parent / "events").mkdir()
    (sd.parent / "events" / "0.json").write_text(json.dumps(ev[0]))
    s = trajkit.read(trial, options=ReadOptions(view="event_cache"))
    assert s.view is None and s.steps == [] and "v0.view-missing" in codes(s)
    assert s.task == "Do the thing." and s.task_source == "results.json instruction"
    s = trajkit.read(trial)
    assert s.view == "events" and s.task == "Do the thing."


def test_ambiguous_detection_is_reported(tmp_path):
    f = tmp_path / "x.json"
    shutil.copy(FLAT / "basic.json", f)
    twin = registry.Format(
        name="twin", description="test twin", fingerprints=("*.json",), priority=40,
        sniff=lambda probe, c, fp: registry.Match(c, fp, registry.STRONG, "twin"), read=v0.read,
    )
    registry.register(twin)
    try:
        det = registry.detect(f)
        assert det.ambiguous
        with pytest.raises(DetectionError, match="ambiguous"):
            trajkit.read(f)
        assert trajkit.read(f, format="openhands-v0").view == "flat_export"
    finally:
        registry.formats()[:] = [x for x in registry.formats() if x.name != "twin"]


def test_detect_cli_why_and_nothing(tmp_path):
    trial = TRIALS / "game-2048-session.1-of-1.all-views"
    p = run_cli("detect", trial / "sessions" / "sessions", "--why", check=True)
    assert p.stdout.startswith("openhands-v0\t" + str(trial))
    assert "considered openhands-v0" in p.stdout and "fingerprint" in p.stdout
    j = json.loads(run_cli("detect", trial, "--json", check=True).stdout)
    assert j["format"] == "openhands-v0" and j["root"] == str(trial) and j["ambiguous"] is False
    (tmp_path / "notes.txt").write_text("hello")
    p = run_cli("detect", tmp_path / "notes.txt")
    assert p.returncode == 2 and "no known format" in p.stdout
    p = run_cli("steps", tmp_path / "notes.txt")
    assert p.returncode == 2 and "no known format" in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------- bad input


def copy_trial(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(TRIALS / name, dst)
    for root, dirs, files in os.walk(dst):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return dst


def events_dir(trial: Path) -> Path:
    return next((trial / "sessions" / "sessions").iterdir()) / "events"


def test_non_list_flat_export_falls_back(tmp_path):
    trial = copy_trial(tmp_path, "game-2048-session.1-of-1.all-views")
    flat = next((trial / "sessions").glob("*.json"))
    flat.write_text(json.dumps({"not": "a list"}) + " " * 100000)
    s = trajkit.read(trial)
    assert "v0.flat-not-list" in codes(s)
    assert s.view == "events" and len(s.steps) == 11


def test_malformed_event_files_are_skipped(tmp_path):
    trial = copy_trial(tmp_path, "vue-todo-app.1-of-1.killed-run")
    ed = events_dir(trial)
    (ed / "3.json").write_text('{"id": 3, "trunc')
    (ed / "5.json").write_bytes(b"\xff\xfe not utf8")
    (ed / "0.json").write_text("[1, 2]")
    (ed / "notes.txt").write_text("x")
    s = trajkit.read(trial)
    c = codes(s)
    assert c.count("v0.malformed-event") == 3
    assert "json.not-utf8" in c and "json.invalid" in c and "v0.bad-event-name" in c
    bad = {d.file: d for d in s.diagnostics if d.code == "v0.malformed-event"}
    assert str(ed / "3.json") in bad and bad[str(ed / "3.json")].event_id == 3
    assert "v0.id-gap" in c  # 2 -> 4 and 4 -> 6
    statuses = {Path(f.path).name: f.status for f in s.files if f.role == "event"}
    assert statuses["3.json"] == "skipped" and statuses["4.json"] == "read"
    assert len(s.steps) == 5  # 5.json was a null observation answering 4, which is gone; 1->2 and others remain
    # the killed run's last action is reported as cut off
    assert any(d.code == "v0.cutoff-action" and d.event_id == 13 for d in s.diagnostics)


def test_orphan_observation_duplicate_and_gap(tmp_path):
    trial = copy_trial(tmp_path, "vue-todo-app.1-of-1.killed-run")
    ed = events_dir(trial)
    obs = json.loads((ed / "8.json").read_text())
    obs["id"] = 20
    obs["cause"] = 999
    (ed / "20.json").write_text(json.dumps(obs))
    dup = json.loads((ed / "9.json").read_text())
    (ed / "09.json").write_text(json.dumps(dup))  # a second file for id 9
    s = trajkit.read(trial)
    c = codes(s)
    assert "v0.orphan-observation" in c and "v0.duplicate-id" in c and "v0.id-gap" in c
    orphan = next(d for d in s.diagnostics if d.code == "v0.orphan-observation")
    assert orphan.event_id == 20
    assert [st.action_event_id for st in s.steps] == [1, 4, 7, 9, 11]


def test_size_cap_and_empty_files(tmp_path):
    trial = copy_trial(tmp_path, "game-2048-session.1-of-1.all-views")
    s = trajkit.read(trial, options=ReadOptions(max_file_bytes=2000))
    assert "file.too-large" in codes(s)
    assert all(f.size is None or f.size <= 2000 or f.status != "read" for f in s.files)
    (events_dir(trial) / "2.json").write_text("")
    s = trajkit.read(trial, options=ReadOptions(view="events"))
    assert "file.empty" in codes(s)
    # 2.json answered one action; with it gone that action is no longer a step
    assert len(s.steps) == 10 and all(st.observation_event_id != 2 for st in s.steps)


def test_malformed_cache_shard(tmp_path):
    trial = copy_trial(tmp_path, "todo-and-2048-session.1-of-1.cache-only")
    cache = next((trial / "sessions" / "sessions").iterdir()) / "event_cache"
    (cache / "25-50.json").write_text('{"oops": 1}')
    s = trajkit.read(trial)
    assert "v0.malformed-shard" in codes(s)
    assert s.view == "event_cache" and len(s.events) == 25


def test_shards_sort_numerically(tmp_path):
    sd = tmp_path / "sid"
    cache = sd / "event_cache"
    cache.mkdir(parents=True)
    events = []
    for i in range(125):
        if i % 2 == 0:
            events.append({"id": i, "source": "agent", "action": "run", "args": {"command": f"echo {i}", "thought": ""}})
        else:
            events.append({"id": i, "source": "agent", "cause": i - 1, "observation": "run", "content": str(i - 1), "extras": {}})
    for start in range(0, 125, 25):
        (cache / f"{start}-{start + 25}.json").write_text(json.dumps(events[start : start + 25]))
    s = trajkit.read(sd)
    assert [e.id for e in s.events] == list(range(125))
    assert [st.action for st in s.steps[:3]] == ["echo 0", "echo 2", "echo 4"]
    assert len(s.steps) == 62  # the action at 124 has no answer


def test_reader_never_raises_on_garbage(tmp_path):
    trial = tmp_path / "t"
    (trial / "sessions").mkdir(parents=True)
    (trial / "sessions" / "x.json").write_text('[{"id": "zero", "action": 5, "args": "nope"}, 7, null, {"observation": [], "cause": true}]')
    s = trajkit.read(trial)
    assert s.view == "flat_export"
    assert "v0.bad-id" in codes(s)
    assert s.steps == []


# ---------------------------------------------------------------- gate and manifest rows


def test_step_count_gate_library_and_cli():
    trial = TRIALS / "game-2048-session.1-of-1.all-views"
    s = trajkit.read(trial)
    check_step_count(s, 4)
    with pytest.raises(StepCountMismatch) as ei:
        check_step_count(s, 11)
    assert ei.value.expected == 11 and ei.value.actual == 4 and ei.value.view == "flat_export"
    p = run_cli("steps", trial, "--expect-steps", "11")
    assert p.returncode == 1
    assert "expected 11" in p.stderr and "got 4" in p.stderr and "flat_export" in p.stderr
    assert run_cli("steps", trial, "--expect-steps", "4").returncode == 0


def _row_for(trial: Path, step_count: int) -> dict:
    row = json.loads((ROWS / "smoke-labels-openhands.json").read_text())[1]
    row = dict(row)
    row["trial_name"] = trial.name
    row["step_count"] = step_count
    row["incorrect_stages"] = [
        {"stage_id": 1, "incorrect_step_ids": [2], "unuseful_step_ids": [3],
         "steps": [{"step_id": 2, "labels": ["incorrect"], "action_ref": None, "observation_ref": None},
                   {"step_id": 3, "labels": ["unuseful"], "action_ref": None, "observation_ref": None}]}
    ]
    return row


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet"])
def test_ctb_row_checks_count_and_attaches_labels(tmp_path, fmt):
    trial = TRIALS / "game-2048-session.1-of-1.all-views"
    row = _row_for(trial, 4)
    other = dict(row, traj_id="other", trial_name="other-trial")
    if fmt == "json":
        f = tmp_path / "row.json"
        f.write_text(json.dumps(row))
    elif fmt == "jsonl":
        f = tmp_path / "rows.jsonl"
        f.write_text(json.dumps(other) + "\n" + json.dumps(row) + "\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        f = tmp_path / "rows.parquet"
        cols = ("traj_id", "trial_name", "step_count", "stages", "incorrect_stages")
        pq.write_table(pa.Table.from_pylist([{k: r[k] for k in cols} for r in (other, row)]), f)
    p = run_cli("steps", trial, "--ctb-row", f, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    labels = {s["step_id"]: s.get("labels") for s in doc["steps"]}
    assert labels == {1: None, 2: ["incorrect"], 3: ["unuseful"], 4: None}
    assert doc["metadata"]["ctb"]["traj_id"] == row["traj_id"]
    bad = _row_for(trial, 80)
    f2 = tmp_path / "bad.json"
    f2.write_text(json.dumps(bad))
    p = run_cli("steps", trial, "--ctb-row", f2)
    assert p.returncode == 1 and "expected 80" in p.stderr


def test_manifest_row_with_json_text_stages(tmp_path):
    from trajkit.bench.ctb import apply_ctb_labels

    s = trajkit.read(TRIALS / "game-2048-session.1-of-1.all-views")
    row = _row_for(TRIALS / "game-2048-session.1-of-1.all-views", 4)
    apply_ctb_labels(s, dict(row, incorrect_stages=json.dumps(row["incorrect_stages"])))
    assert s.steps[1].labels == ["incorrect"]
    s2 = trajkit.read(TRIALS / "game-2048-session.1-of-1.all-views")
    apply_ctb_labels(s2, dict(row, incorrect_stages="not json"))
    assert "ctb.bad-row" in codes(s2) and not any(st.labels for st in s2.steps)


def test_real_manifest_rows_load_and_label_out_of_range():
    from trajkit.bench.ctb import apply_ctb_labels, load_manifest_rows

    rows = load_manifest_rows(ROWS / "smoke-labels-openhands.json")
    assert len(rows) == 6 and all(isinstance(r["step_count"], int) for r in rows)
    s = trajkit.read(TRIALS / "game-2048-session.1-of-1.all-views")
    apply_ctb_labels(s, rows[0])  # labels steps 63.. of an 88-step row: out of range here
    assert "ctb.label-out-of-range" in codes(s)
    p = run_cli("steps", TRIALS / "game-2048-session.1-of-1.all-views", "--ctb-row", ROWS / "smoke-labels-openhands.json")
    assert p.returncode == 2 and "--ctb-id" in p.stderr


# ---------------------------------------------------------------- CLI outputs


def test_steps_json_and_jsonl():
    trial = TRIALS / "todo-and-2048-session.1-of-1.cache-only"
    doc = json.loads(run_cli("steps", trial, "--json", check=True).stdout)
    assert doc["view"] == "event_cache" and doc["step_count"] == 17 and doc["task"].startswith("I want")
    assert doc["steps"][0]["action_ref"]["path"].endswith("event_cache/0-25.json")
    assert any(d["code"] == "v0.flat-missing" for d in doc["diagnostics"])
    lines = run_cli("steps", trial, "--jsonl", check=True).stdout.splitlines()
    head = json.loads(lines[0])
    assert head["step_count"] == 17 and "steps" not in head
    assert [json.loads(x)["step_id"] for x in lines[1:]] == list(range(1, 18))


def test_show_and_normalize(tmp_path):
    trial = TRIALS / "vue-todo-app.1-of-1.killed-run"
    p = run_cli("show", trial, check=True)
    assert "step 3" in p.stdout and "v0.cutoff-action" in p.stdout
    out = tmp_path / "norm"
    run_cli("normalize", trial, "--out", out, check=True)
    steps = json.loads((out / "steps.json").read_text())
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4, 5]
    assert set(steps[2]) >= {"step_id", "action", "observation", "action_ref", "observation_ref", "tool_type"}
    assert json.loads(steps[2]["action_ref"]["content"])["id"] == 7
    assert steps[2]["action_ref"]["line_start"] == 1
    assert (out / "task.md").read_text().startswith("I want to create a VueJS app")


def test_lazy_line_ranges_pickle_and_compact_exports(tmp_path):
    import pickle

    s = trajkit.read(FLAT / "basic.json")
    clone = pickle.loads(pickle.dumps(s))
    assert [e.ref.to_dict() for e in clone.events] == [e.ref.to_dict() for e in s.events]
    assert s.events[1].ref.line_start > s.events[0].ref.line_end
    # a compact (one-line) export: every element is on line 1
    f = tmp_path / "compact.json"
    f.write_text(json.dumps(json.loads((FLAT / "basic.json").read_text())))
    c = trajkit.read(f)
    assert {(e.ref.line_start, e.ref.line_end) for e in c.events} == {(1, 1)}
    # elements with odd layout fall back to a tokenizing scan
    odd = tmp_path / "odd.json"
    evs = json.loads((FLAT / "basic.json").read_text())
    odd.write_text("[\n" + ",\n".join(json.dumps(e, indent=1) for e in evs) + "\n]")
    o = trajkit.read(odd)
    lines = odd.read_text().split("\n")
    for e in o.events:
        block = "\n".join(lines[e.ref.line_start - 1 : e.ref.line_end]).rstrip(",")
        assert json.loads(block) == e.raw


def test_bare_file_sniff_needs_a_v0_head(tmp_path):
    other = tmp_path / "calls.json"
    other.write_text(json.dumps([{"turn": 0, "request": {"tools": [{"name": "x", "parameters": {"action": {}, "observation": {}}}]}}]))
    assert isinstance(sniff(Probe(), other, "*.json"), registry.Reject)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + (FLAT / "basic.json").read_bytes())
    assert isinstance(sniff(Probe(), bom, "*.json"), registry.Match)
    s = trajkit.read(bom)
    assert s.view == "flat_export" and any(d.code == "json.nonstandard" for d in s.diagnostics)


def test_running_totals_become_per_response_usage(tmp_path):
    def metrics(p, c, cost):
        return {"accumulated_cost": cost, "accumulated_token_usage": {"model": "m", "prompt_tokens": p, "completion_tokens": c,
                                                                        "cache_read_tokens": 0, "cache_write_tokens": 0}}

    def tcm(rid, cid, n=1):
        return {"function_name": "execute_bash", "tool_call_id": cid, "total_calls_in_response": n,
                "model_response": {"id": rid, "model": "m", "choices": [{"message": {"content": "", "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": "execute_bash", "arguments": json.dumps({"command": cid})}}]}}]}}

    evs = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "task"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "a", "thought": ""}, "tool_call_metadata": tcm("r1", "a"), "llm_metrics": metrics(100, 10, 0.5)},
        {"id": 2, "source": "agent", "cause": 1, "observation": "run", "content": "A", "extras": {}},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": "b", "thought": ""}, "tool_call_metadata": tcm("r2", "b", 2), "llm_metrics": metrics(250, 30, 1.25)},
        {"id": 4, "source": "agent", "action": "run", "args": {"command": "c", "thought": ""}, "tool_call_metadata": tcm("r2", "c", 2), "llm_metrics": metrics(250, 30, 1.25)},
        {"id": 5, "source": "agent", "cause": 3, "observation": "run", "content": "B", "extras": {}},
        {"id": 6, "source": "agent", "cause": 4, "observation": "run", "content": "C", "extras": {}},
    ]
    f = tmp_path / "run.json"
    f.write_text(json.dumps(evs, indent=4))
    s = trajkit.read(f)
    assert [st.action for st in s.steps] == ["a", "b", "c"]
    assert s.steps[0].usage == {"prompt_tokens": 100, "completion_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0, "model": "m"}
    assert s.steps[0].cost == 0.5
    assert s.steps[1].usage["prompt_tokens"] == 150 and s.steps[1].cost == 0.75
    assert s.steps[2].usage is None and s.steps[2].cost is None  # same response as step 2
    assert s.steps[1].parallel_group == "r2" == s.steps[2].parallel_group
    assert s.event_by_id(3).tool_calls[0].arguments == {"command": "b"}
    assert s.event_by_id(4).extra["cumulative_usage"]["prompt_tokens"] == 250


def test_lazy_tool_call_arguments(tmp_path):
    import pickle

    from trajkit.model import ToolCall

    c = ToolCall.lazy("execute_bash", '{"command": "ls"}', "call_1")
    assert c.arguments == {"command": "ls"} and c.to_dict()["arguments"] == {"command": "ls"}
    bad = ToolCall.lazy("x", '{"cut', None)
    assert bad.arguments == '{"cut'  # kept as the model wrote it
    c2 = pickle.loads(pickle.dumps(ToolCall.lazy("y", "[1, 2]", None)))
    assert c2.arguments == [1, 2]
    assert ToolCall.lazy("z", "{}", "i") == ToolCall("z", {}, "i")


def test_render_json_is_byte_identical_to_json_dumps(corpus):
    from trajkit.steps import _dumps

    odd = [{"a": 1e16, "b": -0.0, "c": float("nan"), "d": float("inf"), "e": "é\n\t\"\\\u2028"}, "s", 7, [], {}, [1e-7, 2**70]]
    for value in odd:
        assert _dumps(value) == json.dumps(value, ensure_ascii=False)
    checked = 0
    for f in corpus.rglob("*.json"):
        try:
            value = json.loads(f.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        assert _dumps(value) == json.dumps(value, ensure_ascii=False), f
        checked += 1
    assert checked > 100


def test_lazy_events_equal_fully_derived_events():
    import pickle

    n = 0
    for trial in TRIAL_DIRS + [FLAT / f for f in ("basic.json", "basic_gui_mode.json", "basic_interactions.json", "wrong_initial_state.json")]:
        for view in v0.views_present(trial) or [None]:
            s = trajkit.read(trial, format="openhands-v0", options=ReadOptions(view=view))
            for e in s.events:
                full = v0.full_event(e.raw, e.ref)
                assert e == full and e.to_dict() == full.to_dict()
                n += 1
    assert n > 100
    e = v0.to_event({"id": 1, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "t"}}, None)
    e.usage = {"prompt_tokens": 3}  # set before anything was derived: kept
    assert e.text == "t" and e.usage == {"prompt_tokens": 3} and e.tool_calls[0].arguments == {"command": "ls"}
    clone = pickle.loads(pickle.dumps(v0.to_event({"id": 2, "source": "user", "action": "message", "args": {"content": "hi"}}, None)))
    assert clone.text == "hi" and clone.role == "user"
    with pytest.raises(AttributeError):
        e.no_such_field
