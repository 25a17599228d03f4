"""Training turns from rollout traces: exact ids, logprobs, masks and trained
flags; the anchor filter; every capture check; TRL / datasets outputs; the
``turns`` verb."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "rl"))
import tiny_tokenizer  # noqa: E402

from trajkit.registry import read  # noqa: E402
from trajkit.rl.tokenize import TokenizerError, load_tokenizer  # noqa: E402
from trajkit.rl.turns import derive_turns, write_turns  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
FIX = Path(__file__).parent / "fixtures" / "rl"

SYS = "You are a coding agent. Use the tools to solve the task."
TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a command",
                                          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
SCRIPT = [
    ("I will list the files first.", "bash", '{"command": "ls -la"}', "total 8\nhello.txt"),
    ("", "bash", '{"command": "cat hello.txt"}', "hello"),
    ("Done: hello.txt contains hello.", None, None, None),
]


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory) -> Path:
    return tiny_tokenizer.build(tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def tok(tokdir):
    return load_tokenizer(tokdir)


def lp(i: int, pos: int) -> float:
    return -round(0.01 * (((i * 7 + pos) % 50) + 1), 4)


def make_records(tok, prompt_ids: bool = False) -> tuple[list[dict], dict]:
    """A title call and three agent turns whose outputs are what the template
    renders (so each prompt extends the last), plus the expected turn values."""
    recs = []
    expect = {"prompt_ids": [], "output_ids": [], "logps": [], "trained": [], "tools": []}

    def record(turn, messages, tools, content, tcs, ids):
        entries = [{"token": f"token_id:{t}", "logprob": lp(t, k), "bytes": None, "top_logprobs": []} for k, t in enumerate(ids)]
        msg = {"role": "assistant", "content": content}
        if tcs:
            msg["tool_calls"] = tcs
        r = {
            "turn": turn,
            "request": {"model": "tiny", "messages": copy.deepcopy(messages), "stream": True, **({"tools": tools} if tools else {})},
            "response": {"id": f"c{turn}", "object": "chat.completion",
                         "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if tcs else "stop",
                                      "logprobs": {"content": entries}}],
                         "usage": {"prompt_tokens": 0, "completion_tokens": len(ids), "total_tokens": len(ids)}},
            "logprobs": entries,
            "completion_tokens": [e["token"] for e in entries],
            "completion_token_ids": [],
            "per_token_logps": [e["logprob"] for e in entries],
            "finish_reason": "tool_calls" if tcs else "stop",
            "latency_s": 0.1,
            "timestamp": 1795974306.0 + turn,
        }
        return r

    title_msgs = [{"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
                  {"role": "user", "content": "Generate a title for this conversation:\n"},
                  {"role": "user", "content": "Create hello.txt"}]
    ids = tok.encode("Hello file task<|im_end|>", add_special_tokens=False)
    recs.append(record(1, title_msgs, None, "Hello file task", [], ids))
    messages = [{"role": "system", "content": SYS}, {"role": "user", "content": "Create hello.txt"}]
    for k, (content, name, args, result) in enumerate(SCRIPT):
        tcs = [{"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": args}}] if name else []
        out = tok.encode(tiny_tokenizer.render_assistant(content, tcs), add_special_tokens=False)
        p = tok.apply_chat_template(messages, tools=TOOLS, add_generation_prompt=True, tokenize=True, return_dict=False)
        r = record(k + 2, messages, TOOLS, content, tcs, out)
        if prompt_ids:
            r["prompt_token_ids"] = p
        recs.append(r)
        expect["prompt_ids"].append(p)
        expect["output_ids"].append(out)
        expect["logps"].append([lp(t, i) for i, t in enumerate(out)])
        expect["trained"].append(bool(tcs))
        expect["tools"].append([name] if name else [])
        if tcs:
            messages.append({"role": "assistant", "content": content, "tool_calls": tcs})
            messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": result})
    return recs, expect


def write_rollout(path: Path, recs: list[dict], summary: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary))
    return path


def codes(result):
    return [d.code for d in result.diagnostics]


def test_clean_rollout_turns_are_exact(tok, tmp_path):
    recs, ex = make_records(tok)
    root = write_rollout(tmp_path / "r", recs, {"reward": 0.75})
    res = derive_turns(root, tok)
    assert [t.prompt_ids for t in res.turns] == ex["prompt_ids"]
    assert [t.output_ids for t in res.turns] == ex["output_ids"]
    assert [t.per_token_logps for t in res.turns] == ex["logps"]
    assert [t.trained for t in res.turns] == [True, True, False]
    assert [t.mask for t in res.turns] == [[0] * len(p) + [1] * len(o) for p, o in zip(ex["prompt_ids"], ex["output_ids"])]
    assert [t.prompt_source for t in res.turns] == ["retokenized"] * 3
    assert [[c.name for c in t.tool_calls] for t in res.turns] == ex["tools"]
    assert [t.extra["turn"] for t in res.turns] == [2, 3, 4]
    # each prompt extends the last prompt + output: no drift, no warnings
    assert codes(res) == ["turns.dropped"]
    assert res.dropped == [{"turn": 1, "event_id": "turn-1", "purpose": "title",
                            "reason": "title call (not the agent's system prompt and tools)"}]
    s = res.summary
    assert {k: s[k] for k in ("reward", "reward_source", "raw_turns", "kept_turns", "trained_turns", "dropped_turns",
                              "tool_calls", "tool_calls_by_tool", "drifted_turns", "prompt_sources")} == {
        "reward": 0.75, "reward_source": "summary.json:reward", "raw_turns": 4, "kept_turns": 3, "trained_turns": 2,
        "dropped_turns": 1, "tool_calls": 2, "tool_calls_by_tool": {"bash": 2}, "drifted_turns": 0,
        "prompt_sources": {"retokenized": 3},
    }
    assert s["output_tokens"] == sum(map(len, ex["output_ids"]))
    assert s["trained_output_tokens"] == len(ex["output_ids"][0]) + len(ex["output_ids"][1])
    assert res.tokenizer["chat_template_sha256"]

    # TRL rollout_func: one sample, prompt tails are context, the untrained output is masked
    rf = res.rollout_func()
    p0, p1, p2 = ex["prompt_ids"]
    o0, o1, o2 = ex["output_ids"]
    t1 = p1[len(p0) + len(o0):]
    t2 = p2[len(p1) + len(o1):]
    assert rf["prompt_ids"] == [p0]
    assert rf["completion_ids"] == [o0 + t1 + o1 + t2 + o2]
    assert rf["env_mask"] == [[1] * len(o0) + [0] * len(t1) + [1] * len(o1) + [0] * len(t2) + [0] * len(o2)]
    assert rf["logprobs"] == [ex["logps"][0] + [0.0] * len(t1) + ex["logps"][1] + [0.0] * (len(t2) + len(o2))]
    assert rf["env_reward"] == [0.75]
    seq = res.sequences()
    assert seq == [{"input_ids": p0 + rf["completion_ids"][0],
                    "completion_mask": [0] * len(p0) + rf["env_mask"][0],
                    "old_log_probs": [0.0] * len(p0) + rf["logprobs"][0]}]
    # reward given explicitly wins
    assert derive_turns(root, tok, reward=-0.1).summary["reward"] == -0.1


def test_bookkeeping_calls_are_dropped_and_reported(tok, tmp_path):
    recs, _ = make_records(tok)
    summ = copy.deepcopy(recs[2])
    summ["turn"] = 9
    summ["request"]["messages"][0]["content"] = "You are a helpful AI assistant tasked with summarizing conversations."
    err = copy.deepcopy(recs[3])
    err["turn"] = 10
    err["response"] = {"choices": [], "usage": None, "upstream_status": 500, "upstream_error": "boom"}
    err.update(logprobs=[], completion_tokens=[], per_token_logps=[], finish_reason=None)
    res = derive_turns(write_rollout(tmp_path / "r", recs + [summ, err]), tok)
    assert res.summary["kept_turns"] == 3
    assert {(d["turn"], d["purpose"]) for d in res.dropped} == {(1, "title"), (9, "summary"), (10, "agent")}
    assert next(d for d in res.dropped if d["turn"] == 10)["reason"] == "upstream error (status 500)"
    assert res.summary["dropped_by_purpose"] == {"title": 1, "summary": 1, "agent": 1}


def test_anchor_is_the_first_system_message_of_the_first_tool_call(tok, tmp_path):
    """opencode sends each system part as its own message; a plugin's second
    system message may change on every call. Only the first one anchors."""
    recs, ex = make_records(tok)
    for k, r in enumerate(recs[1:]):
        r["request"]["messages"].insert(1, {"role": "system", "content": f"plugin note {k}"})
    other = copy.deepcopy(recs[2])
    other["turn"] = 9
    other["request"]["messages"][0]["content"] = "You are a reviewer."  # a different first system message
    other["request"]["messages"][1]["content"] = "plugin note 0"  # even with a second one seen before
    res = derive_turns(write_rollout(tmp_path / "r", recs + [other]), tok)
    assert [t.extra["turn"] for t in res.turns] == [2, 3, 4]
    assert [t.output_ids for t in res.turns] == ex["output_ids"]
    assert {(d["turn"], d["purpose"]) for d in res.dropped} == {(1, "title"), (9, "other")}
    assert read(tmp_path / "r").metadata["anchor_system_prompt"] == SYS


def test_usage_mismatch(tok, tmp_path):
    recs, ex = make_records(tok)
    recs[1]["response"]["usage"]["completion_tokens"] += 2
    res = derive_turns(write_rollout(tmp_path / "r", recs), tok)
    d = [d for d in res.diagnostics if d.code == "turns.usage-mismatch"]
    assert len(d) == 1 and d[0].event_id == "turn-2" and "+2" in d[0].message
    assert res.turns[0].output_ids == ex["output_ids"][0]


def test_missing_logprobs(tok, tmp_path):
    recs, ex = make_records(tok)
    recs[1]["logprobs"][3]["logprob"] = None
    recs[2]["logprobs"] = []
    recs[2]["response"]["choices"][0].pop("logprobs")
    recs[2]["per_token_logps"] = []
    res = derive_turns(write_rollout(tmp_path / "r", recs), tok)
    d = [d for d in res.diagnostics if d.code == "turns.missing-logprobs"]
    assert [x.event_id for x in d] == ["turn-2", "turn-3"]
    assert res.turns[0].per_token_logps[3] is None
    assert res.turns[0].per_token_logps[:3] == ex["logps"][0][:3]
    assert res.turns[1].per_token_logps == [None] * len(ex["output_ids"][1])
    # untrainable positions are masked out of the TRL view
    rf = res.rollout_func()
    o0 = ex["output_ids"][0]
    assert rf["env_mask"][0][:len(o0)] == [1, 1, 1, 0] + [1] * (len(o0) - 4)


def test_prompt_drift_reported_and_forked(tok, tmp_path):
    recs, ex = make_records(tok)
    # opencode prunes an old tool output before the last call
    recs[3]["request"]["messages"][3]["content"] = "[Old tool result content cleared]"
    res = derive_turns(write_rollout(tmp_path / "r", recs), tok)
    d = [d for d in res.diagnostics if d.code == "turns.prompt-drift"]
    assert len(d) == 1 and d[0].event_id == "turn-4"
    drift = res.turns[2].extra["drift"]
    expect = ex["prompt_ids"][1] + ex["output_ids"][1]
    assert drift["expected_prefix"] == len(expect)
    assert res.turns[2].prompt_ids[: drift["common_prefix"]] == expect[: drift["common_prefix"]]
    assert res.turns[2].prompt_ids[drift["common_prefix"]] != expect[drift["common_prefix"]]
    assert res.summary["drifted_turns"] == 1
    rf = res.rollout_func()
    # the drifted last turn starts a new sample, which has no trained token and is dropped
    assert len(rf["prompt_ids"]) == 1 and rf["prompt_ids"][0] == ex["prompt_ids"][0]
    # the session view says what happened to the history
    s = read(tmp_path / "r")
    assert "rollout.history-rewritten" in [x.code for x in s.diagnostics]


def test_tool_call_tokens_missing(tok, tmp_path):
    recs, _ = make_records(tok)
    open_id = tok.convert_tokens_to_ids("<tool_call>")
    keep = [i for i, e in enumerate(recs[1]["logprobs"]) if e["token"] != f"token_id:{open_id}"]
    recs[1]["logprobs"] = [recs[1]["logprobs"][i] for i in keep]
    recs[1]["completion_tokens"] = [recs[1]["completion_tokens"][i] for i in keep]
    recs[1]["per_token_logps"] = [recs[1]["per_token_logps"][i] for i in keep]
    recs[1]["response"]["choices"][0]["logprobs"]["content"] = recs[1]["logprobs"]
    res = derive_turns(write_rollout(tmp_path / "r", recs), tok)
    c = codes(res)
    assert "turns.tool-call-tokens-missing" in c
    assert "turns.usage-mismatch" in c  # usage still counts the lost token
    d = next(d for d in res.diagnostics if d.code == "turns.tool-call-tokens-missing")
    assert d.event_id == "turn-2" and "<tool_call>" in d.message and "</tool_call>" not in d.message


def test_captured_prompt_ids_are_used(tok, tmp_path):
    recs, ex = make_records(tok, prompt_ids=True)
    root = write_rollout(tmp_path / "r", recs)
    res = derive_turns(root, tok)
    assert [t.prompt_source for t in res.turns] == ["captured"] * 3
    assert [t.prompt_ids for t in res.turns] == ex["prompt_ids"]
    assert "turns.retokenize-mismatch" not in codes(res)
    # no tokenizer needed when every prompt was captured
    res2 = derive_turns(root, None)
    assert [t.prompt_ids for t in res2.turns] == ex["prompt_ids"]
    # captured ids that differ from the template's render are reported, captured ones kept
    recs[2]["prompt_token_ids"] = recs[2]["prompt_token_ids"][:-1] + [0]
    res3 = derive_turns(write_rollout(tmp_path / "r2", recs), tok)
    assert res3.turns[1].prompt_ids == recs[2]["prompt_token_ids"]
    assert "turns.retokenize-mismatch" in codes(res3)


def test_no_tokenizer_when_one_is_needed(tmp_path, cli, corpus):
    with pytest.raises(TokenizerError):
        derive_turns(corpus / "opencode" / "proxy_trace_synthetic.jsonl", None)
    r = cli("turns", corpus / "opencode" / "proxy_trace_synthetic.jsonl")
    assert r.returncode == 2 and "tokenizer is needed" in r.stderr
    r = cli("turns", corpus / "opencode" / "proxy_trace_synthetic.jsonl", "--tokenizer", tmp_path)
    assert r.returncode == 2 and "cannot load a tokenizer" in r.stderr
    r = cli("turns", FIX / "edge" / "cut", "--tokenizer", tmp_path / "missing")
    assert r.returncode == 2


def test_template_error_drops_the_turn(tok, tmp_path):
    recs, _ = make_records(tok)
    recs[2]["request"]["messages"][1]["content"] = None  # the template concatenates strings
    res = derive_turns(write_rollout(tmp_path / "r", recs), tok)
    assert "turns.template-error" in codes(res)
    assert {"turn": 3, "event_id": "turn-3", "purpose": "agent", "reason": "prompt could not be rendered"} in res.dropped


def test_wrong_tokenizer_is_reported(tok, corpus):
    res = derive_turns(corpus / "opencode" / "proxy_trace_synthetic.jsonl", tok)
    assert "turns.ids-out-of-vocab" in codes(res)
    assert res.summary["kept_turns"] == 2 and res.summary["trained_turns"] == 1
    assert res.summary["tool_calls_by_tool"] == {"bash": 1}
    assert res.turns[0].output_ids[:3] == [1329, 1347, 1428]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_rows_load_with_datasets(tok, tmp_path, suffix):
    datasets = pytest.importorskip("datasets")
    recs, ex = make_records(tok)
    res = derive_turns(write_rollout(tmp_path / "r", recs, {"reward": 1}), tok)
    out = write_turns(res, tmp_path / f"turns{suffix}")
    kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}[suffix]
    ds = datasets.load_dataset(kind, data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 3
    assert ds["prompt_ids"] == ex["prompt_ids"]
    assert ds["output_ids"] == ex["output_ids"]
    assert ds["trained"] == [True, True, False]
    assert ds["reward"] == [1.0, 1.0, 1.0]
    assert [len(m) for m in ds["mask"]] == [len(p) + len(o) for p, o in zip(ex["prompt_ids"], ex["output_ids"])]
    assert ds["per_token_logps"][0] == pytest.approx(ex["logps"][0])
    assert ds["tool_calls"][0][0]["name"] == "bash"
    assert json.loads(ds["tool_calls"][0][0]["arguments"]) == {"command": "ls -la"}


def test_turns_cli(cli, tokdir, tmp_path, corpus):
    trace = corpus / "opencode" / "proxy_trace_synthetic.jsonl"
    out = tmp_path / "turns.jsonl"
    r = cli("turns", trace, "--tokenizer", tokdir, "--out", out, "--summary", tmp_path / "summary.json",
            "--trl", tmp_path / "trl.json", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["raw_turns"] == 3 and doc["summary"]["kept_turns"] == 2 and doc["summary"]["trained_turns"] == 1
    assert doc["dropped"][0]["purpose"] == "title"
    assert doc["written"]["turns"] == str(out)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [len(r["output_ids"]) for r in rows] == [31, 12]
    assert rows[0]["per_token_logps"] == [-0.1] * 31
    assert json.loads((tmp_path / "summary.json").read_text()) == doc["summary"]
    trl = json.loads((tmp_path / "trl.json").read_text())
    assert set(trl) == {"prompt_ids", "completion_ids", "logprobs", "env_mask"}
    # --strict: the corpus trace's fake ids trip the checks
    r = cli("turns", trace, "--tokenizer", tokdir, "--strict")
    assert r.returncode == 1
    assert "turns.ids-out-of-vocab" in r.stderr
    # human output
    r = cli("turns", FIX / "rollout_dir", "--tokenizer", tokdir)
    assert r.returncode == 0, r.stderr
    assert "kept 2" in r.stdout and "reward 1.0" in r.stdout
    # unknown output type
    r = cli("turns", trace, "--tokenizer", tokdir, "--out", tmp_path / "turns.csv")
    assert r.returncode == 2 and "unknown output type" in r.stderr
    # not a rollout
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("turns", empty, "--tokenizer", tokdir)
    assert r.returncode == 2 and "no captured model calls" in r.stderr


BLOCK_EXTRAS = (
    "import sys\n"
    "for m in ('transformers', 'tokenizers', 'jinja2', 'aiohttp', 'pyarrow', 'datasets'):\n"
    "    sys.modules[m] = None  # importing them now raises ImportError, as on a core install\n"
)


def _core_only(code: str, *args: str):
    import subprocess

    return subprocess.run([sys.executable, "-c", BLOCK_EXTRAS + code, *args], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)


def test_core_install_reads_and_derives_captured_turns(tok, tmp_path):
    """Without the rl / proxy extras: rollouts read, captured turns derive,
    and the verbs that need an extra say which one."""
    recs, ex = make_records(tok, prompt_ids=True)
    root = write_rollout(tmp_path / "r", recs)
    r = _core_only(
        "import json, sys\n"
        "from trajkit.registry import read\n"
        "from trajkit.rl.turns import derive_turns, write_turns\n"
        "s = read(sys.argv[1])\n"
        "res = derive_turns(s, None)\n"
        "write_turns(res, sys.argv[1] + '/turns.jsonl')\n"
        "print(json.dumps([len(s.steps), [t.prompt_ids for t in res.turns], res.summary['trained_turns']]))\n",
        str(root),
    )
    assert r.returncode == 0, r.stderr
    steps, prompts, trained = json.loads(r.stdout)
    assert steps == 2 and prompts == ex["prompt_ids"] and trained == 2
    r = _core_only("from trajkit.cli.app import main; main()", "turns", str(FIX / "rollout_dir"), "--tokenizer", str(FIX / "rollout_dir"))
    assert r.returncode == 2 and "rl extra" in r.stderr
    r = _core_only("from trajkit.cli.app import main; main()", "proxy", "--upstream", "http://127.0.0.1:1", "--out", str(tmp_path / "p"))
    assert r.returncode == 2 and "proxy extra" in r.stderr


def test_turns_cli_several_rollouts(cli, tok, tokdir, tmp_path):
    """A GRPO group: several rollouts into one --out and one --trl batch."""
    recs, ex = make_records(tok)
    a = write_rollout(tmp_path / "a", recs, {"reward": 1.0})
    b = write_rollout(tmp_path / "b", recs[:3], {"reward": 0.0})
    out = tmp_path / "group.parquet"
    r = cli("turns", a, b, "--tokenizer", tokdir, "--out", out, "--trl", tmp_path / "trl.json",
            "--summary", tmp_path / "summary.json", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [d["summary"]["kept_turns"] for d in doc["rollouts"]] == [3, 2]
    assert doc["skipped"] == []
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(out).to_pylist()
    assert [(Path(row["rollout"]).name, row["index"]) for row in table] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]
    assert [row["reward"] for row in table] == [1.0, 1.0, 1.0, 0.0, 0.0]
    trl = json.loads((tmp_path / "trl.json").read_text())
    assert trl["prompt_ids"] == [ex["prompt_ids"][0], ex["prompt_ids"][0]]
    assert trl["env_reward"] == [1.0, 0.0]
    assert [s["reward"] for s in json.loads((tmp_path / "summary.json").read_text())] == [1.0, 0.0]
    # a directory with no calls among them: reported, the rest still derived, exit 1
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("turns", a, empty, "--tokenizer", tokdir, "--json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["skipped"] == [str(empty)] and len(doc["rollouts"]) == 1
    assert "no captured model calls" in r.stderr


def test_unalignable_logprobs_are_kept_aside(tok, tmp_path):
    """per_token_logps skips null logprobs: without per-token entries they cannot be placed."""
    recs, ex = make_records(tok)
    r = recs[1]
    r["completion_token_ids"] = list(ex["output_ids"][0])
    r["logprobs"] = []
    r["completion_tokens"] = []
    r["response"]["choices"][0].pop("logprobs")
    r["per_token_logps"] = r["per_token_logps"][:-2]
    res = derive_turns(write_rollout(tmp_path / "r", recs), tok)
    t = res.turns[0]
    assert t.output_ids == ex["output_ids"][0]
    assert t.per_token_logps == [None] * len(t.output_ids)
    assert t.extra["unaligned_logps"] == ex["logps"][0][:-2]
    d = next(d for d in res.diagnostics if d.code == "turns.missing-logprobs")
    assert d.event_id == "turn-2" and "align" in d.message
