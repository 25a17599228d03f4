"""The Gemini CLI reader (see the package docstring: :mod:`trajkit.formats.gemini_cli`)."""


from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING, loads
from ...model import (
    ACTION,
    BRANCH_ABANDONED,
    CONDENSATION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    OTHER,
    STATE,
    Event,
    FileEdit,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    SpawnLink,
    Step,
    ToolCall,
    TrajkitError,
    Usage,
)
from ...reading import fs
from ...reading.listing import session_row
from ...reading.builder import SessionBuilder
from ...reading.io import iter_jsonl
from ...reading import tree
from ...steps import render_action
from ...vocab.gemini import GEMINI_TOOLS
from .detect import INJECTED_PREFIXES, MAX_SUBAGENT_DEPTH, NAME, NOTICES

# ---------------------------------------------------------------- helpers


def parts_text(content: Any) -> str | None:
    """The text of a ``PartListUnion`` (a string, one part, or a list of parts)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return orjson.dumps(content, default=str).decode()
    out = []
    for p in content:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            if isinstance(p.get("text"), str):
                if not p.get("thought"):
                    out.append(p["text"])
            elif "inlineData" in p or "fileData" in p:
                out.append("[image]" if "image" in str((p.get("inlineData") or p.get("fileData") or {}).get("mimeType", "")) else "[file]")
            elif isinstance(p.get("functionResponse"), dict):
                out.append(_response_text(p["functionResponse"]))
    return "\n".join(out)


def _response_text(fr: dict[str, Any]) -> str:
    r = fr.get("response")
    if isinstance(r, dict):
        for k in ("output", "error", "llmContent"):
            if isinstance(r.get(k), str):
                return r[k]
        return orjson.dumps(r, default=str).decode()
    if isinstance(r, str):
        return r
    return "" if r is None else orjson.dumps(r, default=str).decode()


def result_text(result: Any) -> tuple[str, bool]:
    """A tool call's inline ``result`` as text, and whether it reports an error."""
    if isinstance(result, list):
        texts, err = [], False
        for p in result:
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
                r = p["functionResponse"].get("response")
                if isinstance(r, dict) and "error" in r and "output" not in r:
                    err = True
                texts.append(_response_text(p["functionResponse"]))
            else:
                t = parts_text([p])
                if t:
                    texts.append(t)
        return "\n".join(texts), err
    t = parts_text(result)
    return t or "", False


def thoughts_text(thoughts: Any) -> str | None:
    if not isinstance(thoughts, list):
        return None
    out = []
    for t in thoughts:
        if isinstance(t, dict):
            subj, desc = t.get("subject"), t.get("description")
            out.append("\n".join(x for x in (subj, desc) if isinstance(x, str) and x))
        elif isinstance(t, str):
            out.append(t)
    text = "\n\n".join(x for x in out if x)
    return text or None


def usage_of(tokens: Any, model: str | None) -> Usage | None:
    """A gemini message's ``tokens`` as :class:`Usage` (``input`` = input + tool)."""
    if not isinstance(tokens, dict):
        return None

    def n(k: str) -> int | None:
        v = tokens.get(k)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    inp, tool = n("input"), n("tool")
    return Usage(input=(inp or 0) + (tool or 0) if inp is not None or tool is not None else None, output=n("output"),
                 cache_read=n("cached"), reasoning=n("thoughts"), total=n("total"), model=model, source="gemini tokens")


def render(tc: ToolCall) -> str:
    """A call's step text: ``run_shell_command`` as its command, anything else as ``name(args)``."""
    if tc.op == "shell" and tc.command:
        return render_action("c", {"command": tc.command}, {"c": "command"})
    args = tc.arguments
    return render_action(tc.name, args if isinstance(args, dict) else {"_raw": args} if args is not None else {}, {})


# ---------------------------------------------------------------- replay


class _Slot:
    """One message of the replay (or a checkpoint that dropped messages)."""

    __slots__ = ("mid", "rec", "lines", "status", "parent", "kind", "eid", "last_eid", "dropped")

    def __init__(self, mid: str | None, rec: Any, line: int | None, parent: "_Slot | None", kind: str = "message"):
        self.mid = mid
        self.rec = rec
        self.lines = [line] if line is not None else []
        self.status = "live"
        self.parent = parent
        self.kind = kind
        self.eid: str | None = None
        self.last_eid: str | None = None
        self.dropped: list[str] = []


def replay(lines: list[Any], path: str, b: SessionBuilder) -> tuple[dict[str, Any], list[_Slot], dict[str, Any]]:
    """Replay JSONL lines as ``loadConversationRecord`` does: (metadata, slots in
    first-insertion order, counts)."""
    meta: dict[str, Any] = {}
    slots: list[_Slot] = []
    live: list[_Slot] = []
    by_id: dict[str, _Slot] = {}
    counts = {"lines": 0, "metadata": 0, "messages": 0, "upserts": 0, "set": 0, "checkpoints": 0, "rewinds": 0, "ignored": 0}

    def tail() -> _Slot | None:
        return live[-1] if live else None

    def upsert(mid: str, rec: dict, line: int | None) -> None:
        s = by_id.get(mid)
        if s is not None:
            s.rec = rec
            s.lines.append(line)
            counts["upserts"] += 1
            return
        s = _Slot(mid, rec, line, tail())
        slots.append(s)
        live.append(s)
        by_id[mid] = s
        counts["messages"] += 1

    for jl in lines:
        v = jl.value
        if v is MISSING:
            continue
        counts["lines"] += 1
        if not isinstance(v, dict):
            b.diag("gemini.line-not-object", f"line is a JSON {type(v).__name__}, not an object; ignored as the CLI ignores it",
                   WARNING, file=path, line=jl.line)
            counts["ignored"] += 1
            continue
        if isinstance(v.get("$rewindTo"), str):
            counts["rewinds"] += 1
            target = by_id.get(v["$rewindTo"])
            if target is not None and target in live:
                cut = live.index(target)
            else:
                b.diag("gemini.rewind-unknown-id", f"$rewindTo names {v['$rewindTo']!r}, which the log does not hold; "
                       "the conversation is emptied, as the CLI does", WARNING, file=path, line=jl.line)
                cut = 0
            for s in live[cut:]:
                s.status = "rewound"
                if s.mid is not None:
                    by_id.pop(s.mid, None)
            del live[cut:]
        elif isinstance(v.get("id"), str):
            upsert(v["id"], v, jl.line)
        elif isinstance(v.get("$set"), dict):
            counts["set"] += 1
            patch = v["$set"]
            for k, x in patch.items():
                if k != "messages":
                    meta[k] = x
            if isinstance(patch.get("messages"), list):
                counts["checkpoints"] += 1
                new = [m for m in patch["messages"] if isinstance(m, dict) and isinstance(m.get("id"), str)]
                keep = {m["id"] for m in new}
                dropped = [s for s in live if s.mid not in keep]
                cp = None
                if dropped:
                    cp = _Slot(None, v, jl.line, tail(), kind="checkpoint")
                    cp.dropped = [s.mid for s in dropped if s.mid]
                    slots.append(cp)
                    for s in dropped:
                        s.status = "compacted"
                        by_id.pop(s.mid, None)  # type: ignore[arg-type]
                kept = {s.mid: s for s in live if s.mid in keep}
                live.clear()
                for m in new:
                    s = kept.get(m["id"])
                    if s is not None:
                        s.rec = m
                        s.lines.append(jl.line)
                        live.append(s)
                    else:
                        s = _Slot(m["id"], m, jl.line, tail() or cp)
                        slots.append(s)
                        live.append(s)
                        by_id[m["id"]] = s
                        counts["messages"] += 1
        elif isinstance(v.get("sessionId"), str) and isinstance(v.get("projectHash"), str):
            counts["metadata"] += 1
            for k, x in v.items():
                if k != "messages":
                    meta[k] = x
            for m in v.get("messages") or []:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    upsert(m["id"], m, jl.line)
        else:
            counts["ignored"] += 1
            b.diag("gemini.unknown-line", "a line that is no message, $set, $rewindTo or metadata; ignored as the CLI ignores it",
                   INFO, file=path, line=jl.line)
    return meta, slots, counts


# ---------------------------------------------------------------- reading


class _Builder:
    """Events and steps from replayed messages."""

    def __init__(self, b: SessionBuilder, path: str, tree: bool):
        self.b = b
        self.s = b.session
        self.path = path
        self.tree = tree
        self.ids: set[str] = set()
        self.call_ids: set[str] = set()
        self.calls: list[tuple[Event, ToolCall, Event | None, str]] = []  # action, call, answer, status
        self.task: str | None = None

    def unique(self, base: str, line: int | None) -> str:
        eid, n = base, 2
        while eid in self.ids:
            eid, n = f"{base}#{n}", n + 1
        if eid != base:
            self.b.diag("gemini.duplicate-message-id", f"message id {base!r} appears twice; the second is {eid!r}", INFO,
                        file=self.path, line=line)
        self.ids.add(eid)
        return eid

    def add(self, e: Event) -> Event:
        self.s.events.append(e)
        return e

    def message(self, slot: _Slot, index: int, parent_eid: str | None) -> None:
        m = slot.rec
        line = slot.lines[-1] if slot.lines else None
        ref_lines = (line, line) if line is not None else (None, None)
        branch = BRANCH_ABANDONED if slot.status == "rewound" else None
        if not isinstance(m, dict):
            eid = self.unique(f"m{index}", line)
            self.b.diag("gemini.message-not-object", f"message {index} is a JSON {type(m).__name__}, not an object; kept as an event of kind other",
                        WARNING, file=self.path, line=line)
            self.add(Event(eid, OTHER, "message", m, ref=Ref(self.path, eid, *ref_lines)))
            slot.eid = slot.last_eid = eid
            return
        mid = m.get("id") if isinstance(m.get("id"), str) and m.get("id") else f"m{index}"
        eid = self.unique(mid, line)
        t = m.get("type")
        ts = m.get("timestamp") if isinstance(m.get("timestamp"), str) else None
        ref = Ref(self.path, eid, *ref_lines)
        extra: dict[str, Any] = {}
        if len(slot.lines) > 1:
            extra["lines"] = slot.lines
        if slot.status == "compacted":
            extra["compacted"] = True
        kw = dict(timestamp=ts, ref=ref, extra=extra, branch=branch, parent_id=parent_eid if self.tree else None)
        text = parts_text(m.get("content"))
        if isinstance(m.get("displayContent"), (str, list)):
            extra["display_content"] = parts_text(m["displayContent"])
        slot.eid = eid
        if t == "user":
            injected = isinstance(text, str) and text.lstrip().startswith(INJECTED_PREFIXES)
            e = self.add(Event(eid, MESSAGE, "user", m, source="harness" if injected else "user", role="user", text=text, **kw))
            if injected:
                e.extra["injected"] = True
            elif self.task is None and branch is None and text and text.strip():
                self.task = text
            slot.last_eid = eid
            return
        if t == "gemini":
            model = m.get("model") if isinstance(m.get("model"), str) else None
            if model and model not in self.s.run.models:
                self.s.run.models.append(model)
            calls = m.get("toolCalls") if isinstance(m.get("toolCalls"), list) else []
            e = self.add(Event(eid, ACTION if calls else MESSAGE, "gemini", m, source="agent", role="assistant", text=text or None,
                               reasoning=thoughts_text(m.get("thoughts")), response_id=eid, **kw))
            u = usage_of(m.get("tokens"), model or (self.s.run.models[0] if self.s.run.models else None))
            if u is not None:
                e.model_usage = u
                e.usage = dict(m["tokens"])
            last = eid
            for i, c in enumerate(calls):
                if not isinstance(c, dict):
                    continue
                native = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else f"call_{mid}_{i}"
                cid = native
                n = 2
                while cid in self.call_ids:
                    cid, n = f"{native}__{n}", n + 1
                if cid != native:
                    self.b.diag("gemini.duplicate-call-id", f"call id {native!r} was already used; this call is {cid!r}", INFO,
                                file=self.path, line=line, event_id=eid)
                self.call_ids.add(cid)
                name = c.get("name") if isinstance(c.get("name"), str) else "tool"
                args = c.get("args") if c.get("args") is not None else {}
                tc = GEMINI_TOOLS.call(name, args, cid)
                e.tool_calls.append(tc)
                status = c.get("status") if isinstance(c.get("status"), str) else None
                o = None
                if c.get("result") is not None:  # no result: a pending step (gemini-cli.md §6)
                    rt, err = result_text(c.get("result"))
                    oid = self.unique(f"{eid}/{cid}", line)
                    cts = c.get("timestamp") if isinstance(c.get("timestamp"), str) else ts
                    oextra = {k: c[k] for k in ("status", "displayName", "description", "agentId") if k in c}
                    if err or status == "error":
                        oextra["error"] = True
                    o = self.add(Event(oid, OBSERVATION, "toolCall.result", c, source="environment", role="tool", text=rt,
                                       call_id=cid, cause=eid, timestamp=cts, ref=Ref(self.path, oid, *ref_lines), extra=oextra,
                                       branch=branch, parent_id=last if self.tree else None))
                    last = oid
                    if status == "success" and not err and tc.op in ("write", "edit") and tc.path:
                        if tc.op == "write":
                            o.edit = FileEdit(tc.path, new=tc.content, whole=True)
                        else:
                            o.edit = FileEdit(tc.path, old=tc.old, new=tc.new)
                if branch is None:
                    self.calls.append((e, tc, o, status or ""))
            slot.last_eid = last
            return
        if t in NOTICES:
            kind = ERROR_EVENT if t == "error" else STATE
            self.add(Event(eid, kind, str(t), m, source="harness", text=text, **kw))
        else:
            self.b.diag("gemini.unknown-message-type", f"message type {t!r} is not known; kept as an event of kind other", INFO,
                        file=self.path, line=line, event_id=eid)
            self.add(Event(eid, OTHER, str(t), m, text=text, **kw))
        slot.last_eid = eid

    def steps(self) -> list[Step]:
        steps: list[Step] = []
        first: set[Any] = set()
        per_msg: dict[Any, int] = {}
        for e, _tc, _o, _s in self.calls:
            per_msg[e.id] = per_msg.get(e.id, 0) + 1
        for e, tc, o, status in self.calls:
            lead = e.id not in first
            first.add(e.id)
            steps.append(Step(
                step_id=len(steps) + 1,
                action=render(tc),
                tool_type=tc.name,
                observation=(o.text or "") if o is not None else "",
                thinking=(e.reasoning or e.text) if lead else None,
                action_ref=e.ref,
                observation_ref=o.ref if o is not None else None,
                action_event_id=e.id,
                observation_event_id=o.id if o is not None else None,
                parallel_group=e.id if per_msg[e.id] > 1 else None,
                usage=e.usage if lead else None,
                model_usage=e.model_usage if lead else None,
                extra={"call_id": tc.call_id, **({"status": status} if status else {}), **({} if o is not None else {"unanswered": True})},
            ))
        return steps


def read(root: Path, options: ReadOptions) -> Session:
    """The Gemini CLI session file at ``root`` as a Session."""
    return _read(Path(root), options, 0)


def _read(root: Path, options: ReadOptions, depth: int) -> Session:
    b = SessionBuilder(NAME, root, options)
    s = b.session
    path = str(root)
    s.run.harness = NAME
    data, src = b.read_bytes(root, "events")
    if data is None:
        return s
    value, d = (MISSING, None) if _looks_jsonl(data) else loads(data, path)
    slots: list[_Slot]
    pretty = data.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].strip() == b"{"
    if value is MISSING and pretty:
        # a whole-JSON session that does not decode: nothing to replay line by line
        if d is not None:
            s.diagnostics.append(d)
        b.diag("gemini.not-a-session", "the session file does not decode as one JSON object; nothing was read", ERROR, file=path)
        src.status = "skipped"
        return s
    if isinstance(value, dict) and (isinstance(value.get("messages"), list) or pretty):
        if d is not None:
            s.diagnostics.append(d)
        s.view = "json"
        meta = {k: x for k, x in value.items() if k != "messages"}
        msgs = value.get("messages")
        if not isinstance(msgs, list):
            b.diag("gemini.not-a-session", "the JSON object has no messages list", ERROR, file=path)
            msgs = []
        slots, prev = [], None
        for m in msgs:
            sl = _Slot(m.get("id") if isinstance(m, dict) and isinstance(m.get("id"), str) else None, m, None, prev)
            slots.append(sl)
            prev = sl
        s.metadata["replay"] = {"messages": len(msgs)}
    else:
        s.view = "jsonl"
        lines = list(iter_jsonl(data, path, s.diagnostics))
        meta, slots, counts = replay(lines, path, b)
        s.metadata["replay"] = counts
        if not counts["lines"]:
            b.diag("gemini.not-a-session", "no decodable line in the file", ERROR, file=path)
    tree = any(sl.status == "rewound" for sl in slots)
    gb = _Builder(b, path, tree)
    for i, sl in enumerate(slots):
        parent = sl.parent.last_eid if sl.parent is not None else None
        if sl.kind == "checkpoint":
            eid = gb.unique(f"L{sl.lines[0]}", sl.lines[0])
            gb.add(Event(eid, CONDENSATION, "$set.messages", sl.rec, source="harness",
                         text=f"checkpoint: {len(sl.dropped)} message(s) replaced", ref=Ref(path, eid, sl.lines[0], sl.lines[0]),
                         extra={"dropped": sl.dropped}, parent_id=parent if tree else None))
            sl.eid = sl.last_eid = eid
            continue
        gb.message(sl, i, parent)
    src.event_ids = [e.id for e in s.events]
    _facts(s, meta, root, gb)
    if tree:
        live = [sl for sl in slots if sl.status != "rewound" and sl.last_eid]
        if live:
            s.metadata["leaf_event_id"] = live[-1].last_eid
        s.metadata["rewound"] = [sl.eid for sl in slots if sl.status == "rewound"]
    if options.steps:
        s.steps = gb.steps()
        s.metadata["actions_without_observation"] = [st.extra["call_id"] for st in s.steps if st.extra.get("unanswered")]
    if s.id:
        _link_children(b, root, options, depth)
    return s


def _looks_jsonl(data: bytes) -> bool:
    """Whether a file that decodes as one object is a one-line record followed by more lines."""
    first, _, rest = data.strip().partition(b"\n")
    return bool(rest.strip()) and first.rstrip().endswith(b"}") and rest.lstrip().startswith(b"{")


def _facts(s: Session, meta: dict[str, Any], root: Path, gb: _Builder) -> None:
    run = s.run
    if isinstance(meta.get("sessionId"), str):
        s.id = meta["sessionId"]
    else:
        s.id = root.stem
    run.started_at = meta.get("startTime") if isinstance(meta.get("startTime"), str) else None
    stamps = [e.timestamp for e in s.events if e.timestamp]
    run.ended_at = meta.get("lastUpdated") if isinstance(meta.get("lastUpdated"), str) else (stamps[-1] if stamps else None)
    if run.started_at is None and stamps:
        run.started_at = stamps[0]
    for k in ("projectHash", "kind", "summary", "directories", "memoryScratchpad"):
        if k in meta:
            s.metadata[k] = meta[k]
    s.metadata["model"] = run.models[0] if run.models else None
    # the system prompt and the tool declarations are not in the file: an ASF
    # request_hash would claim a request trajkit cannot rebuild
    s.metadata["context_rebuildable"] = False
    run.workspace = _project_dir(root, meta.get("projectHash"))
    if gb.task is not None:
        s.task, s.task_source = gb.task, "first user message"
    s.outcome = _outcome(s)


def _project_dir(root: Path, project_hash: Any) -> str | None:
    """The project folder a session belongs to: ``~/.gemini/projects.json``
    names it (short-name folders), or its SHA-256 is ``projectHash``."""
    try:
        chats = root.parent if root.parent.name == "chats" else root.parent.parent
        proj = chats.parent
        home = proj.parent.parent  # <home>/tmp/<project>/chats
    except IndexError:
        return None
    pj = home / "projects.json"
    if not fs.isfile(pj):
        return None
    from ...reading.io import load_json

    value, _ = load_json(pj, 1 << 22)
    table = value.get("projects") if isinstance(value, dict) and isinstance(value.get("projects"), dict) else value
    if not isinstance(table, dict):
        return None
    for path, short in table.items():
        if short == proj.name or (isinstance(project_hash, str) and hashlib.sha256(path.encode()).hexdigest() == project_hash):
            return path
    return None


def _outcome(s: Session) -> Outcome | None:
    """The CLI's end of turn: a final gemini message without calls after the last
    user message; an error notice after it; a cancelled call."""
    live = [e for e in s.events if e.branch != BRANCH_ABANDONED and e.type in ("user", "gemini", "error")]
    last_user = max((i for i, e in enumerate(live) if e.type == "user" and e.source == "user"), default=-1)
    after = live[last_user + 1:]
    if not after:
        return None
    e = after[-1]
    ev = [{"file": s.source_path, "event_id": e.id}]
    if e.type == "error":
        return Outcome(False, status="error", signal="error notice after the last user message", external_error=e.text or "error", evidence=ev)
    calls = e.raw.get("toolCalls") if isinstance(e.raw, dict) and isinstance(e.raw.get("toolCalls"), list) else []
    if any(isinstance(c, dict) and c.get("status") in ("cancelled", "canceled") for c in calls):
        return Outcome(False, status="cancelled", signal="a tool call was cancelled", human_abort=True, evidence=ev)
    if e.tool_calls:
        return Outcome(False, status="tool-calls-last", signal="the session ends on tool calls with no reply after them", evidence=ev)
    return Outcome(True, status="final-answer", signal="a gemini message without tool calls ends the turn", claimed_success=True, evidence=ev)


def _link_children(b: SessionBuilder, root: Path, options: ReadOptions, depth: int) -> None:
    s = b.session
    sub = root.parent / str(s.id)
    names = b.probe.listdir(sub)
    if not names or not b.probe.is_dir(sub):
        return
    if depth >= MAX_SUBAGENT_DEPTH:
        b.diag("gemini.subagent-depth", f"the sub-agent sessions in {sub.name}/, {MAX_SUBAGENT_DEPTH} levels down, are not read",
               WARNING, file=str(sub))
        return
    by_agent: dict[str, Step] = {}
    for st in s.steps:
        o = s.event_by_id(st.observation_event_id) if st.observation_event_id else None
        aid = o.extra.get("agentId") if o is not None else None
        if isinstance(aid, str):
            by_agent.setdefault(aid, st)
    spawns = [st for st in s.steps if _spawn_step(s, st)]
    used: set[int] = set()
    for name in sorted(names):
        p = sub / name
        if not name.endswith((".json", ".jsonl")) or not b.probe.is_file(p):
            continue
        child = _read(p, options, depth + 1)
        s.children.append(child)
        step = by_agent.get(child.id or "") or by_agent.get(Path(name).stem)
        method = "agent-id"
        if step is None or step.step_id in used:
            step = next((st for st in spawns if st.step_id not in used), None)
            method = "spawn-order"
        if step is None:
            b.diag("gemini.subagent-unlinked", f"sub-agent session {child.id} sits under this session, but no call names it",
                   INFO, file=str(p))
            continue
        used.add(step.step_id)
        step.children.append(child)
        child.spawned_by = SpawnLink(child.id, step.step_id, step.action_event_id, method, f"{sub.name}/{name}")


def _spawn_step(s: Session, st: Step) -> bool:
    e = s.event_by_id(st.action_event_id)
    if e is None:
        return False
    return any(tc.call_id == st.extra.get("call_id") and tc.op == "spawn" for tc in e.tool_calls)


# ---------------------------------------------------------------- listing and context


def summarize(root: str | os.PathLike, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """One ``trajkit ls`` row: id, first prompt, model, steps, tokens, cost, last update, path."""
    return session_row(_read(Path(os.path.abspath(os.fspath(root))), ReadOptions(max_file_bytes=max_file_bytes), 0))


NOT_REBUILT = (
    "the system prompt (the CLI builds it at run time; the session file does not keep it)",
    "the tool declarations",
    "thought signatures sent back to the model",
)


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw before each gemini message: the live conversation
    before it, as chat messages (UI notices left out; rewound messages only on
    their own branch)."""
    if session.format != NAME:
        raise TrajkitError(f"not a {NAME} session")
    by_id = {e.id: e for e in session.events}
    out = []
    for e in session.events:
        if e.type != "gemini":
            continue
        chain = []
        cur = e
        if session.metadata.get("rewound") is not None:  # a tree: walk up the parents
            cur = by_id.get(e.parent_id) if e.parent_id is not None else None
            while cur is not None:
                chain.append(cur)
                cur = by_id.get(cur.parent_id) if cur.parent_id is not None else None
            chain.reverse()
        else:
            chain = [x for x in session.events[: session.events.index(e)] if x.branch != BRANCH_ABANDONED]
        msgs: list[dict[str, Any]] = []
        for x in chain:
            if x.kind == CONDENSATION:
                msgs = []
            elif x.type == "user":
                msgs.append({"role": "user", "content": x.text or ""})
            elif x.type == "gemini":
                m: dict[str, Any] = {"role": "assistant", "content": x.text}
                if x.tool_calls:
                    m["tool_calls"] = [{"id": tc.call_id, "type": "function", "function": {
                        "name": tc.name, "arguments": orjson.dumps(tc.arguments, default=str).decode()}} for tc in x.tool_calls]
                msgs.append(m)
            elif x.kind == OBSERVATION:
                msgs.append({"role": "tool", "tool_call_id": x.call_id, "content": x.text or ""})
        out.append({"llm_response_id": e.id, "event_id": e.id, "messages": msgs, "not_rebuilt": list(NOT_REBUILT)})
    if at is not None:
        if at not in by_id:
            raise TrajkitError(f"no event {at!r} in this session")
        ids = [x.id for x in session.events]
        pos = ids.index(at)
        return [x for x in out if ids.index(x["event_id"]) >= pos][:1]
    return out


