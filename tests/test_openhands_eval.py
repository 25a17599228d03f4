"""OpenHands evaluation outputs (``output.jsonl``), Cloud exports and bare
folders of SDK event files (issue 10).

The runs are built from the shared corpus by ``openhands_eval_build`` with
plain ``json``: each V0 stream and SDK conversation becomes one evaluation
record, and the *same events* are laid out again as a trial directory
(``sessions/sessions/<sid>/events/<id>.json``) or a conversation directory
(``base_state.json`` + ``events/``). Acceptance: per record, the same steps
as that directory. Step counts are also computed here from the raw events
by the benchmark's rule, independently of trajkit's readers (V0: an action
whose id some observation names as its ``cause``; SDK: an ``ActionEvent``
answered by an observation, a user reject or an agent error, by
``action_id``, else by ``tool_call_id``). Expected ids, counts and verdicts
come from the records the test writes.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import openhands_eval_build as build
import trajkit
from trajkit import registry
from trajkit.certify import certify
from trajkit.model import ReadOptions

STEP_FIELDS = ("step_id", "action", "tool_type", "observation", "thinking", "action_event_id", "observation_event_id",
               "parallel_group", "usage", "cost")


def _steps(session) -> list[tuple]:
    return [tuple(getattr(st, f) for f in STEP_FIELDS) for st in session.steps]


def v0_step_count(events: list) -> int:
    """CodeTraceBench's OpenHands rule over raw events: actions some observation names as cause."""
    causes = {e["cause"] for e in events if isinstance(e, dict) and "observation" in e and type(e.get("cause")) is int}
    ids = [e["id"] for e in events if isinstance(e, dict) and "action" in e and type(e.get("id")) is int]
    return len(set(ids) & causes)


def sdk_step_count(events: list) -> int:
    """ActionEvents answered (by action_id, else tool_call_id), each counted once."""
    action_of_call = {e["tool_call_id"]: e["id"] for e in events if e.get("kind") == "ActionEvent" and e.get("tool_call_id")}
    actions = [e["id"] for e in events if e.get("kind") == "ActionEvent"]
    answered = set()
    for e in events:
        if e.get("kind") in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            target = e.get("action_id") if e.get("kind") != "AgentErrorEvent" else None
            if not isinstance(target, str):
                target = action_of_call.get(e.get("tool_call_id"))
            if target in actions:
                answered.add(target)
    return len(answered)


@pytest.fixture(scope="module")
def v0_out(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("v0")
    recs = build.v0_output(d / "output.jsonl")
    return d / "output.jsonl", recs


@pytest.fixture(scope="module")
def sdk_out(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("sdk")
    recs = build.sdk_output(d / "output.jsonl")
    return d / "output.jsonl", recs


# ----------------------------------------------------------------- acceptance


def test_v0_records_step_like_the_same_events_in_a_trial(v0_out, tmp_path):
    path, recs = v0_out
    assert len(recs) == 7 and registry.members(path) == [f"{path}#{r['instance_id']}" for r in recs]
    for r in recs:
        s = trajkit.read(f"{path}#{r['instance_id']}")
        assert s.format == "openhands-eval" and s.id == r["instance_id"] and s.metadata["history_format"] == "v0"
        trial = build.v0_trial(tmp_path / r["instance_id"], "sid-" + r["instance_id"], r["history"])
        t = trajkit.read(trial)
        assert (t.format, t.view) == ("openhands-v0", "events")
        assert _steps(s) == _steps(t), r["instance_id"]
        assert len(s.steps) == v0_step_count(r["history"])
        assert [e.id for e in s.events] == [e["id"] for e in r["history"]]
    assert sum(v0_step_count(r["history"]) > 0 for r in recs) == 6  # basic_interactions is a chat: no steps


def test_sdk_records_step_like_the_same_events_in_a_conversation(sdk_out, tmp_path):
    path, recs = sdk_out
    assert len(recs) == 12
    stepped = 0
    for r in recs:
        s = trajkit.read(path, options=ReadOptions(member=r["instance_id"]))
        assert s.metadata["history_format"] == ("sdk" if r["history"] else None)
        conv = build.sdk_conversation(tmp_path / r["instance_id"], r["history"], r["metrics"])
        c = trajkit.read(conv)
        assert c.format == "openhands-sdk"
        assert _steps(s) == _steps(c), r["instance_id"]
        assert len(s.steps) == sdk_step_count(r["history"])
        stepped += bool(s.steps)
        # usage per model call from the record's metrics, as base_state's stats give it
        def usage(ev):
            return None if ev.model_usage is None else dataclasses.replace(ev.model_usage, source=None)

        assert [usage(e) for e in s.events] == [usage(e) for e in c.events]
        assert any(e.model_usage for e in s.events) == any(e.model_usage for e in c.events)
        cost = (r["metrics"] or {}).get("accumulated_cost")
        assert s.run.cost_usd == (float(cost) if cost is not None else None)
    assert stepped >= 5


def test_v0_pairs_history_reads_as_its_events(v0_out, tmp_path):
    """The pre-2025 V0 shape: history as [action, observation] pairs."""
    _, recs = v0_out
    r = next(r for r in recs if r["instance_id"] == "basic_gui_mode")
    by_id = {e["id"]: e for e in r["history"]}
    pairs = [[by_id[o["cause"]], o] for o in r["history"] if "observation" in o and o.get("cause") in by_id]
    rec = dict(r, history=pairs)
    p = build.write_jsonl(tmp_path / "output.jsonl", [rec])
    s = trajkit.read(p)  # one record: no member needed
    assert "eval.history-pairs" in {d.code for d in s.diagnostics}
    assert len(s.steps) == v0_step_count(r["history"]) == len(pairs)


def test_task_model_and_run_facts(v0_out, sdk_out):
    path, recs = v0_out
    s = trajkit.read(f"{path}#basic_interactions")
    assert s.task == build.first_user_text(recs[2]["history"])
    assert s.run.instance_id == "basic_interactions" and s.run.benchmark == "corpus-v0" and s.run.harness == "openhands-eval"
    spath, srecs = sdk_out
    r = srecs[0]
    s = trajkit.read(f"{spath}#{r['instance_id']}")
    assert s.run.models == [r["metadata"]["llm"]["model"]] or s.run.models == [(r["metrics"] or {}).get("model_name")]


# ----------------------------------------------------------------- the CLI


def test_cli_ls_lists_every_record(cli, v0_out):
    path, recs = v0_out
    p = cli("ls", path, "--json", check=True)
    rows = json.loads(p.stdout)
    assert [r["id"] for r in rows] == [r["instance_id"] for r in recs]
    assert [r["path"] for r in rows] == [f"{path}#{r['instance_id']}" for r in recs]
    assert [r["status"] for r in rows] == ["resolved" if r["test_result"]["report"]["resolved"] else "unresolved" for r in recs]


def test_cli_steps_over_the_file_and_one_record(cli, v0_out):
    path, recs = v0_out
    doc = json.loads(cli("steps", path, "--json", check=True).stdout)
    assert [s["id"] for s in doc["sessions"]] == [r["instance_id"] for r in recs]
    assert [s["step_count"] for s in doc["sessions"]] == [v0_step_count(r["history"]) for r in recs]
    n = v0_step_count(recs[1]["history"])
    for args in ([f"{path}#{recs[1]['instance_id']}"], [path, "--instance", recs[1]["instance_id"]]):
        one = json.loads(cli("steps", *args, "--json", check=True).stdout)
        assert one["id"] == recs[1]["instance_id"] and one["step_count"] == n
        assert cli("steps", *args, "--expect-steps", str(n)).returncode == 0
        assert cli("steps", *args, "--expect-steps", str(n + 1)).returncode == 1
    assert cli("steps", f"{path}#nope").returncode == 2
    shown = cli("show", f"{path}#basic", check=True).stdout
    assert "openhands-eval" in shown and "basic" in shown


def test_cli_convert_the_whole_file(cli, sdk_out, tmp_path):
    path, recs = sdk_out
    for target in ("asf", "atif"):
        p = cli("convert", path, "--to", target, "--out", tmp_path / target, "--json", "--report", tmp_path / f"{target}.json")
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["runs"] == len(recs) and doc["problems"] == []
        assert len(doc["outputs"]) == len(recs)
        report = json.loads((tmp_path / f"{target}.json").read_text())
        assert report["summary"]["events"] == sum(len(r["history"]) for r in recs)
        assert report["summary"]["events_dropped"] == 0 or target == "atif"
    one = cli("convert", f"{path}#{recs[0]['instance_id']}", "--to", "asf", "--out", tmp_path / "one", "--json")
    assert one.returncode == 0 and len(json.loads(one.stdout)["outputs"]) == 1


def test_cli_certify_the_whole_file_gates_on_test_result(cli, v0_out):
    path, recs = v0_out
    p = cli("certify", path, "--json")
    assert p.returncode == 0, p.stderr
    certs = json.loads(p.stdout)["certificates"]
    assert len(certs) == len(recs)
    for r, c in zip(recs, certs):
        assert c["run"]["id"] == r["instance_id"]
        assert c["gate"]["holdout"] == [{"id": "resolved", "passed": r["test_result"]["report"]["resolved"],
                                         "status": "passed" if r["test_result"]["report"]["resolved"] else "failed"}]
        assert c["gate"]["sources"]["holdout"]["kind"] == "eval-test-result"
        assert c["state"] != "Succeeded" or r["test_result"]["report"]["resolved"]
    strict = cli("certify", path, "--strict")
    assert strict.returncode == (0 if all(c["state"] == "Succeeded" for c in certs) else 1)


def test_gate_uses_tests_status_and_top_level_resolved(tmp_path, v0_out):
    _, recs = v0_out
    r = dict(recs[0])
    r["test_result"] = {"report": {"resolved": False, "tests_status": {
        "FAIL_TO_PASS": {"success": ["t1"], "failure": ["t2"]}, "PASS_TO_PASS": {"success": ["t3"], "failure": []}}}}
    r2 = dict(recs[0], instance_id="x2", test_result={}, resolved=True)
    p = build.write_jsonl(tmp_path / "output.jsonl", [r, r2])
    c = certify(f"{p}#{r['instance_id']}")
    assert [(h["id"], h["passed"]) for h in c.gate["holdout"]] == [
        ("FAIL_TO_PASS::t1", True), ("FAIL_TO_PASS::t2", False), ("PASS_TO_PASS::t3", True)]
    assert c.state != "Succeeded" and c.gate["passed_holdout"] is False
    c2 = certify(f"{p}#x2")
    assert [(h["id"], h["passed"]) for h in c2.gate["holdout"]] == [("resolved", True)]


@pytest.mark.parametrize("error,budget", [
    ("Timeout after 120 seconds", True),
    ("RuntimeError: Agent reached maximum iteration in headless mode. Current iteration: 30, max iteration: 30", True),
    ("Maximum retries (5) reached: AgentRuntimeUnavailableError: runtime died", False),
])
def test_error_is_the_engine_outcome(tmp_path, v0_out, error, budget):
    _, recs = v0_out
    p = build.write_jsonl(tmp_path / "output.jsonl", [dict(recs[0], error=error)])
    s = trajkit.read(p)
    assert s.outcome.budget_exhausted is budget
    assert (s.outcome.external_error is not None) is (not budget)
    c = certify(p)
    assert c.state == ("FailedBudget" if budget else "FailedBlocked")


# ----------------------------------------------------------------- bad input


def _codes(s) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in s.diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def test_bad_records_are_located_diagnostics(tmp_path, v0_out, cli):
    _, recs = v0_out
    good = recs[2]
    lines = [
        json.dumps(good),                                      # 1 good
        json.dumps([1, 2, 3]),                                 # 2 not an object
        json.dumps(dict(good, instance_id="nohist", history=None)),   # 3 missing history
        json.dumps({k: v for k, v in good.items() if k != "history"} | {"instance_id": "gone"}),  # 4 no history key
        json.dumps(dict(good, instance_id="wrongtype", history={"a": 1})),  # 5 history of the wrong type
        json.dumps(good),                                      # 6 duplicate instance id, no attempt
        "{this is not json",                                   # 7 a bad line
        json.dumps(dict(good, instance_id=None)),              # 8 no instance id
        json.dumps(dict(good, instance_id="items", history=[good["history"][0], 7, "x"])),  # 9 items not objects
        "",                                                    # blank
        json.dumps(dict(good, instance_id="cut"))[:200],       # 11 truncated final line
    ]
    p = tmp_path / "output.jsonl"
    p.write_text("\n".join(lines))
    ids = [a.rsplit("#", 1)[1] for a in registry.members(p)]
    assert ids == [good["instance_id"], "line-2", "nohist", "gone", "wrongtype", f"{good['instance_id']}~2", "line-7", "line-8",
                   "items", "cut"]
    read = {i: trajkit.read(f"{p}#{i}") for i in ids}
    expect = {"line-2": ("eval.not-object", 2), "nohist": ("eval.history-missing", 3), "gone": ("eval.history-missing", 4),
              "wrongtype": ("eval.history-not-list", 5), f"{good['instance_id']}~2": ("eval.duplicate-instance", 6),
              "line-7": ("eval.bad-line", 7), "line-8": ("eval.no-instance-id", 8), "items": ("eval.history-item-not-object", 9),
              "cut": ("eval.truncated-line", 11)}
    for member, (code, line) in expect.items():
        found = _codes(read[member]).get(code)
        assert found, (member, code, [str(d) for d in read[member].diagnostics])
        assert found[0].line == line and found[0].file == str(p), (member, str(found[0]))
    assert len(read["items"].events) == 3  # non-objects ride along as events of kind other
    assert not _codes(read[good["instance_id"]])
    # every verb still runs over the damaged file, never a traceback
    for args in (["steps", p, "--json"], ["ls", p, "--json"], ["certify", p, "--json"]):
        r = cli(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    r = cli("convert", p, "--to", "asf", "--out", tmp_path / "asf", "--json")
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr


def test_attempts_of_one_instance_are_addressed_by_attempt(tmp_path, sdk_out):
    _, recs = sdk_out
    r = recs[0]
    p = build.write_jsonl(tmp_path / "output.jsonl", [dict(r, attempt=1), dict(r, attempt=2), dict(r, attempt=2)])
    iid = r["instance_id"]
    assert [a.rsplit("#", 1)[1] for a in registry.members(p)] == [iid, f"{iid}@2", f"{iid}~3"]
    s = trajkit.read(f"{p}#{iid}@2")
    (d,) = [d for d in s.diagnostics if d.code == "eval.duplicate-instance"]
    assert d.severity == "info" and d.line == 2


def test_unreadable_and_empty_files(tmp_path):
    empty = tmp_path / "output.jsonl"
    empty.write_text("")
    assert registry.members(empty, format="openhands-eval") == [str(empty)]  # no records: nothing to list
    s = registry.read(empty, format="openhands-eval")
    assert s.events == [] and "eval.empty" in _codes(s)
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    s = registry.read(d, format="openhands-eval")
    assert s.events == [] and "file.unreadable" in _codes(s)


# ----------------------------------------------------------------- Cloud export


def test_cloud_exports_step_like_their_layouts(tmp_path, corpus):
    a, b = build.cloud_exports(tmp_path)
    sdk = trajkit.read(a)
    assert sdk.format == "openhands-cloud" and sdk.id == "cd94562403b9487ebdd4018e3f531dfd"
    doc = json.loads(a.read_text())
    conv = trajkit.read(build.sdk_conversation(tmp_path / "conv", doc["events"], doc["conversation"]["metrics"]))
    assert _steps(sdk) == _steps(conv) and len(sdk.steps) == sdk_step_count(doc["events"]) > 0
    assert sdk.metadata["title"] == "Hello" and sdk.run.models == [doc["conversation"]["llm_model"]]
    v0 = trajkit.read(b)
    docb = json.loads(b.read_text())
    trial = trajkit.read(build.v0_trial(tmp_path / "trial", "sid", docb["events"]))
    assert v0.format == "openhands-cloud" and _steps(v0) == _steps(trial) and len(v0.steps) == v0_step_count(docb["events"])


@pytest.mark.parametrize("doc,code", [
    ({"conversation": {"conversation_id": "c1"}, "events": {"a": 1}}, "cloud.events-not-list"),
    ({"conversation": {"conversation_id": "c1"}}, "cloud.events-missing"),
])
def test_cloud_bad_input(tmp_path, doc, code):
    p = tmp_path / "export.json"
    p.write_text(json.dumps(dict(doc, events=doc.get("events", [])) if code != "cloud.events-missing" else doc))
    s = trajkit.read(p, format="openhands-cloud")
    assert code in _codes(s) and _codes(s)[code][0].file == str(p)
    not_obj = tmp_path / "list.json"
    not_obj.write_text("[1]")
    assert "cloud.not-object" in _codes(trajkit.read(not_obj, format="openhands-cloud"))


# ----------------------------------------------------------------- bare SDK event folders


@pytest.mark.parametrize("cloud_names", [False, True])
def test_bare_folder_of_sdk_event_files(tmp_path, corpus, cli, cloud_names):
    conv = next(c for c in build.sdk_conversations() if c.name == "0123456789abcdef0123456789abcdef")
    bare = tmp_path / "bare"
    bare.mkdir()
    names = []
    for f in sorted((conv / "events").glob("event-*.json")):
        _, idx, rest = f.name.split("-", 2)
        name = f"event_{int(idx):06d}_{rest}" if cloud_names else f.name
        shutil.copy(f, bare / name)
        names.append(name)
    if cloud_names:
        (bare / "meta.json").write_text(json.dumps({"id": conv.name, "title": "t", "llm_model": "openai/stub-model"}))
    det = registry.detect(bare / names[3])
    assert det.format.name == "openhands-sdk" and Path(det.match.root) == bare
    s = trajkit.read(bare)
    events = [json.loads((bare / n).read_text()) for n in names]
    laid = trajkit.read(build.sdk_conversation(tmp_path / "laid", events, None))
    assert _steps(s) == _steps(laid) and len(s.steps) == sdk_step_count(events) > 0
    assert "sdk.bare-events" in _codes(s) and "sdk.events-missing" not in _codes(s)
    assert not [f for f in s.files if f.status not in ("read", "ignored")], [f.to_dict() for f in s.files]
    rows = json.loads(cli("ls", bare, "--json", check=True).stdout)
    assert len(rows) == 1 and rows[0]["events"] == len(names)
    if cloud_names:
        assert s.id == conv.name and rows[0]["model"] == "openai/stub-model"


def test_context_of_an_sdk_record_is_the_conversations(cli, sdk_out, tmp_path):
    """`context` on a record: the SDK reader's rebuild over the same events; a V0 history says it cannot."""
    path, recs = sdk_out
    r = next(r for r in recs if r["instance_id"] == "cd94562403b9487ebdd4018e3f531dfd")
    conv = build.sdk_conversation(tmp_path / "conv", r["history"], r["metrics"])
    a = json.loads(cli("context", f"{path}#{r['instance_id']}", "--json", check=True).stdout)
    b = json.loads(cli("context", conv, "--json", check=True).stdout)
    assert a == b and len(a) == len({e["llm_response_id"] for e in r["history"] if e.get("llm_response_id")})
    v0 = build.write_jsonl(tmp_path / "v0.jsonl", [build.v0_record(0, "basic", build.v0_samples()[0][1])])
    p = cli("context", v0)
    assert p.returncode == 2 and "V0 history" in p.stderr


def test_view_writes_one_page_per_record(cli, v0_out, tmp_path):
    path, recs = v0_out
    p = cli("view", path, "--out", tmp_path / "pages", "--json")
    assert p.returncode == 0, p.stderr
    pages = sorted(x.name for x in (tmp_path / "pages").glob("*.html") if x.name != "index.html")
    assert len(pages) == len(recs)
    one = cli("view", f"{path}#{recs[0]['instance_id']}", "--out", tmp_path / "one.html")
    assert one.returncode == 0 and (tmp_path / "one.html").read_text().lower().startswith("<!doctype html>")


def test_the_docs_examples_run(cli, tmp_path):
    """Every `$ trajkit ...` line of docs/openhands-eval.md runs (exit 0) on the shipped fixtures."""
    import shlex

    from conftest import REPO

    text = (REPO / "docs" / "openhands-eval.md").read_text(encoding="utf-8")
    cmds = [line[2:] for line in text.splitlines() if line.startswith("$ trajkit ")]
    assert len(cmds) >= 10
    for cmd in cmds:
        args = [a.replace("/tmp/", f"{tmp_path}/") for a in shlex.split(cmd)[1:]]
        p = cli(*args)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])


def test_ctb_row_checks_one_record(cli, v0_out, tmp_path):
    """--ctb-row on a record: its step_count is checked and its labels attached; a
    multi-row manifest finds the record's row by its instance id."""
    path, recs = v0_out
    r = recs[1]
    n = v0_step_count(r["history"])
    rows = [{"traj_id": f"openhands-x-{x['instance_id']}", "task_name": x["instance_id"], "step_count": v0_step_count(x["history"]),
             "incorrect_stages": [{"stage_id": 1, "incorrect_step_ids": [1], "unuseful_step_ids": []}]} for x in recs]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(x) + "\n" for x in rows))
    p = cli("steps", f"{path}#{r['instance_id']}", "--ctb-row", manifest, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["step_count"] == n and doc["steps"][0]["labels"] == ["incorrect"]
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(dict(rows[1], step_count=n + 1)))
    assert cli("steps", f"{path}#{r['instance_id']}", "--ctb-row", wrong).returncode == 1
    assert cli("steps", path, "--ctb-row", wrong).returncode == 2  # a file of many records: name one
