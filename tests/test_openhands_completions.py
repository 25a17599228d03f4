"""OpenHands LLM completion logs (format ``openhands-completions``, issue 10).

The corpus holds three real SDK logs (every call answers ``finish``); the
multi-step samples are the synthetic folders shipped as the format's
examples, written from shared/formats/openhands-completions.md §9. Expected
steps come from :func:`reference_steps`: plain ``json`` applying agent-eval's
``openhands_completions`` rule (§5) to the raw files, sharing no code with
the reader.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import CORPUS, run_cli
from trajkit import registry
from trajkit.export.convert import convert

FIXTURES = Path(registry.__file__).resolve().parent / "formats" / "fixtures" / "openhands-completions"
SAMPLES = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
PHASES = CORPUS / "openhands_completions" / "OpenHands+software-agent-sdk@d25a022a2" / ".pr" / "artifacts" / "20260121-223755"
CORPUS_DIRS = sorted(PHASES.glob("telemetry_phase_*"))


# ------------------------------------------------------------------ the reference rule, from the raw files

def _load_calls(folder: Path) -> list[dict]:
    calls = []
    for f in sorted(folder.iterdir()):
        if f.suffix != ".json":
            continue
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(d, dict) and ("messages" in d or "input" in d or "fncall_messages" in d):
            calls.append(d)
    # in-file timestamp first, then the name (never the float after the last "-")
    return sorted(calls, key=lambda d: d.get("timestamp", 0))


def _messages(d: dict) -> list[dict]:
    if isinstance(d.get("fncall_messages"), list):
        return d["fncall_messages"]
    if isinstance(d.get("messages"), list):
        return d["messages"]
    out = []
    for it in d.get("input") or []:  # Responses API: function_call items are the assistant's calls
        if it.get("type") == "function_call":
            out.append({"role": "assistant", "tool_calls": [{"id": it["call_id"], "function": {"name": it["name"], "arguments": it["arguments"]}}]})
        elif it.get("type") == "function_call_output":
            out.append({"role": "tool", "tool_call_id": it["call_id"], "content": it["output"]})
    return out


def _text(c) -> str:
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def reference_steps(folder: Path) -> list[dict]:
    """agent-eval's openhands_completions rule (openhands-completions.md §5)."""
    views = [_messages(d) for d in _load_calls(folder)]
    count = [sum(1 for m in v if m.get("role") == "assistant" for tc in m.get("tool_calls") or [] if tc["function"]["name"] != "finish") for v in views]
    if not views:
        return []
    view = views[count.index(max(count))]  # ties: the earliest
    results = {}
    for m in view:
        if m.get("role") == "tool":
            results.setdefault(m["tool_call_id"], _text(m.get("content")))
    out = []
    for m in view:
        calls = [tc for tc in m.get("tool_calls") or [] if tc["function"]["name"] != "finish"] if m.get("role") == "assistant" else []
        for i, tc in enumerate(calls):
            name, args = tc["function"]["name"], json.loads(tc["function"]["arguments"])
            if name == "execute_bash":
                action = args["command"]
            elif name == "execute_ipython_cell":
                action = args["code"]
            else:
                action = f"{name}({json.dumps(args, ensure_ascii=False)})"
            out.append({"action": action, "observation": results.get(tc["id"], ""),
                        "thinking": (_text(m.get("content")).strip() or None) if i == 0 else None})
    return out


def _steps(path: Path) -> dict:
    p = run_cli("steps", path, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("folder", SAMPLES + CORPUS_DIRS, ids=[p.name for p in SAMPLES + CORPUS_DIRS])
def test_steps_equal_the_reference_rule(folder):
    got = _steps(folder)
    assert got["format"] == "openhands-completions"
    want = reference_steps(folder)
    assert [{k: s.get(k) for k in ("action", "observation", "thinking")} for s in got["steps"]] == want
    if folder in SAMPLES:
        assert want, "every shipped sample has steps"


def test_the_corpus_logs_as_one_folder(tmp_path):
    """The three real logs are one conversation: read together they order by
    their in-file timestamps and give 0 steps (only finish calls), 3 calls."""
    d = tmp_path / "log_completions"
    d.mkdir()
    for p in CORPUS_DIRS:
        for f in p.iterdir():
            shutil.copy(f, d / f.name)
    s = registry.read(d)
    assert s.format == "openhands-completions" and s.steps == reference_steps(d) == []
    calls = [e for e in s.events if e.extra.get("call_file")]
    stamps = [json.loads((d / e.extra["call_file"]).read_text())["timestamp"] for e in calls]
    assert len(calls) == 3 and stamps == sorted(stamps)
    assert [c.name for e in calls for c in e.tool_calls] == ["finish"] * 3
    assert s.outcome.reached_end and s.outcome.claimed_success


def test_file_order_follows_the_timestamp_inside_not_the_hex_suffix():
    folder = FIXTURES / "sdk-telemetry"
    s = registry.read(folder)
    files = [e.extra["call_file"] for e in s.events if e.extra.get("call_file")]
    stamps = [json.loads((folder / f).read_text())["timestamp"] for f in files]
    assert stamps == sorted(stamps)
    assert files != sorted(files), "the sample must hold names whose sort order is wrong"
    err = [e for e in s.events if e.kind == "error"]
    assert len(err) == 1 and err[0].extra["call_file"].endswith("-error.json") and "RateLimitError" in err[0].text
    assert any(d.code == "completions.call-error" and d.file.endswith("-error.json") for d in s.diagnostics)


def test_detection_v0_trial_keeps_winning(tmp_path, corpus):
    trial = next(p for p in (corpus / "openhands_v0" / "reconstructed_trials").iterdir() if p.is_dir())
    t = tmp_path / trial.name
    shutil.copytree(trial, t)
    inst = t / "llm_completions" / "django__django-11099"
    shutil.copytree(FIXTURES / "v0-instance", inst)
    assert registry.detect(t).format.name == "openhands-v0"
    for p in (inst, next(inst.glob("openai__*.json")), inst / "openhands_output.json"):
        det = registry.detect(p)
        assert det.format.name == "openhands-completions" and Path(det.match.root) == inst, p
    p = run_cli("ls", t / "llm_completions", "--json")
    rows = json.loads(p.stdout)
    assert [(r["format"], r["id"], r["calls"]) for r in rows] == [("openhands-completions", "django__django-11099", 6)]
    s = registry.read(inst)
    other = [f for f in s.files if f.path.endswith("openhands_output.json")]
    assert other and other[0].status == "unused"


def test_context_is_the_logged_messages_exactly():
    for folder in (FIXTURES / "v0-instance", FIXTURES / "sdk-responses"):
        entries = json.loads(run_cli("context", folder, "--json", check=True).stdout)
        raws = _load_calls(folder)
        want = [d["messages"] if "messages" in d else [{"role": "system", "content": d["instructions"]}] + d["input"] for d in raws]
        assert [e["messages"] for e in entries] == want
        assert [e["llm_response_id"] for e in entries] == [d["response"]["id"] for d in raws]
    text = run_cli("context", FIXTURES / "sdk-responses", check=True).stdout
    assert "function_call" in text  # Responses items print without a role


def test_usage_and_cost_per_call_in_exports(tmp_path):
    folder = FIXTURES / "sdk-responses"
    s = registry.read(folder)
    raws = _load_calls(folder)
    calls = [e for e in s.events if e.extra.get("call_file")]
    assert [(e.model_usage.input, e.model_usage.output, e.model_usage.cache_read, e.model_usage.reasoning, e.model_usage.cost) for e in calls] == [
        (d["usage_summary"]["prompt_tokens"], d["usage_summary"]["completion_tokens"], d["usage_summary"]["cache_read_tokens"],
         d["usage_summary"]["reasoning_tokens"], d["cost"]) for d in raws]
    assert [e.reasoning for e in calls] == [d["response"]["output"][0]["summary"][0]["text"] for d in raws]
    res = convert(s, "atif", tmp_path / "atif")
    assert res.problems == []
    doc = json.loads(res.outputs[0].read_text())
    metrics = [st["metrics"] for st in doc["steps"] if st.get("metrics")]
    assert [m.get("cost_usd") for m in metrics] == [d["cost"] for d in raws]
    assert sum(len(st.get("tool_calls") or []) for st in doc["steps"]) == sum(
        1 for d in raws for o in d["response"]["output"] if o["type"] == "function_call")  # finish included
    assert [st.get("reasoning_content") for st in doc["steps"] if st.get("metrics")] == [e.reasoning for e in calls]


def test_parallel_calls_and_every_tool_call_in_asf(tmp_path):
    folder = FIXTURES / "v0-instance"
    s = registry.read(folder)
    par = [st for st in s.steps if st.parallel_group is not None]
    assert len(par) == 2 and par[0].parallel_group == par[1].parallel_group
    res = convert(s, "asf", tmp_path)
    assert res.problems == [] and res.report["unaccounted"] == []
    lines = [json.loads(x) for x in res.outputs[0].read_text().splitlines()]
    ids = {(x.get("item") or {}).get("call_id") for x in lines if (x.get("item") or {}).get("type") == "function_call"}
    raw_ids = {tc["id"] for d in _load_calls(folder) for tc in (d["response"]["choices"][0]["message"].get("tool_calls") or [])}
    assert ids == raw_ids


def test_condensed_later_view_and_mock_function_calling():
    s = registry.read(FIXTURES / "v0-condensed")
    assert any(d.code == "completions.history-rewritten" for d in s.diagnostics)
    assert Path(s.metadata["view_path"]).name == sorted(p.name for p in (FIXTURES / "v0-condensed").iterdir())[2]
    m = registry.read(FIXTURES / "v0-mockfn")
    assert [st.action for st in m.steps] == ['python -c "import django; print(django.get_version())"']
    assert m.outcome.reached_end  # the structured fncall_response says finish


def test_model_calls_for_turns():
    fmt = registry.get_format("openhands-completions")
    s = registry.read(FIXTURES / "sdk-telemetry")
    calls = fmt.model_calls(s)
    raws = _load_calls(FIXTURES / "sdk-telemetry")
    assert len(calls) == len(raws)
    ok = [c for c, _, _ in calls if c.response is not None]
    assert [[tc.name for tc in c.tool_calls] for c in ok] == [
        [tc["function"]["name"] for tc in d["response"]["choices"][0]["message"]["tool_calls"]] for d in raws if "response" in d]
    assert all(c.tools and c.tools[0]["function"]["name"] == "terminal" for c, _, _ in calls)


# ------------------------------------------------------------------ bad input

def _copy(tmp_path: Path, name: str = "v0-instance") -> Path:
    d = tmp_path / name
    shutil.copytree(FIXTURES / name, d)
    return d


def _codes(s) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in s.diagnostics:
        out.setdefault(d.code, []).append(Path(d.file).name if d.file else "")
    return out


def test_truncated_and_wrong_typed_files(tmp_path):
    d = _copy(tmp_path)
    files = sorted(p for p in d.iterdir() if p.name.startswith("openai__"))
    files[-1].write_bytes(files[-1].read_bytes()[:300])  # cut off mid-write
    rec = json.loads(files[2].read_text())
    rec["kwargs"] = "not a dict"
    rec["response"] = None
    files[2].write_text(json.dumps(rec))
    rec = json.loads(files[3].read_text())
    rec["messages"] = {"oops": 1}
    files[3].write_text(json.dumps(rec))
    (d / "gpt-x-1730000099.0.json").write_text("[1, 2, 3]")
    s = registry.read(d)
    c = _codes(s)
    assert c["json.invalid"] == [files[-1].name]
    assert files[2].name in c["completions.bad-field"] and c["completions.no-response"] == [files[2].name]
    assert files[3].name in c["completions.bad-field"]
    assert c["completions.not-a-call"] == ["gpt-x-1730000099.0.json"]
    assert [(x.action, x.observation) for x in s.steps] == [(x["action"], x["observation"]) for x in reference_steps(d)]


def test_unanswered_calls_and_missing_timestamps(tmp_path):
    d = _copy(tmp_path)
    last = sorted(p for p in d.iterdir() if p.name.startswith("openai__"))[-1]
    rec = json.loads(last.read_text())
    rec["messages"] = [m for m in rec["messages"] if m.get("tool_call_id") != "toolu_02"]
    del rec["timestamp"]
    last.write_text(json.dumps(rec))
    s = registry.read(d)
    c = _codes(s)
    assert c["completions.unanswered-call"] == [last.name] and c["completions.no-timestamp"] == [last.name]
    assert s.metadata["actions_without_observation"] == ["toolu_02"]
    assert [x.observation for x in s.steps] == [x["observation"] for x in reference_steps(d)]


def test_captured_http_request_bodies_are_not_completion_logs(corpus):
    """The SDK corpus's stub captures (req-NNN.json: {"path", "body": {"messages", ...}}) are
    named like logs and hold messages, but are request bodies: not claimed, not listed."""
    reqs = corpus / "openhands_v1" / "generated" / "requests_run1"
    assert next(reqs.glob("req-*.json"))
    assert registry.detect(reqs).format is None
    assert registry.get_format("openhands-completions").find_sessions(reqs.parent) == []


def test_empty_or_foreign_folder(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.json").write_text('{"a": 1}')
    s = registry.read(tmp_path / "x", format="openhands-completions")
    assert "completions.no-calls" in _codes(s) and s.steps == []
    assert registry.detect(tmp_path / "x").format is None
