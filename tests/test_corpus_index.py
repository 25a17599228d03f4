"""`trajkit index`: tables from the shared corpus checked against the raw
files, NULL for unknowns, portable paths and stable ids, incremental
re-indexing, resuming after `kill -9`, the writer lock, status and compact.

Expected values come from the raw files by their own route (EXPECTED.json
written by a separate script for the reconstructed V0 trials, event files
counted for SDK conversations, the flat export's JSON list), never from
trajkit's reader.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import REPO, run_cli
from trajkit.corpus.index import MANIFESTS, live, load_manifests, live_files
from trajkit.corpus.tables import TABLES


def table(out: Path, name: str) -> list[dict]:
    rows: list[dict] = []
    for f in live_files(out)[name]:
        rows.extend(pq.read_table(f).to_pylist())
    return rows


@pytest.fixture(scope="module")
def corpus_index(tmp_path_factory, corpus) -> Path:
    out = tmp_path_factory.mktemp("idx") / "corpus-index"
    p = run_cli("index", corpus, "--out", out, "--json", "-j", "2", "--batch-size", "4", check=True)
    doc = json.loads(p.stdout)
    assert doc["found"] == doc["indexed"] and doc["found"] > 0
    return out


def test_runs_match_the_raw_files(corpus_index, corpus):
    runs = {r["source"]: r for r in table(corpus_index, "runs")}
    # V0 trials: the step count and task a separate script wrote into EXPECTED.json
    trials = sorted((corpus / "openhands_v0" / "reconstructed_trials").glob("*/EXPECTED.json"))
    assert trials
    for exp_path in trials:
        exp = json.loads(exp_path.read_text())
        row = runs[f"corpus/openhands_v0/reconstructed_trials/{exp_path.parent.name}"]
        assert row["steps"] == exp["expected_step_count"]
        assert row["task"] == exp["expected_task_text"]
        assert row["format"] == "openhands-v0" and row["read_ok"] is True
    # SDK conversations without sub-agents: one event per events/event-*.json file
    for conv in sorted((corpus / "openhands_v1" / "sdk_pr_artifacts").glob("*/*")):
        row = runs[f"corpus/openhands_v1/sdk_pr_artifacts/{conv.parent.name}/{conv.name}"]
        assert row["events"] == len(list((conv / "events").glob("event-*.json")))
        base = json.loads((conv / "base_state.json").read_text())
        assert row["session_id"].replace("-", "") == base["id"].replace("-", "")
    # flat exports: one event per element of the JSON list
    for f in sorted((corpus / "openhands_v0" / "flat_exports").glob("*.json")):
        assert runs[f"corpus/openhands_v0/flat_exports/{f.name}"]["events"] == len(json.loads(f.read_text()))


def test_steps_and_tool_call_tables_agree_with_runs(corpus_index):
    runs = table(corpus_index, "runs")
    steps = table(corpus_index, "steps")
    calls = table(corpus_index, "tool_calls")
    sessions = table(corpus_index, "sessions")
    for r in runs:
        top = [s for s in steps if s["run_id"] == r["run_id"] and s["session_key"] == "0"]
        assert len(top) == r["steps"]
        assert len([s for s in steps if s["run_id"] == r["run_id"]]) == r["steps_total"]
        assert len([c for c in calls if c["run_id"] == r["run_id"]]) == r["tool_calls"]
        assert len([s for s in sessions if s["run_id"] == r["run_id"]]) == r["sessions"]
    # the sub-agent tree: every sub-session hangs under its parent's key, one level deeper
    sub = [s for s in sessions if s["parent_key"] is not None]
    assert sub and all(s["session_key"].rsplit(".", 1)[0] == s["parent_key"] and s["depth"] == s["session_key"].count(".")
                       for s in sub)
    assert any(s["depth"] == 1 for s in sub)


def test_unknown_values_are_null_not_zero(corpus_index):
    runs = {r["source"]: r for r in table(corpus_index, "runs")}
    # the certifier fixtures record no model call: no usage, so token sums are NULL; a flat export has no cost
    fin = runs["corpus/openhands_v1/certifier_fixtures/conversations/finished"]
    assert fin["model_calls"] == 0 and fin["input_tokens"] is None and fin["output_tokens"] is None
    flat = runs["corpus/openhands_v0/flat_exports/basic.json"]
    assert flat["cost_usd"] is None and flat["input_tokens"] is None
    # a run with no answered tool call has no error count at all
    for r in runs.values():
        if r["tool_calls"] == 0:
            assert r["tool_errors"] is None
    # a rollout trace records no end signal: the outcome columns are NULL
    trace = runs["corpus/opencode"]
    assert trace["reached_end"] is None and trace["claimed_success"] is None


def test_paths_are_relative_and_ids_stable(corpus_index, corpus, tmp_path):
    runs = table(corpus_index, "runs")
    for r in runs:
        assert r["run_id"] == hashlib.sha256(r["source"].encode()).hexdigest()[:32]
        assert not os.path.isabs(r["path"]) and r["source"] == f"corpus/{r['path']}"
    for name, col in (("steps", "action_file"), ("diagnostics", "file")):
        for row in table(corpus_index, name):
            v = row[col]
            assert v is None or not v.startswith(str(corpus)), (name, v)
    # a copy of part of the corpus elsewhere, under a ROOT of the same name, gives the same ids
    copy = tmp_path / "elsewhere" / "corpus" / "openhands_v1"
    shutil.copytree(corpus / "openhands_v1" / "sdk_pr_artifacts", copy / "sdk_pr_artifacts")
    out = tmp_path / "idx2"
    run_cli("index", tmp_path / "elsewhere" / "corpus", "--out", out, "--engine", "serial", "-q", check=True)
    ids = {r["source"]: r["run_id"] for r in table(out, "runs")}
    orig = {r["source"]: r["run_id"] for r in runs}
    assert ids and all(orig[s] == i for s, i in ids.items())


def _small_corpus(corpus: Path, dest: Path, copies: int = 1) -> Path:
    root = dest / "runs"
    for i in range(copies):
        for conv in sorted((corpus / "openhands_v1" / "sdk_pr_artifacts").glob("*/*")):
            shutil.copytree(conv, root / f"c{i}" / "sdk" / conv.name)
        for f in sorted((corpus / "openhands_v0" / "flat_exports").glob("*.json")):
            (root / f"c{i}" / "flat").mkdir(parents=True, exist_ok=True)
            shutil.copy(f, root / f"c{i}" / "flat" / f.name)
    return root


def test_reindex_skips_unchanged_and_rereads_changed(corpus, tmp_path):
    root = _small_corpus(corpus, tmp_path, copies=2)
    out = tmp_path / "idx"
    first = json.loads(run_cli("index", root, "--out", out, "--json", "--batch-size", "3", "-j", "2", check=True).stdout)
    assert first["found"] == 14 and first["indexed"] == 14
    again = json.loads(run_cli("index", root, "--out", out, "--json", check=True).stdout)
    assert again["skipped_unchanged"] == 14 and again["indexed"] == 0 and again["batches"] == 0
    # change one run: its batch is superseded, its batch-mates read again; no duplicate row
    f = root / "c1" / "flat" / "basic.json"
    f.write_text(f.read_text() + "\n")
    third = json.loads(run_cli("index", root, "--out", out, "--json", "--batch-size", "3", check=True).stdout)
    assert third["superseded_batches"] == 1 and 1 <= third["indexed"] <= 3
    runs = table(out, "runs")
    assert len(runs) == 14 and len({r["run_id"] for r in runs}) == 14
    assert next(r for r in runs if r["source"] == "runs/c1/flat/basic.json")["size_bytes"] == f.stat().st_size
    # a run that vanishes leaves the index
    shutil.rmtree(root / "c0" / "sdk")
    json.loads(run_cli("index", root, "--out", out, "--json", check=True).stdout)
    assert len(table(out, "runs")) == 11
    # other options: everything is read again
    opt = json.loads(run_cli("index", root, "--out", out, "--json", "--max-file-bytes", "100000000", check=True).stdout)
    assert opt["reset"] is True and opt["indexed"] == 11 and len(table(out, "runs")) == 11
    st = json.loads(run_cli("index", "status", out, "--json", check=True).stdout)
    assert st["runs"] == 11 and st["rows"]["runs"] == 11 and st["stray_files"] == 0


def test_kill_9_then_resume_without_duplicates(corpus, tmp_path):
    root = _small_corpus(corpus, tmp_path, copies=40)  # 280 runs
    out = tmp_path / "idx"
    cmd = [sys.executable, "-m", "trajkit", "index", str(root), "--out", str(out), "--engine", "serial", "--batch-size", "5", "-q"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        if (out / MANIFESTS).is_dir() and len([n for n in os.listdir(out / MANIFESTS) if n.endswith(".json") and not n.startswith(".")]) >= 4:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    committed, _ = load_manifests(out)
    assert 4 <= len(committed) < 56, "the kill should land mid-index"
    before = {m["batch"] for m in committed}
    st = json.loads(run_cli("index", "status", out, "--json", check=True).stdout)
    assert st["runs"] == sum(len(m["units"]) for m in committed) < 280
    res = json.loads(run_cli("index", root, "--out", out, "--json", "--batch-size", "5", check=True).stdout)
    assert res["skipped_unchanged"] == st["runs"] and res["indexed"] == 280 - st["runs"]
    after, _ = load_manifests(out)
    assert before <= {m["batch"] for m in live(after)}, "committed batches were redone"
    runs = table(out, "runs")
    assert len(runs) == 280 and len({r["run_id"] for r in runs}) == 280
    for name in TABLES:
        rows = table(out, name)
        keyed = [json.dumps(r, sort_keys=True, default=str) for r in rows]
        assert len(keyed) == len(set(keyed)) or name in ("diagnostics",), name


def test_one_writer_at_a_time(corpus, tmp_path):
    root = _small_corpus(corpus, tmp_path)
    out = tmp_path / "idx"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from trajkit.corpus.index import WriterLock\n"
         f"with WriterLock(Path({str(out)!r})):\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        p = run_cli("index", root, "--out", out)
        assert p.returncode == 2 and "another trajkit index is writing it" in p.stderr
        assert f"pid {holder.pid}" in p.stderr
        st = json.loads(run_cli("index", "status", out, "--json").stdout or "{}") if (out / MANIFESTS).exists() else None
        assert st is None or st["writer_active"]
    finally:
        holder.kill()
        holder.wait()
    run_cli("index", root, "--out", out, "-q", check=True)  # the kernel released the dead holder's lock


def test_compact_keeps_every_row(corpus, tmp_path):
    root = _small_corpus(corpus, tmp_path, copies=3)
    out = tmp_path / "idx"
    run_cli("index", root, "--out", out, "--batch-size", "2", "--engine", "serial", "-q", check=True)
    before = {t: sorted(json.dumps(r, sort_keys=True, default=str) for r in table(out, t)) for t in TABLES}
    n = len(live(load_manifests(out)[0]))
    assert n > 5
    doc = json.loads(run_cli("index", "compact", out, "--json", check=True).stdout)
    assert doc["batches_before"] == n and doc["batches_after"] == 1
    after = {t: sorted(json.dumps(r, sort_keys=True, default=str) for r in table(out, t)) for t in TABLES}
    assert after == before
    assert all(len(os.listdir(out / t)) == 1 for t in ("runs", "steps", "sessions"))
    again = json.loads(run_cli("index", root, "--out", out, "--json", check=True).stdout)
    assert again["skipped_unchanged"] == 21 and again["indexed"] == 0


def test_bad_runs_become_diagnostics_rows(corpus, tmp_path):
    root = _small_corpus(corpus, tmp_path)
    bad = root / "c0" / "flat" / "basic.json"
    bad.write_bytes(bad.read_bytes()[:700])  # a truncated flat export
    out = tmp_path / "idx"
    p = run_cli("index", root, "--out", out, "--json", check=True)
    assert json.loads(p.stdout)["indexed"] == 7
    row = next(r for r in table(out, "runs") if r["source"] == "runs/c0/flat/basic.json")
    diags = [d for d in table(out, "diagnostics") if d["run_id"] == row["run_id"]]
    assert diags and row["diagnostics"] == len(diags)
    assert any(d["severity"] == "error" for d in diags) and all(d["file"] in (None, "basic.json") for d in diags)


def test_a_run_no_format_reads_is_a_row_not_a_failure(tmp_path):
    from trajkit.corpus.tasks import IndexOptions, IndexTask, Unit

    u = Unit(path=str(tmp_path / "gone"), source="x/gone", root=str(tmp_path), rel="gone", size=0, mtime=0.0)
    got = IndexTask(IndexOptions())(u)
    assert got.unreadable == 1 and got.rows["runs"][0]["read_ok"] is False
    assert got.rows["diagnostics"][0]["code"] == "index.run-unreadable"


def test_progress_goes_to_stderr_with_rate_and_eta(corpus, tmp_path):
    """On a terminal the bar is drawn on stderr (rate and ETA), stdout stays
    the JSON summary; --quiet draws nothing."""
    import pty

    root = _small_corpus(corpus, tmp_path, copies=4)
    for quiet in (False, True):
        out = tmp_path / f"idx{quiet}"
        master, slave = pty.openpty()
        args = [sys.executable, "-m", "trajkit", "index", str(root), "--out", str(out), "--json", "--engine", "serial",
                "--batch-size", "2"] + (["-q"] if quiet else [])
        env = dict(os.environ, COLUMNS="160", TERM="xterm")
        proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        stdout = proc.stdout.read()
        proc.wait()
        os.close(master)
        assert proc.returncode == 0
        assert json.loads(stdout)["indexed"] == 28
        text = err.decode("utf-8", "replace")
        if quiet:
            assert "runs/s" not in text and "ETA" not in text
        else:
            assert "runs/s" in text and "ETA" in text and "indexing" in text


def test_docs_document_every_table_and_column():
    doc = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    for t, cols in TABLES.items():
        section = doc.split(f"### `{t}`", 1)
        assert len(section) == 2, t
        body = section[1].split("\n### ", 1)[0]
        for name, _, _ in cols:
            assert f"| `{name}` |" in body, (t, name)


def test_every_member_of_a_container_is_a_run(tmp_path):
    """A file holding many sessions (a format declaring ``members``) is one
    run per session, addressed ``PATH#ID``; re-indexing skips them all."""
    from test_members import NAME, _members, _read, _sniff

    from trajkit import registry
    from trajkit.corpus.index import build

    saved = list(registry.formats())
    registry.register(registry.Format(name=NAME, description="test container", fingerprints=("*.box.jsonl",), priority=999,
                                      sniff=_sniff, read=_read, members=_members))
    try:
        root = tmp_path / "evals"
        root.mkdir()
        rows = [{"id": "django__django-1", "steps": ["ls", "cat a.py"]}, {"id": "sympy#3", "steps": ["a", "b", "c"]}]
        (root / "eval.box.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        out = tmp_path / "idx"
        res = build([str(root)], out, engine="serial")
        assert res.found == 2 and res.runs_read == 2
        runs = {r["source"]: r for r in table(out, "runs")}
        assert {s: r["steps"] for s, r in runs.items()} == {f"evals/eval.box.jsonl#{r['id']}": len(r["steps"]) for r in rows}
        again = build([str(root)], out, engine="serial")
        assert again.skipped == 2 and again.indexed == 0
    finally:
        registry.formats()[:] = saved


def test_turns_table_matches_the_turns_verb(tmp_path):
    """--turns: one row per kept turn, as `trajkit turns` derives them."""
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "rl"))
    import tiny_tokenizer

    tok = tiny_tokenizer.build(tmp_path / "tok")
    root = tmp_path / "rollouts"
    shutil.copytree(REPO / "tests" / "fixtures" / "rl" / "rollout_dir", root / "r1")
    out = tmp_path / "idx"
    run_cli("index", root, "--out", out, "--turns", "--tokenizer", tok, "--engine", "serial", "-q", check=True)
    got = sorted((t["turn"], t["prompt_tokens"], t["output_tokens"], t["trained"]) for t in table(out, "turns"))
    doc = json.loads(run_cli("turns", root / "r1", "--tokenizer", tok, "--json", check=True).stdout)
    want = sorted((t["index"], len(t["prompt_ids"]), len(t["output_ids"]), t["trained"]) for t in doc["turns"])
    assert got == want and got
    st = json.loads(run_cli("index", "status", out, "--json", check=True).stdout)
    assert st["rows"]["turns"] == len(want)


def test_a_new_trajkit_version_reads_everything_again(corpus, tmp_path, monkeypatch):
    import trajkit
    from trajkit.corpus.index import build

    root = _small_corpus(corpus, tmp_path)
    out = tmp_path / "idx"
    assert build([str(root)], out, engine="serial").indexed == 7
    assert build([str(root)], out, engine="serial").skipped == 7
    monkeypatch.setattr(trajkit, "__version__", "99.0.0")
    again = build([str(root)], out, engine="serial")
    assert again.reset and again.indexed == 7
    runs = table(out, "runs")
    assert len(runs) == 7 and {r["trajkit_version"] for r in runs} == {"99.0.0"}


def test_arrow_tables_hold_every_value_kind_without_pandas():
    """The writer's Arrow tables keep NULL, ints, floats (an int widened),
    bools, text and lists of text as given, write a lone surrogate as its
    escape, refuse a value of the wrong type, and never import pandas (the
    pyarrow list constructors do, wherever pandas is installed)."""
    code = r"""
import json, sys
from trajkit.corpus.tables import arrow_table
rows = [
    {"run_id": "a", "source": "r/a", "read_ok": True, "steps": 3, "cost_usd": 2, "duration_s": 1.5, "models": ["m1", "m2"],
     "task": "Fix it \ud83d please"},
    {"run_id": "b", "read_ok": False, "steps": None, "cost_usd": None, "models": [], "task": "caf\u00e9"},
    {"run_id": "c", "read_ok": None, "steps": -(2 ** 63), "cost_usd": 0.1, "models": None},
]
got = arrow_table("runs", rows).to_pylist()
bad = []
for col, v in (("steps", "3"), ("read_ok", 1), ("task", 5), ("models", "m1"), ("cost_usd", True), ("steps", 2 ** 64)):
    try:
        arrow_table("runs", [{col: v}])
        bad.append(col)
    except TypeError:
        pass
print(json.dumps({"got": [{k: r[k] for k in ("run_id", "source", "read_ok", "steps", "cost_usd", "duration_s", "models", "task")} for r in got],
                  "accepted_bad": bad, "pandas": "pandas" in sys.modules}))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    doc = json.loads(p.stdout)
    assert doc["got"] == [
        {"run_id": "a", "source": "r/a", "read_ok": True, "steps": 3, "cost_usd": 2.0, "duration_s": 1.5,
         "models": ["m1", "m2"], "task": "Fix it \\ud83d please"},
        {"run_id": "b", "source": None, "read_ok": False, "steps": None, "cost_usd": None, "duration_s": None,
         "models": [], "task": "caf\u00e9"},
        {"run_id": "c", "source": None, "read_ok": None, "steps": -(2 ** 63), "cost_usd": 0.1, "duration_s": None,
         "models": None, "task": None},
    ]
    assert doc["accepted_bad"] == [] and doc["pandas"] is False


def test_a_lone_surrogate_is_indexed_as_its_escape(tmp_path):
    """A run whose text holds a lone surrogate (a cut emoji) is indexed, the
    surrogate written as its escape (UTF-8 cannot hold it), as trajkit's
    other outputs write it."""
    src = REPO / "tests" / "fixtures" / "export" / "v0_edge_cases.json"
    raw = json.loads(src.read_text(encoding="utf-8"))
    want = raw[0]["args"]["content"]
    assert "\ud83d" in want
    out = tmp_path / "idx"
    p = run_cli("index", src, "--out", out, "--json", "--engine", "serial", check=True)
    assert json.loads(p.stdout)["indexed"] == 1
    (row,) = table(out, "runs")
    assert row["task"] == want.encode("utf-8", "backslashreplace").decode("utf-8") == "Fix it \\ud83d please"


@pytest.mark.parametrize("engine", ["serial", "process"])
def test_batches_cut_across_engine_chunks_and_task_failures_keep_every_row(corpus, tmp_path, monkeypatch, engine):
    """Workers hand back each engine chunk's rows packed per table; a committed
    batch that ends inside a chunk, and rows the driver makes itself (a task
    that failed), still give the tables, row for row and in order, of an
    index whose batches and chunks line up."""
    import trajkit.corpus.index as ix
    from trajkit.corpus.tasks import IndexTask

    root = _small_corpus(corpus, tmp_path, copies=2)  # 14 runs
    ref = tmp_path / "ref"
    ix.build([str(root)], ref, engine="serial", batch_size=64)
    monkeypatch.setattr(ix, "ENGINE_CHUNK", 2)  # chunks of 2 runs, batches of 3: every other batch ends inside a chunk
    cut = tmp_path / "cut"
    res = ix.build([str(root)], cut, engine=engine, jobs=2, batch_size=3)
    assert res.batches == 5 and res.indexed == 14
    for t in TABLES:
        assert table(cut, t) == table(ref, t), t
    assert [len(m["units"]) for m in live(load_manifests(cut)[0])] == [3, 3, 3, 3, 2]

    if engine == "process":
        return
    bad = "runs/c1/flat/basic.json"
    real = IndexTask.__call__

    def call(self, unit):  # a task bug on one run
        if unit.source == bad:
            raise RuntimeError("boom")
        return real(self, unit)

    monkeypatch.setattr(IndexTask, "__call__", call)
    failed = tmp_path / "failed"
    ix.build([str(root)], failed, engine="serial", batch_size=3)
    got, want = table(failed, "runs"), table(ref, "runs")
    assert [r["source"] for r in got] == [r["source"] for r in want]
    row = next(r for r in got if r["source"] == bad)
    assert row["read_ok"] is False and row["format"] is None
    diags = [d for d in table(failed, "diagnostics") if d["run_id"] == row["run_id"]]
    assert [(d["code"], d["message"]) for d in diags] == [("index.task-failed", "RuntimeError: boom")]
    others = {r["run_id"] for r in want} - {row["run_id"]}
    for t in ("steps", "tool_calls", "sessions"):
        assert [r for r in table(failed, t) if r["run_id"] in others] == [r for r in table(ref, t) if r["run_id"] in others]


def test_large_batches_are_written_in_row_groups_and_a_failed_batch_leaves_nothing(corpus, tmp_path, monkeypatch):
    """The driver holds at most ROW_GROUP_BYTES of a batch's rows: past that it
    writes them as a row group. The tables are the ones an index written in one
    piece per batch gives; a batch that fails half-written leaves no file and no
    manifest, and the next run reads its runs again."""
    import trajkit.corpus.index as ix

    root = _small_corpus(corpus, tmp_path, copies=2)  # 14 runs
    ref = tmp_path / "ref"
    ix.build([str(root)], ref, engine="serial", batch_size=64)
    assert {pq.ParquetFile(f).metadata.num_row_groups for fs in live_files(ref).values() for f in fs} == {1}

    monkeypatch.setattr(ix, "ENGINE_CHUNK", 2)
    monkeypatch.setattr(ix, "ROW_GROUP_BYTES", 1)  # every chunk of 2 runs is a row group
    small = tmp_path / "small"
    res = ix.build([str(root)], small, engine="serial", batch_size=64)
    assert res.batches == 1 and res.indexed == 14
    for t in TABLES:
        assert table(small, t) == table(ref, t), t
    (runs_file,) = live_files(small)["runs"]
    assert pq.ParquetFile(runs_file).metadata.num_row_groups == 7

    real = ix._BatchWriter._write
    calls = [0]

    def failing(self):
        calls[0] += 1
        if calls[0] == 3:  # two row groups are on disk, in temporary files
            raise RuntimeError("disk full")
        return real(self)

    monkeypatch.setattr(ix._BatchWriter, "_write", failing)
    broken = tmp_path / "broken"
    with pytest.raises(RuntimeError, match="disk full"):
        ix.build([str(root)], broken, engine="serial", batch_size=64)
    assert [p for p in broken.rglob("*") if p.is_file() and p.name != ".lock" and p.parent == broken / MANIFESTS] == []
    assert [p for t in TABLES for p in (broken / t).glob("*")] == []  # the temporary files are gone too
    monkeypatch.setattr(ix._BatchWriter, "_write", real)
    again = ix.build([str(root)], broken, engine="serial", batch_size=64)
    assert again.indexed == 14
    for t in TABLES:
        assert table(broken, t) == table(ref, t), t
