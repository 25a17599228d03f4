"""``jsonl-demo``: a tiny JSON Lines run format, added to trajkit as a plugin.

A run is one file (``*.demo.jsonl``), one JSON object a line::

    {"type": "task", "format": "jsonl-demo", "id": "...", "model": "...", "text": "the task"}
    {"type": "call", "id": "c1", "tool": "shell", "args": {"command": "ls"}, "thought": "..."}
    {"type": "result", "id": "c1", "output": "...", "exit_code": 0}
    {"type": "end", "status": "success", "text": "what the agent says it did"}

A step is a call answered by a result with the same ``id`` (the first one
wins). ``shell`` calls render as their command; other tools as
``name(<args JSON>)``, as trajkit renders every format.

The reader never raises on bad data; what is odd becomes a diagnostic.
Codes it emits (a plugin documents its own):

- ``jsonl-demo.unreadable``: the file cannot be opened or read.
- ``jsonl-demo.too-large``: the file is larger than ``--max-file-bytes``.
- ``jsonl-demo.bad-line``: a line that is not a JSON object (skipped).
- ``jsonl-demo.no-task``: the first record is not a ``task`` line.
- ``jsonl-demo.orphan-result``: a result whose ``id`` no earlier call has.
- ``jsonl-demo.unanswered-call``: a call no result answers (no step).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trajkit import Event, ReadOptions, Ref, Session, SourceFile, Step, ToolCall
from trajkit.model import Outcome
from trajkit.registry import STRONG, Format, Match
from trajkit.steps import render_action

NAME = "jsonl-demo"
HERE = Path(__file__).resolve().parent

#: Tools whose step text is one argument rather than ``name(args)``.
SINGLE_ARGUMENT = {"shell": "command"}


def sniff(probe, candidate: Path, fingerprint: str) -> Match | None:
    """Claim a file whose first line is this format's task line (``probe``:
    trajkit's cached view of the disk, shared by every format's sniff)."""
    if not probe.is_file(str(candidate)):
        return None
    try:
        first = json.loads(probe.head(str(candidate), 65536).split(b"\n", 1)[0])
    except (ValueError, RecursionError):
        return None
    if isinstance(first, dict) and first.get("type") == "task" and first.get("format") == NAME:
        return Match(candidate, fingerprint, STRONG, 'first line is {"type": "task", "format": "jsonl-demo"}')
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read(root: Path, options: ReadOptions) -> Session:
    """The run in the file ``root`` as a Session (never raises on bad data)."""
    path = str(root)
    session = Session(format=NAME, source_path=path, id=root.name.split(".")[0])
    try:
        size = root.stat().st_size
        if size > options.max_file_bytes:
            session.diag("jsonl-demo.too-large", f"{size} bytes, over the {options.max_file_bytes}-byte cap", "error", file=path)
            session.files.append(SourceFile(path, "events", "skipped", size, note="too large"))
            return session
        data = root.read_bytes()
    except OSError as e:
        session.diag("jsonl-demo.unreadable", f"cannot read: {e.strerror or e}", "error", file=path)
        session.files.append(SourceFile(path, "events", "skipped", note="unreadable"))
        return session
    calls: dict[str, Event] = {}
    answered: set[str] = set()
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if not isinstance(rec, dict):
            session.diag("jsonl-demo.bad-line", "not a JSON object; line skipped", "warning", file=path, line=n)
            continue
        ref = Ref(path, n, n, n)
        kind = rec.get("type")
        if kind == "task":
            ev = Event(n, "message", "task", rec, source="user", role="user", text=_text(rec.get("text")), ref=ref)
            if session.task is None:
                session.task, session.task_source = ev.text, f"{root.name}:{n}"
                if isinstance(rec.get("id"), str):
                    session.id = rec["id"]
                for key in ("agent", "model"):
                    if isinstance(rec.get(key), str):
                        session.metadata[key] = rec[key]
        elif kind == "call":
            cid = rec.get("id") if isinstance(rec.get("id"), str) else None
            tool = rec.get("tool") if isinstance(rec.get("tool"), str) else "unknown"
            ev = Event(n, "action", "call", rec, source="agent", role="assistant",
                       text=rec.get("thought") if isinstance(rec.get("thought"), str) else None,
                       tool_calls=[ToolCall(tool, rec.get("args"), cid)], ref=ref)
            if cid is not None:
                calls.setdefault(cid, ev)
        elif kind == "result":
            cid = rec.get("id") if isinstance(rec.get("id"), str) else None
            action = calls.get(cid) if cid is not None else None
            ev = Event(n, "observation", "result", rec, source="environment", role="tool", text=_text(rec.get("output")),
                       call_id=cid, cause=action.id if action else None, ref=ref)
            if action is None:
                session.diag("jsonl-demo.orphan-result", f"result for call {cid!r}, which no earlier line makes", "warning",
                             file=path, line=n, event_id=n)
            elif cid not in answered:
                answered.add(cid)
                _add_step(session, action, ev)
        elif kind == "end":
            ev = Event(n, "state", "end", rec, source="agent", text=_text(rec.get("text")), ref=ref)
            status = rec.get("status") if isinstance(rec.get("status"), str) else None
            # the harness's own end signal: what certify weighs against the evidence
            session.outcome = Outcome(reached_end=True, status=status, signal=f"end line: {status}",
                                      claimed_success=status == "success", evidence=[{"file": path, "line": n}])
        else:  # unknown record types ride along as events
            ev = Event(n, "other", str(kind), rec, ref=ref)
        session.events.append(ev)
    if not session.events or session.events[0].type != "task":
        session.diag("jsonl-demo.no-task", "the first record is not a task line", "warning", file=path)
    for cid, ev in calls.items():
        if cid not in answered:
            session.diag("jsonl-demo.unanswered-call", f"call {cid!r} has no result; no step", "info", file=path,
                         line=ev.id, event_id=ev.id)
    session.files.append(SourceFile(path, "events", "read", size, [e.id for e in session.events]))
    return session


def _add_step(session: Session, action: Event, result: Event) -> None:
    call = action.tool_calls[0]
    thought = action.text if action.text and action.text.strip() else None
    session.steps.append(Step(
        step_id=len(session.steps) + 1,
        action=render_action(call.name, call.arguments, SINGLE_ARGUMENT),
        tool_type=call.name,
        observation=result.text or "",
        thinking=thought,
        action_ref=action.ref,
        observation_ref=result.ref,
        action_event_id=action.id,
        observation_event_id=result.id,
    ))


FORMAT = Format(
    name=NAME,
    description="jsonl-demo runs: one JSON object a line (task, calls, results, end); a trajkit plugin example",
    fingerprints=("*.demo.jsonl",),
    priority=30,
    sniff=sniff,
    read=read,
    examples=(str(HERE / "sample" / "run.demo.jsonl"),),
)
