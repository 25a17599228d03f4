"""Reading a rollout trace (format ``rollout-trace``; the format's face,
its sniff and :data:`~trajkit.formats.rollout_trace.FORMAT`, is the
package's ``__init__``). See the package docstring for the record shape."""

from __future__ import annotations

import fnmatch
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import ERROR, INFO, WARNING, Diagnostic
from ...jsonio import MISSING, loads
from ...model import (
    ACTION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    OTHER,
    SYSTEM,
    Event,
    ReadOptions,
    RecordLink,
    Ref,
    Session,
    SourceFile,
    Step,
    Usage,
)
from ...reading.builder import SessionBuilder
from ...reading.io import iter_jsonl, read_capped
from ...reading.pairing import pair_by_call_id
from ...reading.probe import Probe
from ...rl.calls import AGENT, OTHER_PURPOSE, ModelCall, classify, message_text, parse_call, proxy_notes, tool_calls_of
from ...vocab.opencode import OPENCODE_TOOLS
from ...vocab.trials import find_verifier_dir
from .detect import NAME, SIDECARS, TRACE_NAMES, trace_file_in

#: Single-argument renderings for opencode's tools (``bash`` renders as its command).
OPENCODE_SINGLE_ARGUMENT = OPENCODE_TOOLS.single_argument()


def _iso(ts: Any) -> str | None:
    if isinstance(ts, (int, float)) and not isinstance(ts, bool) and ts == ts:
        try:
            return datetime.fromtimestamp(float(ts), tz=timezone.utc).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(ts, str):
        return ts
    return None


def _load_records(path: Path, b: SessionBuilder, src: SourceFile) -> list[tuple[Any, int | None, int | None]]:
    """The trace's records with their 1-based line ranges (None for a JSON array)."""
    session = b.session
    file = str(path)
    data, why = read_capped(file, b.cap)
    if data is None:
        session.diagnostics.append(why.diagnostic(file, b.cap))  # type: ignore[union-attr]
        src.status = "skipped"
        return []
    if not data or data.isspace():
        session.diag("file.empty", "the trace file is empty: no calls were captured", ERROR, file=file)
        return []
    if path.suffix != ".jsonl":
        value, d = loads(data, file)
        if value is not MISSING:
            if d:
                session.diagnostics.append(d)
            if isinstance(value, dict) and "request" not in value:
                for key in ("records", "trace", "entries", "calls", "turns", "data"):
                    if isinstance(value.get(key), list):
                        session.metadata["trace_wrapper"] = {k: v for k, v in value.items() if k != key}
                        session.metadata["trace_wrapper_key"] = key
                        value = value[key]
                        break
            if isinstance(value, list):
                return [(v, None, None) for v in value]
            if isinstance(value, dict):
                return [(value, 1, data.count(b"\n") + 1)]
            session.diag("rollout.not-a-trace", f"the trace is a JSON {type(value).__name__}, not records", ERROR, file=file)
            return []
        if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") or data.strip().count(b"\n") == 0:
            if d:
                session.diagnostics.append(d)
            return []
        session.diag(
            "rollout.jsonl-in-json",
            f"{path.name} is not one JSON value; read as JSON Lines",
            INFO,
            file=file,
        )
    out: list[tuple[Any, int | None, int | None]] = []
    diags: list[Diagnostic] = []
    for jl in iter_jsonl(data, file, diags):
        if jl.value is not MISSING:
            out.append((jl.value, jl.line, jl.line))
    session.diagnostics.extend(diags)
    return out


def _key(m: Any) -> bytes:
    try:
        return orjson.dumps(m, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(m).encode()


def _same_message(a: Any, b: Any) -> bool:
    """Whether a request's assistant message is the captured response ``b``
    (opencode rebuilds it: content may be omitted or empty, arguments re-serialised)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    ids_a = [tc.get("id") for tc in a.get("tool_calls") or [] if isinstance(tc, dict)]
    ids_b = [tc.get("id") for tc in b.get("tool_calls") or [] if isinstance(tc, dict)]
    if ids_a or ids_b:
        return ids_a == ids_b
    return (message_text(a.get("content")) or "").strip() == (message_text(b.get("content")) or "").strip()


def read(root: Path, options: ReadOptions) -> Session:
    """The rollout at ``root`` (a directory or a trace file) as a Session."""
    root = Path(root)
    b = SessionBuilder(NAME, root, options, view="trace")
    session = b.session
    probe = b.probe
    if probe.is_dir(root):
        trace = trace_file_in(root, probe)
        sidecar_dir = root
        if trace is None:
            # named like a trace but not a regular file (a FIFO, /dev/zero): say so
            for name in TRACE_NAMES:
                if probe.has(root, name) and not probe.is_dir(root / name):
                    b.read_bytes(root / name, "events")
    elif probe.exists(root):
        trace = root
        sidecar_dir = root.parent if root.name in TRACE_NAMES else None
    else:
        session.diag("rollout.no-trace", "no such file or directory", ERROR, file=str(root))
        return session
    if trace is None:
        session.diag("rollout.no-trace", f"no trace file ({', '.join(TRACE_NAMES)}) in the directory", ERROR, file=str(root))
        return b.finish()
    st = probe.stat(trace)
    src = b.account(trace, "events", "read", st.st_size if st is not None else None)
    session.metadata["trace_path"] = str(trace)
    if sidecar_dir is not None:
        _read_sidecars(sidecar_dir, trace, b)

    raw_records = _load_records(trace, b, src)
    calls: list[tuple[ModelCall, Any, int | None, int | None]] = []
    odd: list[tuple[Any, int | None, int | None, int]] = []
    for i, (rec, l0, l1) in enumerate(raw_records):
        if not isinstance(rec, dict):
            odd.append((rec, l0, l1, i))
            session.diag(
                "rollout.record-not-object",
                f"record {i} is a JSON {type(rec).__name__}, not an object; kept as an event of kind other",
                WARNING,
                file=str(trace),
                line=l0,
            )
            calls.append((None, rec, l0, l1))  # type: ignore[arg-type]
            continue
        info = parse_call(rec, i)
        calls.append((info, rec, l0, l1))
    infos = [c[0] for c in calls if c[0] is not None]
    anchor = classify(infos)
    session.metadata["anchor_system_prompt"] = (message_text(anchor) or "")[:200] if anchor is not None else None
    if infos and anchor is None:
        session.diag(
            "rollout.no-agent-call",
            "no call has both messages and tools, so no call is recognised as an agent turn",
            WARNING,
            file=str(trace),
        )

    # event ids: "turn-<n>" when turns are unique ints, else "call-<index>"
    turns = [c.turn for c in infos]
    unique_turns = all(isinstance(t, int) and not isinstance(t, bool) for t in turns) and len(set(turns)) == len(turns)
    if infos and not unique_turns:
        session.diag(
            "rollout.turn-numbers",
            "turn numbers are missing, not integers or repeated; events are named by record position",
            INFO,
            file=str(trace),
        )
    prev_turn = None
    for c in infos:
        if unique_turns and prev_turn is not None and c.turn < prev_turn:
            session.diag(
                "rollout.turn-order",
                f"turn {c.turn} is recorded after turn {prev_turn}: calls overlapped (turns are numbered on arrival)",
                INFO,
                file=str(trace),
                event_id=f"turn-{c.turn}",
            )
        prev_turn = c.turn

    counts: dict[str, int] = {}
    prev_msgs: list[Any] | None = None
    prev_reply: dict[str, Any] | None = None
    action_by_call: dict[str, Event] = {}
    answered: set[str] = set()
    emitted: set[bytes] = set()
    task_msg: str | None = None
    for info, rec, l0, l1 in calls:
        if info is None:
            eid = f"call-{len(session.events)}"
            session.events.append(Event(eid, OTHER, "record", rec, ref=Ref(str(trace), eid, l0, l1)))
            src.event_ids.append(eid)
            continue
        eid = f"turn-{info.turn}" if unique_turns else f"call-{info.index}"
        ref = Ref(str(trace), eid, l0, l1)
        for code, sev, msg in info.problems:
            session.diag(code, msg, sev, file=str(trace), event_id=eid, line=l0)
        for code, sev, msg in proxy_notes(rec):
            session.diag(code, msg, sev, file=str(trace), event_id=eid, line=l0)
        counts[info.purpose or OTHER_PURPOSE] = counts.get(info.purpose or OTHER_PURPOSE, 0) + 1
        if info.failed:
            counts["failed"] = counts.get("failed", 0) + 1
        if info.failed and info.response is not None:
            session.diag(
                "rollout.upstream-error",
                f"the upstream call failed (status {info.upstream_status}): {str(info.upstream_error)[:200]}",
                WARNING,
                file=str(trace),
                event_id=eid,
                line=l0,
            )
        if info.purpose == AGENT:
            # the messages this request adds to the conversation
            prefix = 0
            if prev_msgs is not None:
                while prefix < min(len(prev_msgs), len(info.messages)) and prev_msgs[prefix] == info.messages[prefix]:
                    prefix += 1
                if prefix < len(prev_msgs):
                    session.diag(
                        "rollout.history-rewritten",
                        f"the request rewrites the conversation from message {prefix} on "
                        "(compaction or pruned tool output)",
                        INFO,
                        file=str(trace),
                        event_id=eid,
                        line=l0,
                    )
            rewritten = prev_msgs is not None and prefix < len(prev_msgs)
            for mi in range(prefix, len(info.messages)):
                m = info.messages[mi]
                if not isinstance(m, dict):
                    continue
                role = m.get("role")
                k = _key(m)
                seen_before = k in emitted
                emitted.add(k)
                if role not in ("tool", "assistant") and rewritten and seen_before:
                    continue
                mid = f"{eid}/msg-{mi}"
                mref = Ref(str(trace), mid, l0, l1)
                if role == "tool":
                    cid = m.get("tool_call_id")
                    if isinstance(cid, str) and cid in answered:
                        continue
                    act = action_by_call.get(cid) if isinstance(cid, str) else None
                    if isinstance(cid, str):
                        answered.add(cid)
                    session.events.append(Event(
                        mid, OBSERVATION, "tool", m, source="environment", role="tool",
                        text=message_text(m.get("content")) or "", call_id=cid,
                        cause=act.id if act is not None else None, ref=mref,
                    ))
                elif role == "assistant":
                    if prev_reply is not None and _same_message(m, prev_reply):
                        continue
                    tcs = tool_calls_of(m)
                    if tcs and all(tc.call_id in action_by_call for tc in tcs):
                        continue
                    if rewritten and seen_before:
                        continue
                    ev = Event(
                        mid, ACTION if tcs else MESSAGE, "assistant", m, source="agent", role="assistant",
                        text=message_text(m.get("content")), tool_calls=tcs, ref=mref,
                    )
                    for tc in tcs:
                        if tc.call_id:
                            action_by_call.setdefault(tc.call_id, ev)
                    session.events.append(ev)
                elif role in ("system", "developer"):
                    session.events.append(Event(
                        mid, SYSTEM, role, m, source="agent", role="system",
                        text=message_text(m.get("content")), ref=mref,
                    ))
                else:
                    text = message_text(m.get("content"))
                    if task_msg is None and role == "user":
                        task_msg = text
                    session.events.append(Event(
                        mid, MESSAGE, str(role), m, source="user" if role == "user" else str(role),
                        role=role if isinstance(role, str) else None, text=text, ref=mref,
                    ))
            prev_msgs = info.messages
            prev_reply = info.message if not info.failed else None
        extra: dict[str, Any] = {"purpose": info.purpose, "turn": info.turn}
        if info.finish_reason is not None:
            extra["finish_reason"] = info.finish_reason
        if info.ids_source:
            extra["token_ids_source"] = info.ids_source
            extra["output_tokens"] = len(info.output_ids or [])
        # the token-level facts exporters carry (ATIF Metrics, ASF trajkit:*)
        if info.output_ids is not None:
            extra["completion_token_ids"] = info.output_ids
            if info.logps is not None and len(info.logps) == len(info.output_ids) and all(x is not None for x in info.logps):
                extra["logprobs"] = info.logps
        if info.prompt_ids is not None:
            extra["prompt_token_ids"] = info.prompt_ids
        model = (info.response or {}).get("model") or info.request.get("model")
        if isinstance(model, str):
            extra["model"] = model
        if isinstance(rec.get("latency_s"), (int, float)):
            extra["latency_s"] = rec["latency_s"]
        if info.failed:
            kind, typ = ERROR_EVENT, "model_call.error"
            text = (
                str(info.upstream_error) if info.upstream_error is not None
                else "no response recorded" if info.response is None else "upstream call failed"
            )
            extra["upstream_status"] = info.upstream_status
        elif info.purpose == AGENT:
            kind = ACTION if info.tool_calls else MESSAGE
            typ, text = "model_call", info.content
        else:
            kind, typ, text = OTHER, f"model_call.{info.purpose}", info.content
        ev = Event(
            eid, kind, typ, rec, source="agent", role="assistant", timestamp=_iso(rec.get("timestamp")),
            text=text, tool_calls=[OPENCODE_TOOLS.call(tc.name, tc.arguments, tc.call_id) for tc in info.tool_calls] if kind == ACTION else [],
            response_id=info.response_id, reasoning=info.reasoning, usage=info.usage, ref=ref, extra=extra,
        )
        if info.usage is not None:
            ev.model_usage = Usage.from_counts(info.usage, "response.usage")
        if kind == ACTION:
            for tc in info.tool_calls:
                if tc.call_id:
                    action_by_call.setdefault(tc.call_id, ev)
        session.events.append(ev)
        src.event_ids.append(eid)

    session.metadata["calls"] = {"total": len(calls), **counts}
    session.metadata["model"] = next(
        (c.request.get("model") for c in infos if c.purpose == AGENT and isinstance(c.request.get("model"), str)), None
    )
    sources = sorted({c.ids_source for c in infos if c.ids_source})
    session.metadata["token_ids_sources"] = sources
    run = session.run
    run.harness = NAME
    models = [c.request.get("model") for c in infos if c.purpose == AGENT and isinstance(c.request.get("model"), str)]
    run.models = list(dict.fromkeys(models))
    stamps = [e.timestamp for e in session.events if e.timestamp]
    if stamps:
        run.started_at, run.ended_at = stamps[0], stamps[-1]
    run.verifier_dir = find_verifier_dir(session.source_path)
    if session.task is None and task_msg is not None:
        session.task, session.task_source = task_msg, "first user message"
    if options.steps:
        session.steps = build_steps(session)
        unanswered = [
            tc.call_id for e in session.events if e.kind == ACTION for tc in e.tool_calls if tc.call_id not in answered
        ]
        session.metadata["actions_without_observation"] = unanswered
    return b.finish()


def build_steps(session: Session) -> list[Step]:
    """One step per tool call that a later tool result answers, in call order;
    calls of one model response share a ``parallel_group``."""
    return pair_by_call_id(session, OPENCODE_SINGLE_ARGUMENT)


def _read_sidecars(directory: Path, trace: Path, b: SessionBuilder) -> None:
    session = b.session
    probe = b.probe
    for name, role in SIDECARS.items():
        if not probe.has(directory, name):
            continue
        p = directory / name
        if probe.is_dir(p):
            continue
        if role == "derived":
            b.ignored(p, role, "derived turns; trajkit derives its own with `trajkit turns`", _size(probe, p))
            continue
        if role == "agent_events":
            b.ignored(p, role, "the agent's own event stream (opencode run --format json)", _size(probe, p))
            sid = _agent_session_id(probe.head(p, 4096))
            session.run.links.append(RecordLink(
                "session", str(p), sid, "sibling-file",
                "the agent's own record of this run, beside the trace (OpenEnv's ~/logs/agent/ layout)"))
            continue
        if name.endswith(".txt"):
            data, _sf = b.read_bytes(p, role)
            if data is not None:
                session.metadata[role] = data.decode("utf-8", errors="replace")
            continue
        value, _sf = b.read_json(p, role)
        if value is MISSING:
            continue
        session.metadata[role] = value
        if role == "task":
            text = _task_text(value)
            if text is not None:
                session.task, session.task_source = text, name
            if isinstance(value, dict) and isinstance(value.get("id") or value.get("task_id"), (str, int)):
                session.id = str(value.get("id") or value.get("task_id"))
    # a trace next to other trace files: say which was read
    others = sorted(
        n for n in probe.listdir(directory) or ()
        if n[0] != "." and fnmatch.fnmatchcase(n, "*trace*.json*") and n != trace.name and probe.is_file(directory / n)
    )
    if others:
        session.diag(
            "rollout.other-traces",
            f"read {trace.name}; also present and not read: {', '.join(others)}",
            INFO,
            file=str(directory),
        )
        for name in others:
            b.unused(directory / name, "events")


def _agent_session_id(head: bytes) -> str | None:
    """The ``sessionID`` of the first event in an opencode event stream's head."""
    line = head.split(b"\n", 1)[0]
    try:
        first = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    sid = first.get("sessionID") if isinstance(first, dict) else None
    return sid if isinstance(sid, str) and sid else None


def _size(probe: Probe, p: Path) -> int | None:
    st = probe.stat(p)
    return st.st_size if st is not None else None


def _task_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    for key in ("instruction", "task", "problem", "question", "prompt"):
        v = value.get(key)
        if isinstance(v, str):
            return v
        if isinstance(v, list):  # a chat prompt row: [{"role": "user", "content": ...}]
            for m in v:
                if isinstance(m, dict) and m.get("role") == "user":
                    return message_text(m.get("content"))
    return None


def model_calls(session: Session) -> list[tuple[ModelCall, Any, Any]]:
    """Every captured call of the session, parsed and classified (agent turn,
    title call, ...), with its event id and line: the ``model_calls``
    capability ``trajkit turns`` derives training turns from."""
    out = []
    for e in session.events:
        if isinstance(e.type, str) and e.type.startswith("model_call") and isinstance(e.raw, dict):
            out.append((parse_call(e.raw, len(out)), e.id, e.ref.line_start if e.ref else None))
    classify([c for c, _, _ in out])
    return out
