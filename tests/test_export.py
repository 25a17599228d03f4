"""Export of real runs (OpenHands V0 trials, SDK V1 conversations) to ASF and
ATIF, through the normalized session, with the loss report."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path

import atif as atif_pkg
import pytest

from trajkit.export import to_asf, to_atif
from trajkit.spec import asf
from trajkit.export.convert import convert
from trajkit.registry import detect, read

from conftest import CORPUS, REPO, run_cli

FIXTURES = REPO / "tests" / "fixtures" / "export"
V1 = CORPUS / "openhands_v1"
CONDENSATION = V1 / "generated" / "localconv_condensation" / "0123456789abcdef0123456789abcdef"
SUBAGENT = V1 / "generated" / "localconv_subagent_confirm" / "fedcba9876543210fedcba9876543210"
V0_TRIAL = CORPUS / "openhands_v0" / "reconstructed_trials" / "game-2048-session.1-of-1.all-views"
V0_FLAT = CORPUS / "openhands_v0" / "flat_exports" / "basic.json"
#: An SDK event tree: an abandoned branch, a side state update, a second root.
BRANCHED = FIXTURES / "sdk_branched" / "33333333333333333333333333333333"


def corpus_sources() -> list[Path]:
    """Every OpenHands V0 and V1 run in the shared corpus."""
    v0 = CORPUS / "openhands_v0"
    out = sorted((v0 / "flat_exports").glob("*.json"))
    out += sorted(p for p in (v0 / "reconstructed_trials").iterdir() if p.is_dir())
    out += sorted(p for p in (V1 / "generated").glob("*/*") if p.is_dir())
    out += sorted(p for p in (V1 / "sdk_pr_artifacts").glob("*/*") if p.is_dir())
    out += sorted(p for p in (V1 / "certifier_fixtures" / "conversations").iterdir() if p.is_dir())
    return out


SOURCES = corpus_sources() if CORPUS.is_dir() else []


def _id(p: Path) -> str:
    return str(p.relative_to(CORPUS))


def test_the_corpus_sources_are_all_v0_or_v1(corpus):
    assert len(SOURCES) >= 19
    for p in SOURCES:
        assert detect(p).format.name in ("openhands-v0", "openhands-sdk"), p


@pytest.mark.parametrize("src", SOURCES, ids=_id)
@pytest.mark.parametrize("target", ["asf", "atif"])
def test_whole_corpus_converts_with_complete_accounting(corpus, tmp_path, src, target):
    session = read(src)
    res = convert(session, target, tmp_path)
    assert res.ok, res.problems
    rep = res.report
    assert rep["unaccounted"] == []
    # Every native event of every session in the tree is in the report, placed.
    all_events = [(s.id, repr(e.id)) for s in session.walk() for e in s.events]
    in_report = [(r["session"], repr(r["event_id"])) for r in rep["events"]]
    assert sorted(all_events) == sorted(in_report)
    assert rep["summary"]["events_dropped"] == 0
    # Both OpenHands formats write naive local times; the report says they were read as UTC.
    assert any(d["code"] == "export.naive-timestamp" for d in rep["diagnostics"]) == any(
        isinstance(e.timestamp, str) and not e.timestamp.endswith(("Z", "+00:00")) and "+" not in e.timestamp[10:]
        for s in session.walk() for e in s.events)
    assert all(r["code"] in ("export.entry", "export.step", "export.step-extra") for r in rep["events"])
    # Every native file a reader looked at is in the report with a code.
    files = [(s.id, f.path) for s in session.walk() for f in s.files]
    assert sorted(files) == sorted((r["session"], r["path"]) for r in rep["files"])
    assert all(r["code"].startswith("export.file-") and r["why"] for r in rep["files"])
    if target == "asf":
        for p in res.outputs:
            f = asf.read_asf(p)
            assert [d for d in asf.verify(f) if d.severity == "error"] == []
            assert asf.write_asf(f) == p.read_bytes()
            assert f.header["format"] == "agentsession/0.11"
            assert f.header["payload"] == "openresponses/2026-04-24"
            assert f.header["records"] == []
            assert f.entries[0].type == "config"
            # The shared corpus has no abandoned branches: one path, no stray side leaves.
            assert len(f.leaves()) == 1
        # Every entry an event went to exists in the written files.
        written = {e.id for p in res.outputs for e in asf.read_asf(p).entries}
        assert {x for r in rep["events"] for x in r["entries"]} <= written
    else:
        for p in res.outputs:
            doc = json.loads(p.read_text())
            atif_pkg.Trajectory.model_validate(doc)  # Harbor's schema, via PyPI atif
            assert doc["schema_version"] == "ATIF-v1.8"
            assert [s["step_id"] for s in doc["steps"]] == list(range(1, len(doc["steps"]) + 1))


def _steps_by_call(doc):
    return {tc["tool_call_id"]: st for st in doc["steps"] for tc in st.get("tool_calls") or []}


def test_parallel_calls_all_kept_with_their_observations(corpus, tmp_path):
    session = read(CONDENSATION)
    export = to_asf.session_to_asf(session)
    doc = to_atif.project_session(export.root)[0][1]
    batch = [st for st in doc["steps"] if st["source"] == "agent" and len(st.get("tool_calls") or []) == 2]
    assert len(batch) == 1
    st = batch[0]
    ids = [tc["tool_call_id"] for tc in st["tool_calls"]]
    assert ids == ["call_2_0", "call_2_1"]
    assert [r["source_call_id"] for r in st["observation"]["results"]] == ids
    assert st["message"] == "Now view it and record a plan."
    assert st["reasoning_effort"] == "high"  # the conversation's reasoning_effort, sent with every request
    assert st["metrics"]["prompt_tokens"] > 0
    # One response entry for the two actions of the model call.
    resp = [e for e in export.root.entries if e.type == "response" and e.raw.get("response_id") == "chatcmpl-stub-0002"]
    assert len(resp) == 1


def test_condensation_is_a_compaction_and_a_copied_context_step(corpus):
    session = read(CONDENSATION)
    export = to_asf.session_to_asf(session)
    f = export.root
    comp = [e for e in f.entries if e.type == "compaction"]
    assert len(comp) == 1
    c = comp[0].raw
    assert c["summary"]["content"][0]["text"].startswith("SUMMARY:")
    assert len(c["trajkit:forgotten_event_ids"]) == 8
    assert c["config"]["model"] and c["config"]["tools"]
    assert c["usage"]["input_tokens"] > 0 and c["trajkit:response_id"] == "chatcmpl-stub-0005"
    resp = [e.raw for e in f.entries if e.type == "response"]
    assert all(isinstance(r["latency_ms"], int) for r in resp)
    doc = to_atif.project_session(f)[0][1]
    copied = [st for st in doc["steps"] if st.get("is_copied_context")]
    assert len(copied) == 1
    assert copied[0]["source"] == "system"
    assert copied[0]["extra"]["context_management"] == {"type": "compaction", "boundary": "replace"}
    assert copied[0]["message"] == copied[0]["observation"]["results"][0]["content"]


def test_v1_request_hashes_verify_and_match_what_the_sdk_sent(corpus):
    """The ASF request rebuilt at each response holds exactly the tool calls and
    outputs the SDK sent (rebuild_context), condensation included."""
    from trajkit.formats.openhands_sdk import rebuild_context

    for src in (CONDENSATION, SUBAGENT, BRANCHED):
        session = read(src)
        f = to_asf.session_to_asf(session).root
        sent = {c["llm_response_id"]: c["messages"] for c in rebuild_context(session)}
        responses = [e for e in f.entries if e.type == "response"]
        assert responses and all("request_hash" in e.raw for e in responses)
        assert [d for d in asf.verify(f) if d.severity == "error"] == []
        for e in responses:
            req = asf.request_context(f, e).request()
            assert asf.request_hash(req) == e.raw["request_hash"]
            msgs = sent[e.raw["response_id"]]
            calls = [i["call_id"] for i in req["input"] if i["type"] == "function_call"]
            outs = [i["call_id"] for i in req["input"] if i["type"] == "function_call_output"]
            assert calls == [tc["id"] for m in msgs if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
            assert outs == [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
            system = msgs[0]["content"]
            system = system[0]["text"] if isinstance(system, list) else system
            assert req["instructions"] == system
            declared = next(ev for ev in session.events if ev.kind == "system").raw.get("tools") or []
            assert len(req.get("tools", [])) == len(declared)


def test_v0_has_no_request_hash(corpus):
    f = to_asf.session_to_asf(read(V0_TRIAL)).root
    responses = [e for e in f.entries if e.type == "response"]
    assert responses and not any("request_hash" in e.raw for e in responses)


def test_subagent_session_linked_and_embedded(corpus, tmp_path):
    session = read(SUBAGENT)
    assert len(session.children) == 1
    export = to_asf.session_to_asf(session)
    parent, child = export.files
    links = [e for e in parent.entries if e.type == "link"]
    assert len(links) == 1 and links[0].raw["rel"] == "subsession"
    call_id = links[0].raw["call_id"]
    nil = uuid.UUID(int=0)
    assert child.header["id"] == str(uuid.uuid5(nil, f"{parent.header['id']}/{call_id}"))
    assert links[0].raw["session"] == child.header["id"]
    assert child.header["parent_session"] == parent.header["id"] and child.header["spawned_by"] == call_id
    res = convert(session, "atif", tmp_path)
    assert res.ok, res.problems
    doc = json.loads(res.outputs[0].read_text())
    sub = doc["subagent_trajectories"]
    assert len(sub) == 1 and sub[0]["session_id"] == child.header["id"]
    refs = [r for st in doc["steps"] for r in (st.get("observation") or {}).get("results", []) if r.get("subagent_trajectory_ref")]
    assert len(refs) == 1 and refs[0]["source_call_id"] == call_id
    assert refs[0]["subagent_trajectory_ref"][0]["trajectory_id"] == sub[0]["trajectory_id"]
    # Sub-agent events are in the report with the steps of the embedded document.
    child_events = [r for r in res.report["events"] if r["session"] == session.children[0].id]
    assert child_events and all(w["trajectory"] == sub[0]["trajectory_id"] for r in child_events for w in r["steps"])


def test_raw_native_events_ride_along_unless_no_passthrough(corpus, tmp_path):
    session = read(V0_FLAT)
    res = convert(session, "atif", tmp_path / "a")
    doc = json.loads(res.outputs[0].read_text())
    natives = [n for st in doc["steps"] for n in st["extra"].get("trajkit:native", [])]
    natives += [r["extra"]["trajkit:native"] for st in doc["steps"] for r in (st.get("observation") or {}).get("results", [])
                if "trajkit:native" in r.get("extra", {})]
    assert sorted(n["id"] for n in natives) == sorted(e.id for e in session.events)
    res2 = convert(session, "atif", tmp_path / "b", passthrough=False)
    text = res2.outputs[0].read_text()
    assert "trajkit:native" not in text
    assert all(r["raw_not_kept"]["code"] == "export.raw-not-kept" for r in res2.report["events"])
    atif_pkg.Trajectory.model_validate(json.loads(text))


def _mutate_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize("target", ["asf", "atif"])
def test_mutation_v0_unknown_member_and_event_surface(corpus, tmp_path, target):
    src = tmp_path / "basic.json"
    shutil.copy(V0_FLAT, src)

    def mutate(events):
        events[1]["zz_mutant_member"] = {"secret_sauce": 42}
        events.append({"id": 99, "timestamp": "2025-01-27T23:00:00", "source": "agent", "zz_mutant_event": "new kind"})

    _mutate_json(src, mutate)
    session = read(src)
    res = convert(session, target, tmp_path / "out", report_path=tmp_path / "r.json")
    assert res.ok, res.problems
    out_text = "".join(p.read_text() for p in res.outputs)
    assert "zz_mutant_member" in out_text and "secret_sauce" in out_text
    assert "zz_mutant_event" in out_text
    rep = json.loads((tmp_path / "r.json").read_text())
    ev = [r for r in rep["events"] if r["event_id"] == 99]
    assert len(ev) == 1 and ev[0]["code"] in ("export.entry", "export.step", "export.step-extra")
    # Without passthrough the unknown member is not in the output, so the report names it.
    res2 = convert(session, target, tmp_path / "out2", passthrough=False)
    assert "zz_mutant_member" not in "".join(p.read_text() for p in res2.outputs)
    rec = [r for r in res2.report["events"] if r["event_id"] == session.events[1].id][0]
    assert "zz_mutant_member" in rec["raw_not_kept"]["members"]
    assert "zz_mutant_member.secret_sauce" in rec["raw_not_kept"]["members"]


def test_mutation_v1_unknown_member_and_event_surface(corpus, tmp_path):
    src = tmp_path / "conv"
    shutil.copytree(SUBAGENT, src)
    events = sorted((src / "events").glob("event-*.json"))
    _mutate_json(events[2], lambda d: d.__setitem__("zz_mutant_member", [1, 2, 3]))
    last = json.loads(events[-1].read_text())
    new = {"kind": "ZzFutureEvent", "id": "abcdef01-0000-4000-8000-000000000000", "timestamp": last["timestamp"],
           "source": "environment", "parent_id": last["id"], "payload": {"zz_mutant_event": True}}
    idx = len(events)
    (src / "events" / f"event-{idx:05d}-{new['id']}.json").write_text(json.dumps(new))
    session = read(src)
    res = convert(session, "asf", tmp_path / "out")
    assert res.ok, res.problems
    text = res.outputs[0].read_text()
    assert "zz_mutant_member" in text and "zz_mutant_event" in text
    rec = [r for r in res.report["events"] if r["event_id"] == new["id"]]
    assert len(rec) == 1 and rec[0]["entries"]
    entry = asf.read_asf(res.outputs[0]).by_id[rec[0]["entries"][0]]
    assert entry.raw["trajkit:native"]["raw"]["payload"] == {"zz_mutant_event": True}
    # A file the reader cannot use surfaces in the report with why.
    (src / "events" / "event-00099-not-a-uuid.json").write_text(json.dumps(new))
    res2 = convert(read(src), "asf", tmp_path / "out2")
    skipped = [r for r in res2.report["files"] if r["path"].endswith("event-00099-not-a-uuid.json")]
    assert len(skipped) == 1 and skipped[0]["code"] == "export.file-skipped"


def test_edge_cases_fixture(corpus, tmp_path):
    """Re-used and invalid call ids, a missing timestamp, an orphan answer, a
    lone surrogate, a huge integer, an unknown event: written, verified, reported."""
    session = read(FIXTURES / "v0_edge_cases.json")
    res = convert(session, "asf", tmp_path / "asf")
    assert res.ok, res.problems
    f = asf.read_asf(res.outputs[0])
    calls = [e.raw for e in f.entries if e.type == "item" and e.raw["item"]["type"] == "function_call"]
    assert [c["item"]["call_id"] for c in calls] == ["call_trajkit_1", "call_trajkit_2"]
    assert all(c["trajkit:native_call_id"] == "dup call/1" for c in calls)
    outs = [e.raw for e in f.entries if e.type == "item" and e.raw["item"]["type"] == "function_call_output"]
    assert [o["item"]["call_id"] for o in outs][:2] == ["call_trajkit_1", "call_trajkit_2"]
    assert [o["item"]["output"] for o in outs][:2] == ["a.txt", "hello"]
    assert outs[2].get("trajkit:orphan") is True
    user = [e.raw for e in f.entries if e.type == "item" and e.raw["item"].get("role") == "user"][0]
    assert user["item"]["content"][0]["text"] == "Fix it \ufffd please"
    ats = {r["at"] for r in user["normalised"]}
    assert "/item/content/0/text" in ats and "/trajkit:native/raw/acme_big" in ats
    for e in f.entries:
        assert asf.normalize_ts(e.raw["ts"]) == e.raw["ts"]
    res2 = convert(session, "atif", tmp_path / "atif")
    assert res2.ok, res2.problems
    doc = json.loads(res2.outputs[0].read_text())
    orphan = [st for st in doc["steps"] if "orphan_call_id" in st["extra"]]
    assert len(orphan) == 1 and orphan[0]["source"] == "system"


def test_redaction(corpus, tmp_path):
    session = read(SUBAGENT)
    res = convert(session, "asf", tmp_path, secrets=["hello.txt"], redact_home=True)
    assert res.ok, res.problems
    text = "".join(p.read_text() for p in res.outputs)
    assert "hello.txt" not in text and "/home/agent" not in text
    assert "[REDACTED]" in text
    assert res.report["redactions"] > 0
    for p in res.outputs:
        f = asf.read_asf(p)
        assert f.header["redacted"] is True
        assert [d for d in asf.verify(f) if d.severity == "error"] == []
    # A secret inside a call id: the id stays a valid, matching Open Responses call id.
    res = convert(session, "asf", tmp_path / "ids", secrets=["call_1_0"])
    assert res.ok, res.problems
    f = asf.read_asf(res.outputs[0])
    items = [e.raw["item"] for e in f.entries if e.type == "item"]
    ids = {i["call_id"] for i in items if i["type"] == "function_call"}
    assert "call_1_0" not in ids and all(re.match(r"^[A-Za-z0-9_-]{1,64}$", c) for c in ids)
    assert {i["call_id"] for i in items if i["type"] == "function_call_output"} <= ids


def test_convert_cli(corpus, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("convert", SUBAGENT, "--to", "asf", "--out", out, "--report", tmp_path / "rep.json", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["ok"] and len(summary["outputs"]) == 2 and summary["unaccounted"] == []
    assert json.loads((tmp_path / "rep.json").read_text())["summary"]["events"] == 22
    for p in summary["outputs"]:
        v = run_cli("verify", p)
        assert v.returncode == 0, v.stdout
    proc = run_cli("convert", V0_TRIAL, "--to", "atif", "--out", tmp_path / "atif")
    assert proc.returncode == 0, proc.stderr
    assert "18 events in 40 files" in proc.stderr
    bad = run_cli("convert", tmp_path / "missing", "--to", "asf", "--out", out)
    assert bad.returncode == 2
    nothing = tmp_path / "empty"
    nothing.mkdir()
    proc = run_cli("convert", nothing, "--to", "asf", "--out", out)
    assert proc.returncode == 2 and "trajkit:" in proc.stderr


def test_event_tree_becomes_an_asf_tree(corpus, tmp_path):
    session = read(BRANCHED)
    f = to_asf.session_to_asf(session).root
    assert [d for d in asf.verify(f) if d.severity == "error"] == []
    # The live leaf is the reader's active branch; abandoned work is off its path.
    main = f.main_leaf()
    live = [e.raw.get("trajkit:native", {}).get("event_id") for e in f.path_to(main)]
    live = list(dict.fromkeys(x for x in live if x is not None))
    assert live == session.metadata["active_branch"]
    assert len(f.leaves()) >= 3  # abandoned branch, new root, live leaf (+ its label)
    roots = [e for e in f.entries if e.parent is None]
    assert len(roots) == 2 and all(r.type == "config" for r in roots)
    res = convert(session, "atif", tmp_path)
    assert res.ok, res.problems
    names = [p.name for p in res.outputs]
    assert names[0] == f"{f.header['id']}.json" and len(names) == 3
    main_doc = json.loads(res.outputs[0].read_text())
    assert [tc["tool_call_id"] for st in main_doc["steps"] for tc in st.get("tool_calls") or []] == ["c2"]
    abandoned = [json.loads(p.read_text()) for p in res.outputs[1:]]
    assert any(d["extra"].get("abandoned_at") for d in abandoned)
    # Every event, on any branch, is placed in some document.
    assert res.report["summary"]["events_dropped"] == 0 and res.report["unaccounted"] == []


def test_token_ids_and_logprobs_reach_atif_metrics():
    """A reader that captured token ids and logprobs (Event.extra) gets them in
    the step metrics; a hand-built session, since no corpus source has them."""
    from trajkit.model import Event, Session, ToolCall, Usage

    s = Session(format="hand-built", source_path="mem", id="tok")
    s.events = [
        Event(id=1, kind="message", type="message", raw={"id": 1}, source="user", role="user", timestamp="2026-01-01T00:00:00Z", text="hi"),
        Event(id=2, kind="action", type="run", raw={"id": 2}, source="agent", role="assistant", timestamp="2026-01-01T00:00:01Z",
              text="running", tool_calls=[ToolCall(name="run", arguments={"command": "ls"}, call_id="c1")], response_id="r1",
              usage={"prompt_tokens": 5, "completion_tokens": 3, "cost": 0.25},
              model_usage=Usage(input=5, output=3, cost=0.25, source="hand-built"),
              extra={"prompt_token_ids": [1, 2, 3, 4, 5], "completion_token_ids": [7, 8, 9], "logprobs": [-0.1, -0.2, -0.3]}),
        Event(id=3, kind="observation", type="run", raw={"id": 3}, source="environment", role="tool", timestamp="2026-01-01T00:00:02Z",
              text="a.txt", call_id="c1", cause=2),
    ]
    export = to_asf.session_to_asf(s, request_hashes=False)
    doc = to_atif.project_session(export.root)[0][1]
    atif_pkg.Trajectory.model_validate(doc)
    agent = [st for st in doc["steps"] if st["source"] == "agent"][0]
    m = agent["metrics"]
    assert m["prompt_token_ids"] == [1, 2, 3, 4, 5] and m["completion_token_ids"] == [7, 8, 9]
    assert m["logprobs"] == [-0.1, -0.2, -0.3] and m["cost_usd"] == 0.25
    assert m["prompt_tokens"] == 5 and m["completion_tokens"] == 3
    assert doc["final_metrics"]["total_cost_usd"] == 0.25
    assert agent["observation"]["results"][0] == {**agent["observation"]["results"][0], "source_call_id": "c1", "content": "a.txt"}


def test_no_request_hash_when_the_model_ran_elsewhere(tmp_path):
    """An SDK ACPAgent conversation: what the model saw is not in the log, so
    no response claims a request hash."""
    session = read(FIXTURES / "sdk_acp_agent" / "22222222222222222222222222222222")
    assert session.metadata["context_rebuildable"] is False
    res = convert(session, "asf", tmp_path)
    assert res.ok, res.problems
    f = asf.read_asf(res.outputs[0])
    assert not any("request_hash" in e.raw for e in f.entries if e.type == "response")


def test_convert_a_directory_of_runs(corpus, tmp_path):
    """A directory holding many runs (V0 trials, flat exports, SDK conversations)."""
    src = tmp_path / "runs"
    src.mkdir()
    shutil.copytree(V0_TRIAL, src / "trial-a")
    shutil.copy(V0_FLAT, src / "flat.json")
    shutil.copytree(CONDENSATION, src / "convs" / CONDENSATION.name)
    (src / "notes.txt").write_text("not a run")
    proc = run_cli("convert", src, "--to", "atif", "--out", tmp_path / "out", "--report", tmp_path / "r.json", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] and doc["runs"] == 3 and len(doc["outputs"]) == 3
    rep = json.loads((tmp_path / "r.json").read_text())
    assert [r["format"] for r in rep["reports"]].count("openhands-v0") == 2
    assert rep["summary"]["events"] == sum(len(read(p).events) for p in (src / "trial-a", src / "flat.json", src / "convs" / CONDENSATION.name))
    assert rep["summary"]["events_dropped"] == 0
    for p in doc["outputs"]:
        atif_pkg.Trajectory.model_validate(json.loads(Path(p).read_text()))
    empty = tmp_path / "nothing"
    empty.mkdir()
    proc = run_cli("convert", empty, "--to", "asf", "--out", tmp_path / "o2")
    assert proc.returncode == 2 and "no run was found" in proc.stderr
