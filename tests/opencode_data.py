"""Build opencode stores for tests and for the shipped fixtures.

No public ``opencode.db`` or legacy ``storage/`` tree exists under a usable
licence (``shared/formats/opencode.md`` §8.2), so the stores are built here
from real records: the rows opencode-ai 1.18.33 wrote for one session
(``corpus/opencode/opencode_db_rows_session.json``) go into an SQLite file
with the 1.18.33 tables, and export-shaped sessions are split into the
legacy ``storage/`` layout. Plain ``sqlite3`` and ``json``: nothing of trajkit.

``python tests/opencode_data.py`` regenerates the package data under
``src/trajkit/formats/fixtures/opencode/``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "opencode"
FIXTURES = REPO / "src" / "trajkit" / "formats" / "fixtures" / "opencode"

#: The tables of opencode 1.18.33's store that hold sessions (columns as observed; drizzle's DDL style).
DDL = """
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_initialized` integer);
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL, `version` text NOT NULL,
  `share_url` text, `summary_additions` integer, `summary_deletions` integer, `summary_files` integer,
  `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text,
  `permission` text, `agent` text, `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `todo` (`session_id` text NOT NULL, `content` text NOT NULL, `status` text NOT NULL,
  `priority` text NOT NULL, `position` integer NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, PRIMARY KEY(`session_id`, `position`));
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
"""


def corpus_rows() -> dict:
    """The real 1.18.33 rows: ``{"session": [...], "message": [...], "part": [...]}``."""
    return json.loads((CORPUS / "opencode_db_rows_session.json").read_text())


def make_db(path: str | os.PathLike, rows: dict, ddl: str = DDL, wal: bool = False) -> Path:
    """An SQLite store at ``path`` holding ``rows`` (``data`` members dumped as JSON text)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists():
        p.unlink()
    con = sqlite3.connect(p)
    try:
        if wal:
            con.execute("PRAGMA journal_mode=WAL")
        con.executescript(ddl)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "project" in tables:
            for pid in sorted({r.get("project_id") for r in rows.get("session", []) if r.get("project_id")}):
                con.execute("INSERT INTO project (id, worktree, time_created, time_updated) VALUES (?, '/', 0, 0)", (pid,))
        for table in ("session", "message", "part", "todo"):
            if table not in tables:
                continue
            cols = [r[1] for r in con.execute(f"PRAGMA table_info(`{table}`)")]
            for row in rows.get(table, []):
                vals = []
                for c in cols:
                    v = row.get(c)
                    if isinstance(v, (dict, list)):
                        v = json.dumps(v, separators=(",", ":"))
                    vals.append(v)
                con.execute(f"INSERT INTO `{table}` ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", vals)
        con.commit()
    finally:
        con.close()
    return p


def export_to_rows(export: dict, project: str = "global", parent: str | None = None) -> dict:
    """An ``opencode export`` document as store rows (what opencode's own import does)."""
    info = export["info"]
    sid = info["id"]
    t = info.get("time") or {}
    tok = info.get("tokens") or {}
    cache = tok.get("cache") or {}
    session = {
        "id": sid, "project_id": info.get("projectID", project), "parent_id": info.get("parentID", parent),
        "slug": info.get("slug", sid), "directory": info.get("directory", "/"), "path": info.get("path"),
        "title": info.get("title", ""), "version": info.get("version", "1.18.33"), "agent": info.get("agent"),
        "model": info.get("model"), "permission": info.get("permission"), "cost": info.get("cost", 0),
        "tokens_input": tok.get("input", 0), "tokens_output": tok.get("output", 0),
        "tokens_reasoning": tok.get("reasoning", 0), "tokens_cache_read": cache.get("read", 0),
        "tokens_cache_write": cache.get("write", 0),
        "time_created": t.get("created", 0), "time_updated": t.get("updated", t.get("created", 0)),
    }
    messages, parts = [], []
    for m in export["messages"]:
        mi = dict(m["info"])
        mid = mi.pop("id")
        mi.pop("sessionID", None)
        created = (mi.get("time") or {}).get("created", 0)
        messages.append({"id": mid, "session_id": sid, "time_created": created, "time_updated": created, "data": mi})
        for p in m["parts"]:
            pd = dict(p)
            pid = pd.pop("id")
            pd.pop("sessionID", None)
            pd.pop("messageID", None)
            parts.append({"id": pid, "message_id": mid, "session_id": sid, "time_created": created,
                          "time_updated": created, "data": pd})
    return {"session": [session], "message": messages, "part": parts}


def write_storage(root: str | os.PathLike, exports: list[dict], project: str = "global") -> Path:
    """The legacy ``storage/`` tree (opencode <= 1.1) holding ``exports``."""
    root = Path(root)
    (root / "project").mkdir(parents=True, exist_ok=True)
    (root / "project" / f"{project}.json").write_text(json.dumps({"id": project, "worktree": "/", "time": {"created": 0}}, indent=2))
    for ex in exports:
        info = dict(ex["info"])
        sid = info["id"]
        d = root / "session" / info.get("projectID", project)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{sid}.json").write_text(json.dumps(info, indent=2))
        for m in ex["messages"]:
            mi = m["info"]
            md = root / "message" / sid
            md.mkdir(parents=True, exist_ok=True)
            (md / f"{mi['id']}.json").write_text(json.dumps(mi, indent=2))
            for p in m["parts"]:
                pd = root / "part" / mi["id"]
                pd.mkdir(parents=True, exist_ok=True)
                (pd / f"{p['id']}.json").write_text(json.dumps(p, indent=2))
        if ex.get("todo") is not None:
            (root / "todo").mkdir(exist_ok=True)
            (root / "todo" / f"{sid}.json").write_text(json.dumps(ex["todo"], indent=2))
    return root


def _part(sid: str, mid: str, pid: str, **body) -> dict:
    return {"id": pid, "sessionID": sid, "messageID": mid, **body}


def _tokens(i: int, o: int, r: int = 0, cr: int = 0, cw: int = 0) -> dict:
    return {"total": i + o + r + cr + cw, "input": i, "output": o, "reasoning": r, "cache": {"read": cr, "write": cw}}


def storage_sessions() -> list[dict]:
    """A parent session that spawns a sub-agent through the ``task`` tool, plus that child (export-shaped).

    Synthesized from the note (``opencode.md`` §5.2, §8.2) on the real 1.18.33
    session's shapes: the parent has a completed ``bash`` call, an ``error``
    ``read`` call, a ``task`` call whose ``metadata.sessionId`` names the
    child, a ``reasoning`` part, and a final ``stop`` message; the child runs
    one ``glob`` call.
    """
    P, C = "ses_0a1b2c3d4ffeAAAAparent0001", "ses_0a1b2c3e0ffeBBBBchild00001"
    base = 1767225600000
    m = lambda k: f"msg_0a1b2c3d{k:04d}AAAAAAAAAAAAAAAA"  # noqa: E731
    n = lambda k: f"prt_0a1b2c3d{k:04d}AAAAAAAAAAAAAAAA"  # noqa: E731
    model = {"providerID": "stub", "modelID": "stub-model"}
    path = {"cwd": "/home/agent/proj", "root": "/home/agent/proj"}

    def asst(k: int, t: int, finish: str, tok: dict, cost: float) -> dict:
        return {"id": m(k), "sessionID": P, "role": "assistant", "parentID": m(1), "mode": "build", "agent": "build",
                "path": path, "cost": cost, "tokens": tok, "modelID": "stub-model", "providerID": "stub",
                "time": {"created": base + t, "completed": base + t + 900}, "finish": finish}

    parent = {
        "info": {"id": P, "slug": "brave-otter", "projectID": "global", "directory": "/home/agent/proj", "title": "Fix the failing test",
                 "version": "1.1.40", "time": {"created": base, "updated": base + 9000}},
        "messages": [
            {"info": {"id": m(1), "sessionID": P, "role": "user", "time": {"created": base + 100}, "agent": "build", "model": model},
             "parts": [_part(P, m(1), n(1), type="text", text="Fix the failing test in tests/test_math.py")]},
            {"info": asst(2, 1000, "tool-calls", _tokens(1200, 40, 0, 0, 300), 0.0021),
             "parts": [
                 _part(P, m(2), n(2), type="step-start", snapshot="1111111111111111111111111111111111111111"),
                 _part(P, m(2), n(3), type="reasoning", text="Run the tests first.", time={"start": base + 1010, "end": base + 1020}),
                 _part(P, m(2), n(4), type="tool", callID="call_bash_1", tool="bash",
                       state={"status": "completed", "input": {"command": "pytest -q tests/test_math.py", "description": "Run tests"},
                              "output": "F\n1 failed", "title": "pytest -q tests/test_math.py",
                              "metadata": {"output": "F\n1 failed", "exit": 1, "truncated": False},
                              "time": {"start": base + 1100, "end": base + 1500}}),
                 _part(P, m(2), n(5), type="tool", callID="call_read_1", tool="read",
                       state={"status": "error", "input": {"filePath": "/home/agent/proj/missing.py"},
                              "error": "File not found: /home/agent/proj/missing.py", "time": {"start": base + 1100, "end": base + 1110}}),
                 _part(P, m(2), n(6), type="step-finish", reason="tool-calls", snapshot="2222222222222222222222222222222222222222",
                       tokens=_tokens(1200, 40, 0, 0, 300), cost=0.0021),
             ]},
            {"info": asst(3, 2000, "tool-calls", _tokens(200, 30, 12, 1300, 0), 0.0009),
             "parts": [
                 _part(P, m(3), n(7), type="step-start"),
                 _part(P, m(3), n(8), type="tool", callID="call_task_1", tool="task",
                       state={"status": "completed",
                              "input": {"description": "Find math helpers", "prompt": "List the math helper modules", "subagent_type": "explore"},
                              "output": f"task_id: {C} (for resuming to continue this task if needed)\n\n<task_result>\nsrc/mathx.py\n</task_result>",
                              "title": "Find math helpers", "metadata": {"sessionId": C, "model": model},
                              "time": {"start": base + 2100, "end": base + 5000}}),
                 _part(P, m(3), n(9), type="step-finish", reason="tool-calls", tokens=_tokens(200, 30, 12, 1300, 0), cost=0.0009),
             ]},
            {"info": asst(4, 6000, "stop", _tokens(300, 20, 0, 1500, 0), 0.0004),
             "parts": [
                 _part(P, m(4), n(10), type="step-start"),
                 _part(P, m(4), n(11), type="text", text="The helper lives in src/mathx.py; the test fails on a rounding bug."),
                 _part(P, m(4), n(12), type="step-finish", reason="stop", tokens=_tokens(300, 20, 0, 1500, 0), cost=0.0004),
             ]},
        ],
        "todo": [{"content": "run tests", "status": "completed", "priority": "high", "id": "1"}],
    }
    cm = lambda k: f"msg_0a1b2c3e{k:04d}BBBBBBBBBBBBBBBB"  # noqa: E731
    cn = lambda k: f"prt_0a1b2c3e{k:04d}BBBBBBBBBBBBBBBB"  # noqa: E731
    child = {
        "info": {"id": C, "slug": "quiet-heron", "projectID": "global", "parentID": P, "directory": "/home/agent/proj",
                 "title": "Find math helpers (@explore subagent)", "version": "1.1.40",
                 "time": {"created": base + 2200, "updated": base + 4900}},
        "messages": [
            {"info": {"id": cm(1), "sessionID": C, "role": "user", "time": {"created": base + 2300}, "agent": "explore", "model": model},
             "parts": [_part(C, cm(1), cn(1), type="text", text="List the math helper modules")]},
            {"info": {"id": cm(2), "sessionID": C, "role": "assistant", "parentID": cm(1), "agent": "explore", "mode": "explore",
                      "path": path, "cost": 0.0003, "tokens": _tokens(900, 15), "modelID": "stub-model", "providerID": "stub",
                      "time": {"created": base + 2400, "completed": base + 3000}, "finish": "tool-calls"},
             "parts": [
                 _part(C, cm(2), cn(2), type="step-start"),
                 _part(C, cm(2), cn(3), type="tool", callID="call_glob_1", tool="glob",
                       state={"status": "completed", "input": {"pattern": "src/math*.py"}, "output": "/home/agent/proj/src/mathx.py",
                              "title": "src", "metadata": {"count": 1, "truncated": False}, "time": {"start": base + 2500, "end": base + 2600}}),
                 _part(C, cm(2), cn(4), type="step-finish", reason="tool-calls", tokens=_tokens(900, 15), cost=0.0003),
             ]},
            {"info": {"id": cm(3), "sessionID": C, "role": "assistant", "parentID": cm(1), "agent": "explore", "mode": "explore",
                      "path": path, "cost": 0.0001, "tokens": _tokens(950, 8), "modelID": "stub-model", "providerID": "stub",
                      "time": {"created": base + 3100, "completed": base + 3500}, "finish": "stop"},
             "parts": [
                 _part(C, cm(3), cn(5), type="step-start"),
                 _part(C, cm(3), cn(6), type="text", text="src/mathx.py"),
                 _part(C, cm(3), cn(7), type="step-finish", reason="stop", tokens=_tokens(950, 8), cost=0.0001),
             ]},
        ],
    }
    return [parent, child]


def build_fixtures(out: Path = FIXTURES) -> None:
    """The package data: the real session as a DB and as an export, the run
    events, Letta's two export fixtures, and the synthesized storage tree."""
    out.mkdir(parents=True, exist_ok=True)
    make_db(out / "opencode.db", corpus_rows())
    shutil.copyfile(CORPUS / "opencode_export_session.json", out / "ses_dd796ed30ffeT1G6Sfj5NJHY56.json")
    shutil.copyfile(CORPUS / "opencode_run_format_json_events.jsonl", out / "opencode.jsonl")
    letta = CORPUS / "letta-ai+trajectory" / "fixtures" / "opencode"
    for name in ("tool-calls", "cleanup"):
        shutil.copyfile(letta / name / "input.json", out / f"letta-{name}.json")
    if (out / "storage").exists():
        shutil.rmtree(out / "storage")
    write_storage(out / "storage", storage_sessions())


if __name__ == "__main__":
    build_fixtures(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES)
