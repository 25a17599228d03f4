"""The ``opencode`` format: every shared sample, its three stores, and bad input.

Expected values come from the raw rows and files by a separate route: plain
``sqlite3`` and ``json`` here, implementing the note's rule
(``shared/formats/opencode.md`` §8.4): a step is a ``tool`` part that ran
(``completed`` / ``error``), a model call's usage is its ``step-finish``
part's ``tokens`` and ``cost``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from opencode_data import (
    CORPUS as OC,
    DDL,
    corpus_rows,
    export_to_rows,
    make_db,
    storage_sessions,
    write_storage,
)
from trajkit import registry
from trajkit.export.convert import convert
from trajkit.formats import opencode
from trajkit.model import DetectionError, ReadOptions

FIX = Path(opencode.__file__).resolve().parent.parent / "fixtures" / "opencode"
SID = "ses_dd796ed30ffeT1G6Sfj5NJHY56"
LETTA = OC / "letta-ai+trajectory" / "fixtures" / "opencode"


def read(path, **kw):
    return registry.read(str(path), format="opencode", options=ReadOptions(**kw)) if kw.pop("named", True) else registry.read(str(path))


def codes(s):
    return {d.code for x in s.walk() for d in x.diagnostics}


# ---------------------------------------------------------------- the reference rule, on raw parts

def ref_steps(parts: list[dict]) -> list[tuple[str, str, str]]:
    out = []
    for p in parts:
        if p.get("type") != "tool":
            continue
        st = p.get("state") or {}
        if st.get("status") not in ("completed", "error"):
            continue
        args = st.get("input") or {}
        action = args["command"] if p["tool"] == "bash" else f"{p['tool']}({json.dumps(args, ensure_ascii=False)})"
        out.append((p["tool"], action, st.get("output") if st["status"] == "completed" else st.get("error")))
    return out


def ref_usage(parts: list[dict]) -> list[tuple]:
    out = []
    for p in parts:
        if p.get("type") == "step-finish" and isinstance(p.get("tokens"), dict):
            t = p["tokens"]
            c = t.get("cache") or {}
            out.append((t["input"] + c.get("read", 0) + c.get("write", 0), t["output"], t.get("reasoning"),
                        c.get("read"), c.get("write"), float(p["cost"])))
    return out


def db_parts(db: Path, sid: str) -> list[dict]:
    con = sqlite3.connect(db)
    try:
        order = [r[0] for r in con.execute("SELECT id FROM message WHERE session_id = ? ORDER BY time_created, id", (sid,))]
        rows = con.execute("SELECT message_id, id, data FROM part WHERE session_id = ? ORDER BY id", (sid,)).fetchall()
    finally:
        con.close()
    return [json.loads(d) for mid in order for m, _i, d in rows if m == mid]


def export_parts(doc: dict) -> list[dict]:
    msgs = sorted(doc["messages"], key=lambda m: m["info"]["time"]["created"])
    out = []
    for m in msgs:
        ps = m["parts"]
        if all("id" in p for p in ps):
            ps = sorted(ps, key=lambda p: p["id"])
        out += ps
    return out


def event_parts(path: Path) -> list[dict]:
    return [json.loads(line)["part"] for line in path.read_text().splitlines() if line.strip()]


def storage_parts(root: Path, sid: str) -> list[dict]:
    msgs = [json.loads(p.read_text()) for p in (root / "message" / sid).glob("*.json")]
    msgs.sort(key=lambda m: (m["time"]["created"], m["id"]))
    out = []
    for m in msgs:
        out += [json.loads(p.read_text()) for p in sorted((root / "part" / m["id"]).glob("*.json"))]
    return out


def got_steps(s):
    return [(st.tool_type, st.action, st.observation) for st in s.steps]


def got_usage(s):
    return [(u.input, u.output, u.reasoning, u.cache_read, u.cache_write, u.cost) for e in s.events if (u := e.model_usage) is not None]


# ---------------------------------------------------------------- every shared sample

def test_sqlite_rows_of_the_real_session(tmp_path):
    db = make_db(tmp_path / "opencode.db", corpus_rows())
    s = read(db)
    parts = db_parts(db, SID)
    assert s.id == SID and s.view == "sqlite"
    assert got_steps(s) == ref_steps(parts) and len(s.steps) == 1
    assert got_usage(s) == ref_usage(parts) and len(got_usage(s)) == 2
    # every row is an event: 1 session + 3 messages + 9 parts (+ the tool result)
    rows = corpus_rows()
    assert {e.id for e in s.events} >= {r["id"] for t in ("session", "message", "part") for r in rows[t]}
    assert s.outcome.reached_end and s.outcome.claimed_success
    assert s.run.models == ["stub-model"] and s.run.harness_version == "1.18.33" and s.run.workspace == "/home/agent/oc/work"
    assert s.metadata["usage_recorded"]["input"] == s.metadata["usage_summed"]["input"] == 200
    assert "opencode.usage-mismatch" not in codes(s)


def test_export_of_the_real_session():
    doc = json.loads((OC / "opencode_export_session.json").read_text())
    s = read(OC / "opencode_export_session.json")
    assert got_steps(s) == ref_steps(export_parts(doc))
    assert got_usage(s) == ref_usage(export_parts(doc))


def test_run_events_of_the_real_session():
    path = OC / "opencode_run_format_json_events.jsonl"
    s = read(path)
    assert s.id == SID
    assert got_steps(s) == ref_steps(event_parts(path))
    assert got_usage(s) == ref_usage(event_parts(path))
    assert s.outcome.reached_end  # the last step-finish says stop


@pytest.mark.parametrize("name", ["tool-calls", "cleanup"])
def test_letta_exports(name):
    path = LETTA / name / "input.json"
    doc = json.loads(path.read_text())
    s = read(path)
    assert got_steps(s) == ref_steps(export_parts(doc)) and len(s.steps) == 1
    assert got_usage(s) == ref_usage(export_parts(doc)) == []
    # Letta's own normalised output names the same tool call and result
    exp = [r for r in json.loads((LETTA / name / "expected.json").read_text())["records"] if r["role"] == "tool"]
    assert [(st.extra["call_id"], st.observation) for st in s.steps] == [(r["tool_call_id"], r["content"]) for r in exp]
    if name == "cleanup":
        assert "opencode.unknown-part" in codes(s)  # future-semantic-part rides along
        assert any(e.type == "part.future-semantic-part" for e in s.events)


def test_the_three_stores_agree(tmp_path):
    """The one real session, read from the store, the export and the run events."""
    db = read(make_db(tmp_path / "opencode.db", corpus_rows()))
    ex = read(OC / "opencode_export_session.json")
    ev = read(OC / "opencode_run_format_json_events.jsonl")
    assert got_steps(db) == got_steps(ex) == got_steps(ev)
    assert got_usage(db) == got_usage(ex) == got_usage(ev)
    assert [x.view for x in (db, ex, ev)] == ["sqlite", "export", "run-events"]


def test_storage_tree_and_its_sub_session():
    root = FIX / "storage"
    parent_id, child_id = (x["info"]["id"] for x in storage_sessions())
    s = read(root)
    assert s.id == parent_id and s.view == "storage"
    assert got_steps(s) == ref_steps(storage_parts(root, parent_id))
    assert got_usage(s) == ref_usage(storage_parts(root, parent_id))
    [child] = s.children
    assert child.id == child_id
    assert got_steps(child) == ref_steps(storage_parts(root, child_id))
    task = next(st for st in s.steps if st.tool_type == "task")
    assert task.children == [child]
    assert child.spawned_by.step_id == task.step_id and child.spawned_by.method == "task-metadata"
    # the error tool part is a step; its observation is the error text
    assert any(st.tool_type == "read" and st.observation.startswith("File not found") for st in s.steps)
    assert s.steps[0].thinking == "Run the tests first."  # the span's reasoning part
    # every file of the two sessions is accounted for
    files = {f.path for x in s.walk() for f in x.files}
    on_disk = {str(p) for p in root.rglob("*.json") if "project" not in p.parts}
    assert on_disk <= files


def test_sub_session_in_a_store(tmp_path):
    """The same parent and child as SQLite rows: the child is read and linked too."""
    rows: dict = {"session": [], "message": [], "part": []}
    for ex in storage_sessions():
        for k, v in export_to_rows(ex).items():
            rows[k] += v
    db = make_db(tmp_path / "opencode.db", rows)
    s = read(db)
    assert [c.id for c in s.children] == [storage_sessions()[1]["info"]["id"]]
    assert s.children[0].spawned_by.method == "task-metadata"
    assert got_usage(s) == ref_usage(db_parts(db, s.id))
    # ATIF export embeds the child, ASF links it
    res = convert(s, "atif", tmp_path / "atif")
    assert res.problems == []
    doc = json.loads(Path(res.outputs[0]).read_text())
    assert len(doc.get("subagent_trajectories") or []) == 1 or any(
        (r.get("subagent_trajectory_ref") for st in doc["steps"] for r in (st.get("observation") or {}).get("results", [])))


# ---------------------------------------------------------------- stores holding many sessions

def _two_session_rows() -> dict:
    rows = corpus_rows()
    other = export_to_rows(storage_sessions()[0])
    for k in rows:
        rows[k] += other.get(k, [])
    for k in other:
        if k not in rows:
            rows[k] = other[k]
    return rows


def test_members_of_a_store(tmp_path):
    """A store of several sessions: each is a member; read() never guesses; a sub-session can be named too."""
    db = make_db(tmp_path / "opencode-beta.db", _two_session_rows())
    con = sqlite3.connect(db)
    tops = [r[0] for r in con.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created, id")]
    con.close()
    assert registry.members(str(db)) == [f"{db}#{i}" for i in tops]
    with pytest.raises(DetectionError):
        registry.read(str(db))
    assert [s.id for s in registry.read_all(str(db))] == tops
    first = storage_sessions()[0]["info"]["id"]
    s = registry.read(f"{db}#{first}")
    assert s.id == first and s.source_path == f"{db}#{first}" and len(s.steps) == 3
    with pytest.raises(DetectionError):
        registry.read(f"{db}#ses_nope")
    # a store holding a parent and its child has one member; the child can be named on its own
    rows: dict = {"session": [], "message": [], "part": []}
    for ex in storage_sessions():
        for k, v in export_to_rows(ex).items():
            rows[k] += v
    fam = make_db(tmp_path / "fam" / "opencode.db", rows)
    child = storage_sessions()[1]["info"]["id"]
    assert registry.members(str(fam)) == [f"{fam}#{first}"]
    c = registry.read(f"{fam}#{child}")
    assert c.id == child and len(c.steps) == 1 and c.spawned_by is None


def test_steps_over_every_member(tmp_path, cli):
    db = make_db(tmp_path / "opencode.db", _two_session_rows())
    out = cli("steps", str(db), "--json", check=True)
    doc = json.loads(out.stdout)
    assert sorted((d["id"], d["step_count"]) for d in doc["sessions"]) == sorted(
        [(SID, 1), (storage_sessions()[0]["info"]["id"], 3)])


def test_ls_lists_every_store_of_a_data_folder(tmp_path, cli):
    """opencode.db and a channel store, plus a stale legacy tree after migration."""
    data = tmp_path / "share" / "opencode"
    make_db(data / "opencode.db", corpus_rows())
    sess = storage_sessions()
    make_db(data / "opencode-beta.db", export_to_rows(sess[0]))
    # the tree holds the parent (also in the beta store: stale) and a session only it has
    lone = json.loads((OC / "letta-ai+trajectory/fixtures/opencode/tool-calls/input.json").read_text())
    lone["info"]["id"] = "ses_0legacyonly000000000000001"
    for m in lone["messages"]:
        m["info"]["id"] = "msg_" + m["info"]["id"].replace("-", "")
        for p in m["parts"]:
            p["id"] = "prt_" + p["id"].replace("-", "")
    write_storage(data / "storage", [sess[0], lone])
    (data / "snapshot").mkdir()
    proc = cli("ls", str(tmp_path), "--json", "--format", "opencode")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    ids = sorted(r["id"] for r in rows)
    assert ids == sorted([SID, sess[0]["info"]["id"], "ses_0legacyonly000000000000001"])
    by = {r["id"]: r for r in rows}
    assert by[SID]["steps"] == 1 and by[SID]["tokens"] == 200 + 43 and by[SID]["title"] == "Stub session title"
    assert by[sess[0]["info"]["id"]]["path"].endswith(f"opencode-beta.db#{sess[0]['info']['id']}")
    assert by["ses_0legacyonly000000000000001"]["source"] == "storage"
    assert "opencode.stale-copy" in proc.stderr
    # the sub-session is counted with its parent, not listed (it is in neither: the beta store has no child)
    assert all(r["subagents"] == 0 for r in rows)


@pytest.mark.parametrize("xdg", [False, True])
def test_ls_harness_lists_the_home_folder(tmp_path, xdg):
    """`trajkit ls --harness opencode` with no path: $XDG_DATA_HOME/opencode, else ~/.local/share/opencode."""
    home = tmp_path / "home"
    data = (tmp_path / "xdg" if xdg else home / ".local" / "share") / "opencode"
    make_db(data / "opencode.db", corpus_rows())
    make_db(data / "opencode-dev.db", export_to_rows(storage_sessions()[0]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), COLUMNS="400")
    if xdg:
        env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.run([sys.executable, "-m", "trajkit", "ls", "--harness", "opencode", "--json"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    con = sqlite3.connect(data / "opencode-dev.db")
    dev = [r[0] for r in con.execute("SELECT id FROM session WHERE parent_id IS NULL")]
    con.close()
    assert sorted(r["id"] for r in rows) == sorted([SID, *dev])
    assert all(r["path"].startswith(str(data)) for r in rows)


def test_cli_verbs_on_a_store(tmp_path, cli):
    db = make_db(tmp_path / "opencode.db", corpus_rows())
    out = cli("steps", str(db), "--json", check=True)
    assert json.loads(out.stdout)["step_count"] == 1
    cli("convert", str(db), "--to", "asf", "--out", str(tmp_path / "asf"), check=True)
    for f in (tmp_path / "asf").glob("*.jsonl"):
        cli("verify", str(f), check=True)
    cli("convert", str(db), "--to", "atif", "--out", str(tmp_path / "atif"), check=True)
    cert = cli("certify", str(db), "--json")
    assert cert.returncode in (0, 1), cert.stderr


# ---------------------------------------------------------------- the store is never written

def _tree_state(d: Path) -> dict:
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in sorted(d.iterdir())}


WAL_WRITER = textwrap.dedent("""
    import os, sqlite3, sys, json
    con = sqlite3.connect(sys.argv[1])
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    data = json.dumps({"type": "text", "text": "written after the last checkpoint"})
    con.execute("INSERT INTO part VALUES (?, ?, ?, 1, 1, ?)", ("prt_zzzz_in_wal", sys.argv[2], sys.argv[3], data))
    con.commit()
    os._exit(0)  # no close: the write stays in the -wal file
""")


def test_wal_writes_are_seen_and_nothing_is_written(tmp_path):
    db = make_db(tmp_path / "opencode.db", corpus_rows(), wal=True)
    last_msg = corpus_rows()["message"][-1]["id"]
    subprocess.run([sys.executable, "-c", WAL_WRITER, str(db), last_msg, SID], check=True)
    assert (tmp_path / "opencode.db-wal").stat().st_size > 0
    (tmp_path / "opencode.db-shm").unlink()
    before = _tree_state(tmp_path)
    s = read(db)
    after = _tree_state(tmp_path)
    # the database and its -wal are untouched; SQLite's reader keeps its read marks in -shm
    assert {k: v for k, v in after.items() if k != "opencode.db-shm"} == before, "reading changed the store's files"
    assert any(e.id == "prt_zzzz_in_wal" for e in s.events)
    assert {f.path: f.status for f in s.files}[str(db) + "-wal"] == "read"


LOCKER = textwrap.dedent("""
    import sqlite3, sys, time
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("PRAGMA locking_mode=EXCLUSIVE")
    con.execute("BEGIN EXCLUSIVE")
    con.execute("UPDATE session SET title = 'being written'")
    print("locked", flush=True)
    time.sleep(60)
""")


def test_a_locked_store_is_read_as_checkpointed(tmp_path):
    db = make_db(tmp_path / "opencode.db", corpus_rows(), wal=True)
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        s = read(db)
    finally:
        proc.kill()
        proc.wait()
    assert "opencode.db-locked" in codes(s)
    assert len(s.steps) == 1 and s.id == SID
    assert s.metadata["title"] == "Stub session title"  # as last committed to the main file


def test_a_store_without_journal_is_read_without_any_write(tmp_path):
    db = make_db(tmp_path / "opencode.db", corpus_rows())
    before = _tree_state(tmp_path)
    s = read(db)
    assert _tree_state(tmp_path) == before and s.metadata["db_open_mode"] == "immutable"


# ---------------------------------------------------------------- bad input

def test_corrupt_and_foreign_stores(tmp_path):
    good = make_db(tmp_path / "good.db", corpus_rows()).read_bytes()
    cases = {
        "garbage": b"SQLite format 3\x00" + os.urandom(5000),
        "truncated": good[:3000],
        "text": b"not a database at all\n" * 20,
        "empty": b"",
    }
    for name, data in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "opencode.db").write_bytes(data)
        s = read(d / "opencode.db")
        assert codes(s) & {"opencode.db-unreadable", "opencode.db-schema", "opencode.db-query", "opencode.no-session"}, (name, codes(s))
    # a store with the magic but named otherwise is not claimed by detection
    (tmp_path / "other.db").write_bytes(good[:100])
    assert registry.detect(tmp_path / "other.db").format is None or registry.detect(tmp_path / "other.db").format.name != "opencode"


def test_fifo_named_like_a_store_is_not_opened(tmp_path):
    os.mkfifo(tmp_path / "opencode.db")
    s = read(tmp_path / "opencode.db")
    assert "file.unreadable" in codes(s)


def test_schema_drift(tmp_path):
    rows = corpus_rows()
    no_part = make_db(tmp_path / "a" / "opencode.db", rows, ddl=DDL.replace("CREATE TABLE `part`", "CREATE TABLE `part_v2`").replace(
        "ON `part` (", "ON `part_v2` ("))
    s = read(no_part)
    assert "opencode.db-schema" in codes(s) and s.id == SID and not s.steps
    assert sum(1 for e in s.events if e.type.startswith("message.")) == 3  # the messages are still read
    # a session table from before 1.16: no usage columns; usage still comes from step-finish
    old_ddl = DDL
    for col in ("`cost` real DEFAULT 0 NOT NULL, ", "`tokens_input` integer DEFAULT 0 NOT NULL,", "`tokens_output` integer DEFAULT 0 NOT NULL,",
                "`tokens_reasoning` integer DEFAULT 0 NOT NULL,", "`tokens_cache_read` integer DEFAULT 0 NOT NULL,",
                "`tokens_cache_write` integer DEFAULT 0 NOT NULL, "):
        assert col.strip() in old_ddl.replace("\n  ", " "), col
        old_ddl = old_ddl.replace("\n  " + col.strip(), "\n  ").replace(col, "").replace(col.strip(), "")
    old = make_db(tmp_path / "b" / "opencode.db", rows, ddl=old_ddl)
    s = read(old)
    assert "tokens_input" not in [r[1] for r in sqlite3.connect(old).execute("PRAGMA table_info(session)")]
    assert got_usage(s) == ref_usage(db_parts(old, SID))
    # message rows without their data column cannot be read
    no_data = make_db(tmp_path / "c" / "opencode.db", rows, ddl=DDL.replace("`time_updated` integer NOT NULL, `data` text NOT NULL);\nCREATE TABLE `part`",
                                                                             "`time_updated` integer NOT NULL);\nCREATE TABLE `part`"))
    s = read(no_data)
    assert "opencode.db-schema" in codes(s)


def test_bad_rows(tmp_path):
    rows = corpus_rows()
    rows["part"][3]["data"] = '{"type": "tool", "state": '  # the bash part, cut
    rows["part"].append({"id": "prt_zzzzorphan", "message_id": "msg_nowhere", "session_id": SID, "time_created": 1, "time_updated": 1,
                         "data": {"type": "text", "text": "orphan"}})
    rows["part"].append({"id": "prt_zzzzunknown", "message_id": rows["message"][2]["id"], "session_id": SID, "time_created": 1,
                         "time_updated": 1, "data": {"type": "hologram", "value": 1}})
    db = make_db(tmp_path / "opencode.db", rows)
    s = read(db)
    assert {"opencode.bad-record", "json.invalid", "opencode.orphan-part", "opencode.unknown-part"} <= codes(s)
    bad = s.event_by_id(rows["part"][3]["id"])
    assert bad.kind == "other" and isinstance(bad.raw["data"], str)  # the row rides along as written
    assert not s.steps  # the only tool part could not be read
    res = convert(s, "asf", tmp_path / "asf")
    assert res.report["unaccounted"] == []


def test_storage_damage(tmp_path):
    root = write_storage(tmp_path / "storage", storage_sessions())
    parent = storage_sessions()[0]
    # a part file cut short, a file named unlike its id, a tool still running
    parts = sorted((root / "part" / parent["messages"][1]["info"]["id"]).glob("*.json"))
    parts[0].write_bytes(parts[0].read_bytes()[:20])
    body = json.loads(parts[2].read_text())
    body["id"] = "prt_other"
    body["state"] = {"status": "running", "input": body["state"]["input"], "time": {"start": 1}}
    parts[2].write_text(json.dumps(body))
    s = read(root)
    assert {"json.invalid", "opencode.id-mismatch", "opencode.tool-not-run"} <= codes(s)
    assert parts[2].stem in s.metadata["actions_without_observation"] or body["callID"] in s.metadata["actions_without_observation"]
    assert all(st.tool_type != "bash" for st in s.steps)  # the running call is no step
    assert s.event_by_id(parts[2].stem) is not None  # ids come from file names


def test_export_variants(tmp_path):
    text = (OC / "opencode_export_session.json").read_text()
    (tmp_path / "pre.json").write_text(f"Exporting session: {SID}\n" + text)
    s = read(tmp_path / "pre.json", named=False)
    assert s.format == "opencode" and "opencode.export-preamble" in codes(s) and len(s.steps) == 1
    doc = json.loads(text)
    (tmp_path / "wrapped.json").write_text(json.dumps({"session_id": SID, "agent": "opencode", "exported_at": "2026-01-01", "session": doc}))
    s = read(tmp_path / "wrapped.json", named=False)
    assert s.id == SID and s.metadata["export_wrapper"]["agent"] == "opencode" and len(s.steps) == 1
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    s = read(tmp_path / "cut.json")
    assert "json.invalid" in codes(s) and not s.steps
    (tmp_path / "other.json").write_text('{"info": {}, "records": []}')
    assert "opencode.not-export" in codes(read(tmp_path / "other.json"))


def test_event_stream_damage(tmp_path):
    lines = (OC / "opencode_run_format_json_events.jsonl").read_text().splitlines()
    odd = [lines[0], '{"type": "session_status", "sessionID": "%s", "status": "busy"}' % SID, lines[1], lines[1], *lines[2:-1], lines[-1][:40]]
    (tmp_path / "opencode.jsonl").write_text("\n".join(odd))
    s = read(tmp_path / "opencode.jsonl", named=False)
    assert {"opencode.event-type", "opencode.part-repeated", "jsonl.truncated-line"} <= codes(s)
    assert len(s.steps) == 1
    res = convert(s, "asf", tmp_path / "asf")
    assert res.report["unaccounted"] == []


def test_an_aborted_run(tmp_path):
    rows = corpus_rows()
    last = rows["message"][-1]["data"]
    last.pop("finish")
    last["error"] = {"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}
    s = read(make_db(tmp_path / "opencode.db", rows))
    assert s.outcome.human_abort and not s.outcome.reached_end
    assert any(e.kind == "error" and "aborted" in e.text for e in s.events)


# ---------------------------------------------------------------- context and the proxy trace

def test_context_matches_what_the_proxy_saw():
    """The messages rebuilt per call equal the requests the proxy captured (system prompt aside)."""
    s = read(OC / "opencode_export_session.json")
    ctx = opencode.rebuild_context(s)
    trace = [json.loads(line) for line in (OC / "proxy_trace_synthetic.jsonl").read_text().splitlines()]
    agent = [r["request"]["messages"] for r in trace if r["request"].get("tools")]
    assert len(ctx) == len(agent) == 2
    for mine, theirs in zip(ctx, agent):
        theirs = [m for m in theirs if m["role"] != "system"]
        assert [m["role"] for m in mine["messages"]] == [m["role"] for m in theirs]
        for a, b in zip(mine["messages"], theirs):
            if a["role"] == "tool":
                assert (a["tool_call_id"], a["content"]) == (b["tool_call_id"], b["content"])
            if a["role"] == "assistant":
                assert [t["id"] for t in a["tool_calls"]] == [t["id"] for t in b["tool_calls"]]
            if a["role"] == "user":
                assert a["content"] == b["content"]


def test_events_and_proxy_trace_are_linked(tmp_path):
    run = tmp_path / "logs" / "agent"
    run.mkdir(parents=True)
    shutil.copyfile(OC / "opencode_run_format_json_events.jsonl", run / "opencode.jsonl")
    shutil.copyfile(OC / "proxy_trace_synthetic.jsonl", run / "proxy_trace.jsonl")
    native = read(run / "opencode.jsonl", named=False)
    assert native.format == "opencode"
    [link] = native.run.links
    assert link.rel == "model-calls" and link.method == "call-ids" and link.path == str(run / "proxy_trace.jsonl")
    trace = registry.read(str(run))
    assert trace.format == "rollout-trace"
    [back] = trace.run.links
    assert back.rel == "session" and back.session_id == native.id and back.path == str(run / "opencode.jsonl")


def test_detection_from_inside_a_data_folder(tmp_path):
    data = tmp_path / "opencode"
    db = make_db(data / "opencode.db", corpus_rows(), wal=True)
    (data / "opencode.db-wal").write_bytes(b"")
    for p in (data, db, data / "opencode.db-wal"):
        det = registry.detect(p)
        assert det.format.name == "opencode" and Path(det.match.root) == db, p
    s = registry.read(str(data))
    assert s.id == SID


def test_compaction_and_subtask_parts(tmp_path):
    """A compaction (the summary call sees everything; later calls start at the summary) and a
    subtask part whose child session has no task call to tie it to."""
    parent, child = storage_sessions()
    sid, mids = parent["info"]["id"], [m["info"]["id"] for m in parent["messages"]]
    t = parent["messages"][-1]["info"]["time"]["created"]
    mk = lambda k: f"msg_0a1b2c3d{k:04d}CCCCCCCCCCCCCCCC"  # noqa: E731
    pk = lambda k: f"prt_0a1b2c3d{k:04d}CCCCCCCCCCCCCCCC"  # noqa: E731
    user = {"id": mk(1), "sessionID": sid, "role": "user", "time": {"created": t + 5000}, "agent": "build"}
    summary = {"id": mk(2), "sessionID": sid, "role": "assistant", "parentID": mk(1), "summary": True, "mode": "compaction",
               "modelID": "stub-model", "providerID": "stub", "time": {"created": t + 6000}, "finish": "stop",
               "tokens": {"input": 5, "output": 3, "reasoning": 0, "cache": {"read": 0, "write": 0}}, "cost": 0}
    ask = {"id": mk(3), "sessionID": sid, "role": "user", "time": {"created": t + 7000}, "agent": "build"}
    answer = {"id": mk(4), "sessionID": sid, "role": "assistant", "parentID": mk(3), "modelID": "stub-model", "providerID": "stub",
              "time": {"created": t + 8000}, "finish": "stop"}
    parent["messages"] += [
        {"info": user, "parts": [{"id": pk(1), "sessionID": sid, "messageID": mk(1), "type": "compaction", "auto": True}]},
        {"info": summary, "parts": [{"id": pk(2), "sessionID": sid, "messageID": mk(2), "type": "text", "text": "Summary: tests fail on rounding."}]},
        {"info": ask, "parts": [{"id": pk(3), "sessionID": sid, "messageID": mk(3), "type": "subtask", "prompt": "check", "description": "Check rounding",
                                 "agent": "explore"},
                                {"id": pk(4), "sessionID": sid, "messageID": mk(3), "type": "text", "text": "Now fix it."}]},
        {"info": answer, "parts": [{"id": pk(5), "sessionID": sid, "messageID": mk(4), "type": "text", "text": "Fixed."}]},
    ]
    # the child belongs to the subtask, not to the task call: rename it and drop the task call's pointer
    child["info"]["id"] = "ses_0a1b2c3f0ffeDDDDchild00002"
    for m in parent["messages"]:
        for p in m["parts"]:
            if p.get("tool") == "task":
                p["state"]["metadata"] = {}
                p["state"]["output"] = "done"
                p["state"]["time"] = {"start": 1, "end": 2}
    root = write_storage(tmp_path / "storage", [parent, child])
    s = read(root)
    assert [e.type for e in s.events if e.id in (pk(1), pk(3))] == ["part.compaction", "part.subtask"]
    assert "opencode.child-unlinked" in codes(s) and [c.id for c in s.children] == [child["info"]["id"]]
    ctx = opencode.rebuild_context(s)
    before, summary_call, after = ctx[-3], ctx[-2], ctx[-1]
    assert summary_call["llm_response_id"] == mk(2) and len(summary_call["messages"]) > len(before["messages"])
    # after the summary: the summary and the new request only
    assert [m["role"] for m in after["messages"]] == ["assistant", "user"]
    assert after["messages"][0]["content"].startswith("Summary:") and after["messages"][1]["content"] == "Now fix it."
    # the summary call's usage falls back to the message's own tokens (no step-finish)
    [u] = [e.model_usage for e in s.events if e.id == pk(2)]
    assert (u.input, u.output, u.source) == (5, 3, "message.tokens")
