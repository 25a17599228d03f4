"""ATIF as input (issue 11): every corpus ATIF document and our own edge
cases are read (invalid ones with located diagnostics), their steps and
per-call usage equal what plain json computes from the file, sub-agents hang
on their spawning call, and ATIF -> Session -> ATIF gives an equal document.

"Equal" (docs/atif.md, "Round trip") is checked here by :func:`differences`,
written from the ATIF spec alone (no trajkit code): same steps in the same
order with the same source, message text, reasoning, timestamp instant,
model name, tool calls (id, name, arguments; a non-object argument value
wrapped as {"_arguments": value}), results per call id, token metrics
(absent = 0) and recorded cost; every original step verbatim in the exported
step's extra["trajkit:native"]; the agent's name, version, model and tool
definitions; the root's other members in extra["trajkit:metadata"]["atif"];
and the embedded sub-agent trajectories, recursively.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import CORPUS, REPO

from trajkit import registry

FIXTURES = REPO / "src" / "trajkit" / "formats" / "fixtures" / "atif"
CORPUS_ATIF = sorted(
    [*CORPUS.glob("atif/**/input.json"), *CORPUS.glob("atif/**/trajectory.json"),
     *CORPUS.glob("asf/agentsession/testdata/export/*.json"), CORPUS / "asf/agentsession/testdata/atif/rfc-example.json"]
)
OWN = sorted(FIXTURES.glob("*.json"))


def _id(p: Path) -> str:
    return str(p.relative_to(p.parents[2]))


# ------------------------------------------------------------------ the reference rules, from the spec

def text(content):
    if content is None:
        return None
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def instant(ts):
    d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def wrap(args):
    return args if isinstance(args, dict) else {"_arguments": args}


def differences(orig: dict, out: dict, where: str = "") -> list[str]:
    bad: list[str] = []

    def check(cond, what):
        if not cond:
            bad.append(f"{where}{what}")

    osteps, xsteps = orig["steps"], out["steps"]
    check(len(osteps) == len(xsteps), f"{len(osteps)} steps became {len(xsteps)}")
    for o, x in zip(osteps, xsteps):
        at = f"step {o.get('step_id')}: "
        xe = x.get("extra") or {}
        check(xe.get("trajkit:native", [None])[0] == o, at + "the original step is not kept verbatim")
        check(o["source"] == x["source"], at + "source")
        check((text(o.get("message")) or "") == (text(x.get("message")) or ""), at + "message")
        if isinstance(o.get("reasoning_content"), str) and o["reasoning_content"]:
            check(x.get("reasoning_content") == o["reasoning_content"], at + "reasoning_content")
        if isinstance(o.get("timestamp"), str):
            check(instant(o["timestamp"]) == instant(x["timestamp"]), at + "timestamp")
        if o.get("model_name"):
            check(x.get("model_name") == o["model_name"], at + "model_name")
        ocalls = [(c["tool_call_id"], c["function_name"], wrap(c.get("arguments"))) for c in o.get("tool_calls") or []]
        xcalls = [((c.get("extra") or {}).get("trajkit:native_call_id", c["tool_call_id"]),
                   (c.get("extra") or {}).get("trajkit:native_name", c["function_name"]), c["arguments"])
                  for c in x.get("tool_calls") or []]
        check(ocalls == xcalls, at + f"tool calls {ocalls} != {xcalls}")
        native_of = {c["tool_call_id"]: (c.get("extra") or {}).get("trajkit:native_call_id", c["tool_call_id"])
                     for c in x.get("tool_calls") or []}
        own = {c[0] for c in ocalls}
        ores = {r["source_call_id"]: text(r.get("content")) or "" for r in (o.get("observation") or {}).get("results", [])
                if r.get("source_call_id") in own}
        xres = {native_of.get(r.get("source_call_id")): text(r.get("content")) or ""
                for r in (x.get("observation") or {}).get("results", []) if r.get("source_call_id")}
        check(ores == xres, at + f"results {ores} != {xres}")
        om, xm = o.get("metrics"), x.get("metrics") or {}
        if isinstance(om, dict):
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens"):
                check((om.get(k) or 0) == (xm.get(k) or 0), at + f"metrics.{k}")
            if om.get("cost_usd") is not None:
                check(xm.get("cost_usd") == pytest.approx(om["cost_usd"]), at + "metrics.cost_usd")
        if xm.get("cost_usd") is not None and not (isinstance(om, dict) and om.get("cost_usd") is not None):
            check((xm.get("extra") or {}).get("cost_estimated") is True, at + "a cost the original lacks is not flagged estimated")
    oa, xa = orig["agent"], out["agent"]
    for k in ("name", "version", "model_name", "tool_definitions"):
        if k in oa:
            check(xa.get(k) == oa[k], f"agent.{k}")
    check((xa.get("extra") or {}).get("trajkit:native") == oa, "the original agent is not kept verbatim")
    xe = out.get("extra") or {}
    # the session's id: an embedded trajectory's trajectory_id (unique there), else the run's session_id
    want = orig.get("trajectory_id") if where else (orig.get("session_id") or orig.get("trajectory_id"))
    check(xe.get("trajkit:source", {}).get("id") == want, "session id")
    rest = {k: v for k, v in orig.items() if k not in ("steps", "agent", "subagent_trajectories")}
    check(xe.get("trajkit:metadata", {}).get("atif") == rest, "root members")
    osubs = orig.get("subagent_trajectories") or []
    xsubs = {((s.get("extra") or {}).get("trajkit:source") or {}).get("id"): s for s in out.get("subagent_trajectories") or []}
    for s in osubs:
        x = xsubs.get(s["trajectory_id"])
        check(x is not None, f"sub-agent {s['trajectory_id']} missing")
        if x is not None:
            bad += differences(s, x, f"{where}subagent {s['trajectory_id']}: ")
    return bad


def round_trip(src: Path, out_dir: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "trajkit", "convert", str(src), "--to", "atif", "--out", str(out_dir), "--json"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, (p.stdout, p.stderr)
    rep = json.loads(p.stdout)
    assert rep["validated"] is True and rep["problems"] == [], rep
    (out,) = rep["outputs"]
    return json.loads(Path(out).read_text())


@pytest.mark.parametrize("src", CORPUS_ATIF + OWN, ids=_id)
def test_round_trip_is_equal(src, tmp_path):
    orig = json.loads(src.read_text())
    assert differences(orig, round_trip(src, tmp_path)) == []


@pytest.mark.parametrize("src", CORPUS_ATIF + OWN, ids=_id)
def test_steps_and_usage_from_the_raw_file(src):
    """atif.md §8.4: one step per tool call that a result names; per agent step one model call with its metrics."""
    doc = json.loads(src.read_text())
    s = registry.read(src)
    assert s.format == "atif"

    def expected(d):
        answered = set()
        for st in d["steps"]:
            for r in (st.get("observation") or {}).get("results", []):
                if r.get("source_call_id"):
                    answered.add(r["source_call_id"])
        calls = [c["tool_call_id"] for st in d["steps"] if st["source"] == "agent" for c in st.get("tool_calls") or []]
        return [c for c in calls if c in answered]

    assert [st.extra["call_id"] for st in s.steps] == expected(doc)
    usage = [(st.get("metrics") or {}) for st in doc["steps"] if st["source"] == "agent"]
    got = [e.model_usage for e in s.events if e.type == "atif.agent"]
    assert len(got) == len(usage)
    for m, u in zip(usage, got):
        if not m:
            assert u is None
            continue
        assert (u.input, u.output, u.cache_read) == (m.get("prompt_tokens"), m.get("completion_tokens"), m.get("cached_tokens"))
        if m.get("cost_usd") is not None:
            assert u.cost == m["cost_usd"] and not u.cost_estimated
    assert s.id == str(doc.get("session_id") or doc.get("trajectory_id") or src.stem)


def test_corpus_cleanup_is_read_with_diagnostics():
    src = CORPUS / "atif/letta-ai+trajectory/fixtures/atif/cleanup/input.json"
    s = registry.read(src)
    codes = {(d.code, d.event_id) for d in s.diagnostics}
    assert ("atif.arguments-not-object", "step-3") in codes
    assert ("atif.subagent-unlinked", None) in codes
    assert ("atif.media-missing", "step-3/result-0") in codes
    (child,) = s.children
    raw = json.loads(src.read_text())["subagent_trajectories"][0]
    assert child.id == raw["trajectory_id"] and child.spawned_by is None
    assert [e.text for e in child.events if e.kind == "message"] == [st["message"] for st in raw["steps"]]
    (step,) = s.steps
    assert step.action_event_id == "step-3" and step.observation == "Check complete."


def test_tool_calls_dangling_ref_and_missing_image():
    src = CORPUS / "atif/letta-ai+trajectory/fixtures/atif/tool-calls/input.json"
    s = registry.read(src)
    codes = {d.code for d in s.diagnostics}
    assert "atif.subagent-missing" in codes and "atif.media-missing" in codes
    assert not s.children


def test_embedded_subagent_hangs_on_its_spawning_call():
    src = FIXTURES / "subagent.json"
    raw = json.loads(src.read_text())
    s = registry.read(src)
    (child,) = s.children
    assert child.id == "sub-config"
    link = child.spawned_by
    assert link is not None and link.action_event_id == "step-3"
    step = next(st for st in s.steps if st.extra["call_id"] == "call_delegate")
    assert step.children == [child] and link.step_id == step.step_id
    other = next(st for st in s.steps if st.extra["call_id"] == "call_count")
    assert other.children == []
    sub_raw = raw["subagent_trajectories"][0]
    assert [st.extra["call_id"] for st in child.steps] == ["sub_read"]
    assert child.run.harness == sub_raw["agent"]["name"]


def test_costs_missing_from_metrics_are_estimated_and_flagged(tmp_path):
    """Step 3 of the fixture has gpt-4o metrics and no cost_usd: 1000 fresh prompt tokens at $2.50,
    200 cached at $1.25 and 300 out at $10 per million = (2500 + 250 + 3000) / 1e6 = $0.00575."""
    s = registry.read(FIXTURES / "subagent.json")
    u3 = next(e for e in s.events if e.id == "step-3").model_usage
    assert u3.cost == pytest.approx(0.00575) and u3.cost_estimated
    u4 = next(e for e in s.events if e.id == "step-4").model_usage
    assert u4.cost == 0.0019 and not u4.cost_estimated
    out = round_trip(FIXTURES / "subagent.json", tmp_path)
    assert out["steps"][2]["metrics"]["cost_usd"] == pytest.approx(0.00575)
    assert out["steps"][2]["metrics"]["extra"]["cost_estimated"] is True
    assert "cost_estimated" not in (out["steps"][3]["metrics"].get("extra") or {})
    # the sub-agent's gpt-4o-mini calls: (300*0.15 + 20*0.60 + 350*0.15 + 8*0.60) / 1e6
    assert out["final_metrics"]["total_cost_usd"] == pytest.approx(0.00575 + 0.0019 + (300 * 0.15 + 20 * 0.6 + 350 * 0.15 + 8 * 0.6) / 1e6)
    show = subprocess.run([sys.executable, "-m", "trajkit", "show", str(FIXTURES / "subagent.json")], capture_output=True, text=True, cwd=REPO)
    assert "(estimated from the price table)" in show.stdout


# ------------------------------------------------------------------ edge cases of our own

BASE = {
    "schema_version": "ATIF-v1.0",
    "session_id": "edge",
    "agent": {"name": "edge-agent", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "go"},
        {"step_id": 2, "source": "agent", "message": "ok", "tool_calls": [
            {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}}],
         "observation": {"results": [{"source_call_id": "c1", "content": "a.txt"}]}},
    ],
}


def _doc(**over):
    d = copy.deepcopy(BASE)
    d.update(over)
    return d


EDGE = {
    "v1.0-minimal": _doc(),
    "naive-timestamps-and-parts": _doc(schema_version="ATIF-v1.6", steps=[
        {"step_id": 1, "timestamp": "2026-01-02T03:04:05", "source": "user",
         "message": [{"type": "text", "text": "look"}, {"type": "text", "text": "twice"}]},
        {"step_id": 2, "timestamp": "2026-01-02T03:04:06.250+02:00", "source": "agent", "message": "",
         "reasoning_content": "think", "tool_calls": [
             {"tool_call_id": "c1", "function_name": "read", "arguments": {"path": "x"}},
             {"tool_call_id": "c2", "function_name": "read", "arguments": {"path": "y"}}],
         "observation": {"results": [{"source_call_id": "c2", "content": [{"type": "text", "text": "Y"}]},
                                     {"content": "no call named"}]},
         "metrics": {"prompt_tokens": 10, "completion_tokens": 2}},
        {"step_id": 3, "source": "agent", "message": "done", "llm_call_count": 1}]),
    "unknown-members-everywhere": _doc(schema_version="ATIF-v1.8", x_root={"keep": [1, 2]}, notes="n",
                                       final_metrics={"total_steps": 2, "x": 1}, extra={"producer": "me"},
                                       agent={"name": "a", "version": "2", "x_agent": True, "extra": {"k": "v"}},
                                       steps=[{"step_id": 1, "source": "user", "message": "hi", "x_step": {"deep": [None]}},
                                              {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
                                                  {"tool_call_id": "c1", "function_name": "bash", "arguments": {}, "x_call": 1}],
                                               "observation": {"results": [{"source_call_id": "c1", "content": None, "x_res": 2}]},
                                               "metrics": {"prompt_tokens": 5, "completion_tokens": 1, "cost_usd": 0, "x_m": 3},
                                               "extra": {"anything": "goes"}}]),
    "odd-names-and-ids": _doc(steps=[
        {"step_id": 1, "source": "user", "message": "go"},
        {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
            {"tool_call_id": "call with spaces", "function_name": "mcp.server/tool", "arguments": ["list", "value"]}],
         "observation": {"results": [{"source_call_id": "call with spaces", "content": "ok"}]}}]),
    "nested-subagents": _doc(schema_version="ATIF-v1.7", steps=[
        {"step_id": 1, "source": "user", "message": "delegate"},
        {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
            {"tool_call_id": "d1", "function_name": "task", "arguments": {"t": "x"}}],
         "observation": {"results": [{"source_call_id": "d1", "content": "done",
                                      "subagent_trajectory_ref": [{"trajectory_id": "child"}]}]}}],
        subagent_trajectories=[{"schema_version": "ATIF-v1.7", "trajectory_id": "child", "agent": {"name": "c", "version": "1"},
                                "steps": [{"step_id": 1, "source": "user", "message": "x"},
                                          {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
                                              {"tool_call_id": "g1", "function_name": "task", "arguments": {}}],
                                           "observation": {"results": [{"source_call_id": "g1", "content": "deep done",
                                                                        "subagent_trajectory_ref": [{"trajectory_id": "grandchild"}]}]}}],
                                "subagent_trajectories": [{"schema_version": "ATIF-v1.7", "trajectory_id": "grandchild",
                                                           "agent": {"name": "g", "version": "1"},
                                                           "steps": [{"step_id": 1, "source": "agent", "message": "leaf"}]}]}]),
}


@pytest.mark.parametrize("name", sorted(EDGE))
def test_edge_cases_round_trip(name, tmp_path):
    src = tmp_path / f"{name}.json"
    src.write_text(json.dumps(EDGE[name]))
    assert differences(EDGE[name], round_trip(src, tmp_path / "out")) == []


def test_nested_subagents_link_at_each_level(tmp_path):
    src = tmp_path / "n.json"
    src.write_text(json.dumps(EDGE["nested-subagents"]))
    s = registry.read(src)
    (child,) = s.children
    (grand,) = child.children
    assert child.id == "child" and grand.id == "grandchild"
    assert child.spawned_by.action_event_id == "step-2" and grand.spawned_by.action_event_id == "step-2"
    assert s.steps[0].children == [child] and child.steps[0].children == [grand]


def test_trajectory_path_ref_reads_the_file(tmp_path):
    (tmp_path / "subagents").mkdir()
    (tmp_path / "subagents" / "c.json").write_text(json.dumps(_doc(session_id="child-file")))
    doc = _doc(steps=[{"step_id": 1, "source": "agent", "message": "", "tool_calls": [
        {"tool_call_id": "d", "function_name": "task", "arguments": {}}],
        "observation": {"results": [{"source_call_id": "d", "subagent_trajectory_ref": [{"trajectory_path": "subagents/c.json"}]}]}}])
    (tmp_path / "t.json").write_text(json.dumps(doc))
    s = registry.read(tmp_path / "t.json")
    (child,) = s.children
    assert child.id == "child-file" and child.spawned_by.method.endswith("trajectory_path")
    assert any(f.path == str(tmp_path / "subagents" / "c.json") and f.status == "read" for f in s.files)


# ------------------------------------------------------------------ bad input: located diagnostics, never a crash

BAD = [
    ("array", "[1, 2]", "atif.not-a-trajectory", None),
    ("truncated", '{"schema_version": "ATIF-v1.5", "agent": {"name": "a", "vers', "json.invalid", None),
    ("steps-not-list", json.dumps(_doc(steps={"a": 1})), "atif.missing-member", None),
    ("empty-steps", json.dumps(_doc(steps=[])), "atif.empty-steps", None),
    ("no-agent", json.dumps({k: v for k, v in _doc().items() if k != "agent"}), "atif.missing-member", None),
    ("step-not-object", json.dumps(_doc(steps=[1, BASE["steps"][1]])), "atif.bad-step", "step-index-0"),
    ("bad-source", json.dumps(_doc(steps=[{"step_id": 1, "source": "robot", "message": "x"}])), "atif.bad-source", "step-1"),
    ("step-ids", json.dumps(_doc(steps=[{"step_id": 5, "source": "user", "message": "x"}])), "atif.step-id", "step-5"),
    ("no-message", json.dumps(_doc(steps=[{"step_id": 1, "source": "user"}])), "atif.missing-member", "step-1"),
    ("agent-only-on-user", json.dumps(_doc(steps=[{"step_id": 1, "source": "user", "message": "x", "metrics": {}}])),
     "atif.agent-only-member", "step-1"),
    ("newer-version", json.dumps(_doc(schema_version="ATIF-v1.9")), "atif.newer-version", None),
    ("bad-version", json.dumps(_doc(schema_version="v2")), "atif.schema-version", None),
    ("tool-calls-not-list", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "tool_calls": {}}])),
     "atif.bad-tool-calls", "step-1"),
    ("call-not-object", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "tool_calls": [7]}])),
     "atif.bad-tool-calls", "step-1"),
    ("call-missing-id", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "tool_calls": [{"arguments": {}}]}])),
     "atif.missing-member", "step-1"),
    ("duplicate-call-id", json.dumps(_doc(steps=[{**BASE["steps"][1], "step_id": 1}, BASE["steps"][1]])), "atif.duplicate-call-id", "step-2"),
    ("result-unknown-call", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "",
                                                    "observation": {"results": [{"source_call_id": "nope", "content": "x"}]}}])),
     "atif.result-unknown-call", "step-1/result-0"),
    ("result-call-elsewhere", json.dumps(_doc(steps=[
        {"step_id": 1, "source": "agent", "message": "", "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": {}}]},
        {"step_id": 2, "source": "agent", "message": "", "observation": {"results": [{"source_call_id": "c", "content": "late"}]}}])),
     "atif.result-call-elsewhere", "step-2/result-0"),
    ("observation-not-object", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "observation": [1]}])),
     "atif.bad-observation", "step-1"),
    ("result-not-object", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "observation": {"results": [3]}}])),
     "atif.bad-observation", "step-1/result-0"),
    ("metrics-not-object", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "metrics": 4}])),
     "atif.bad-metrics", "step-1"),
    ("cached-over-prompt", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "",
                                                   "metrics": {"prompt_tokens": 1, "cached_tokens": 9}}])),
     "atif.cached-over-prompt", "step-1"),
    ("zero-calls-with-metrics", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "llm_call_count": 0,
                                                        "metrics": {"prompt_tokens": 1}}])),
     "atif.llm-call-count", "step-1"),
    ("total-steps-unexplained", json.dumps(_doc(final_metrics={"total_steps": 9})), "atif.total-steps", None),
    ("dangling-path", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "tool_calls": [
        {"tool_call_id": "d", "function_name": "t", "arguments": {}}], "observation": {"results": [
            {"source_call_id": "d", "subagent_trajectory_ref": [{"trajectory_path": "gone.json"}]}]}}])),
     "atif.subagent-missing", "step-1"),
    ("ref-not-object", json.dumps(_doc(steps=[{"step_id": 1, "source": "agent", "message": "", "observation": {"results": [
        {"content": "x", "subagent_trajectory_ref": ["str"]}]}}])), "atif.bad-subagent-ref", "step-1/result-0"),
    ("subagents-not-list", json.dumps(_doc(subagent_trajectories={"a": 1})), "atif.bad-subagent", None),
    ("subagent-no-id", json.dumps(_doc(subagent_trajectories=[{"agent": {"name": "a", "version": "1"}, "steps": []}])),
     "atif.bad-subagent", None),
    ("duplicate-trajectory-id", json.dumps(_doc(subagent_trajectories=[
        {"trajectory_id": "x", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "user", "message": "a"}]},
        {"trajectory_id": "x", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "user", "message": "b"}]}])),
     "atif.duplicate-trajectory-id", None),
    ("subagent-not-object", json.dumps(_doc(subagent_trajectories=[5])), "atif.bad-subagent", None),
]


@pytest.mark.parametrize("name,body,code,event_id", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_a_located_diagnostic(name, body, code, event_id, tmp_path):
    src = tmp_path / f"{name}.json"
    src.write_text(body)
    s = registry.read(src, format="atif")
    found = [d for x in s.walk() for d in x.diagnostics if d.code == code]
    assert found, [str(d) for d in s.diagnostics]
    assert any(d.event_id == event_id and d.file == str(src) for d in found), [str(d) for d in found]
    # every verb still works on it
    for verb in ("steps", "show"):
        p = subprocess.run([sys.executable, "-m", "trajkit", verb, "--format", "atif", str(src)], capture_output=True, text=True, cwd=REPO)
        assert p.returncode in (0, 1), (verb, p.stderr)
        assert "Traceback" not in p.stderr


def test_detection_claims_atif_files_only(tmp_path):
    (tmp_path / "other.json").write_text('{"schema_version": "2.0", "steps": []}')
    assert registry.detect(tmp_path / "other.json").format is None
    (tmp_path / "t.json").write_text(json.dumps(_doc()))
    det = registry.detect(tmp_path / "t.json")
    assert det.format.name == "atif" and det.match.root == tmp_path / "t.json"
