"""Build runs for certification tests from real conversation shapes in the corpus.

Every event written here is a real event of the shared corpus, copied and
changed only where a test needs it (a command, a path, a text, fresh ids and
a re-chained parent), so the readers see exactly the native shapes.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from conftest import CORPUS

V1_SRC = CORPUS / "openhands_v1" / "generated" / "localconv_condensation" / "0123456789abcdef0123456789abcdef"
V1_FIXTURES = CORPUS / "openhands_v1" / "certifier_fixtures"
V0_FLAT = CORPUS / "openhands_v0" / "flat_exports"
WS = "/home/agent/runs/ws"


def _v1_templates() -> dict[str, dict[str, Any]]:
    ev = {}
    for f in sorted((V1_SRC / "events").glob("event-*.json")):
        idx = int(f.name.split("-")[1])
        ev[idx] = json.loads(f.read_text())
    return {
        "system": ev[0], "user": ev[1],
        "term_act": ev[2], "term_obs": ev[3],
        "edit_act": ev[4], "edit_obs": ev[6],
        "finish_act": ev[13], "finish_obs": ev[14],
    }


def _set_text(content: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    c = copy.deepcopy(content[:1]) or [{"cache_prompt": False, "type": "text", "text": ""}]
    c[0]["text"] = text
    return c


def v1_run(
    dest: Path,
    steps: list[dict[str, Any]],
    *,
    status: str = "finished",
    finish: bool = True,
    user_text: str | None = None,
    extra_events: list[dict[str, Any]] | None = None,
) -> Path:
    """A V1 conversation directory at ``dest``: the corpus system prompt and
    user message, then one action/observation pair per step, then finish.

    A step is ``{"terminal": cmd, "output": text, "cwd": dir?}`` or ``{"editor": command,
    "path": p, "old": s, "new": s, "file_text": s, "output": text}``.
    """
    t = _v1_templates()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "events").mkdir(exist_ok=True)
    events: list[dict[str, Any]] = [copy.deepcopy(t["system"]), copy.deepcopy(t["user"])]
    if user_text is not None:
        events[1]["llm_message"]["content"] = _set_text(events[1]["llm_message"]["content"], user_text)
    for n, st in enumerate(steps):
        call = f"call_t{n}"
        if "terminal" in st:
            a, o = copy.deepcopy(t["term_act"]), copy.deepcopy(t["term_obs"])
            a["action"]["command"] = st["terminal"]
            a["tool_call"]["arguments"] = json.dumps({"command": st["terminal"], "security_risk": "LOW"})
            o["observation"]["command"] = st["terminal"]
            o["observation"]["content"] = _set_text(o["observation"]["content"], st.get("output", ""))
            if "cwd" in st:  # the shell's working directory after the command, as the SDK reports it
                o["observation"]["metadata"]["working_dir"] = st["cwd"]
        else:
            a, o = copy.deepcopy(t["edit_act"]), copy.deepcopy(t["edit_obs"])
            cmd = st["editor"]
            action = {"command": cmd, "path": st["path"], "kind": "FileEditorAction"}
            if cmd == "create":
                action["file_text"] = st.get("file_text", st.get("new", ""))
            if cmd == "str_replace":
                action["old_str"], action["new_str"] = st.get("old_str", ""), st.get("new_str", "")
            a["action"] = action
            a["tool_call"]["arguments"] = json.dumps({k: v for k, v in action.items() if k != "kind"})
            obs = o["observation"]
            obs["command"], obs["path"] = cmd, st["path"]
            obs["content"] = _set_text(obs["content"], st.get("output", f"edited {st['path']}"))
            if cmd != "view":
                obs["prev_exist"] = cmd != "create"
                obs["old_content"] = st.get("old") if cmd != "create" else None
                obs["new_content"] = st.get("new", st.get("file_text"))
        a["tool_call_id"] = a["tool_call"]["id"] = o["tool_call_id"] = call
        a["llm_response_id"] = f"chatcmpl-test-{n:04d}"
        a["thought"] = _set_text(a["thought"], st.get("thought", ""))
        events += [a, o]
    if extra_events:
        events += copy.deepcopy(extra_events)
    if finish:
        events += [copy.deepcopy(t["finish_act"]), copy.deepcopy(t["finish_obs"])]
    prev = None
    for i, e in enumerate(events):
        old = e["id"]
        e["id"] = str(uuid.uuid4())
        if i > 0:
            e["parent_id"] = prev
        else:
            e.pop("parent_id", None)
        if "action_id" in e:
            e["action_id"] = prev
        prev = e["id"]
        del old
    for i, e in enumerate(events):
        (dest / "events" / f"event-{i:05d}-{e['id']}.json").write_text(json.dumps(e))
    state = json.loads((V1_SRC / "base_state.json").read_text())
    state["execution_status"] = status
    state["leaf_event_id"] = events[-1]["id"]
    state["last_user_message_id"] = events[1]["id"]
    (dest / "base_state.json").write_text(json.dumps(state))
    return dest


def fixture_copy(name: str, dest: Path) -> Path:
    """A copy of one certifier fixture conversation (to edit)."""
    shutil.copytree(V1_FIXTURES / "conversations" / name, dest)
    return dest


def v0_flat(dest: Path, runs: list[tuple[str, str]] | None = None, finish: bool = True, user_text: str | None = None) -> Path:
    """A V0 flat export at ``dest`` from ``wrong_initial_state.json``: its
    message and read pair, one cloned ``run`` pair per ``(command, output)``,
    then finish."""
    src = json.loads((V0_FLAT / "wrong_initial_state.json").read_text())
    by_id = {e["id"]: e for e in src}
    out = [copy.deepcopy(by_id[0]), copy.deepcopy(by_id[3]), copy.deepcopy(by_id[4])]
    if user_text is not None:
        out[0]["message"] = out[0]["args"]["content"] = user_text
    nid = 5
    for cmd, output in runs or []:
        a, o = copy.deepcopy(by_id[5]), copy.deepcopy(by_id[6])
        a["id"], o["id"], o["cause"] = nid, nid + 1, nid
        a["args"]["command"] = o["extras"]["command"] = cmd
        a["message"] = f"Running command: {cmd}"
        o["content"] = output
        out += [a, o]
        nid += 2
    if finish:
        f = copy.deepcopy(by_id[9])
        f["id"] = nid
        out.append(f)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=4))
    return dest


def git(ws: Path, *args: str) -> str:
    p = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
                       cwd=ws, capture_output=True, text=True, check=True)
    return p.stdout


def git_repo(ws: Path, files: dict[str, str]) -> str:
    """A git repository at ``ws`` with ``files`` committed; returns the commit id."""
    ws.mkdir(parents=True, exist_ok=True)
    git(ws, "init", "-q")
    for rel, text in files.items():
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    return git(ws, "rev-parse", "HEAD").strip()


def junit(path: Path, cases: dict[str, str], declared: int | None = None) -> Path:
    """A JUnit XML report with one testcase per ``name: passed|failed|skipped|error``."""
    rows = []
    for name, st in cases.items():
        inner = {"failed": "<failure message='x'/>", "error": "<error message='x'/>", "skipped": "<skipped/>"}.get(st, "")
        rows.append(f"<testcase classname='t' name='{name}'>{inner}</testcase>")
    n = len(cases) if declared is None else declared
    path.write_text(f"<?xml version='1.0'?><testsuites><testsuite name='s' tests='{n}'>{''.join(rows)}</testsuite></testsuites>")
    return path
