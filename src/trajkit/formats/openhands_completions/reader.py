"""The OpenHands completion-log reader (see the package docstring: :mod:`trajkit.formats.openhands_completions`)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING, dumps_python, loads
from ...model import (
    ACTION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    SYSTEM,
    Event,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    Step,
    TrajkitError,
    Usage,
)
from ...reading.builder import SessionBuilder
from ...reading.probe import Probe
from ...steps import blank_safe
from .detect import COMPLETION_TOOLS, FILE_NAME, NAME

SINGLE_ARGUMENT = COMPLETION_TOOLS.single_argument()


def summarize(root: Any, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    s = read(Path(root), ReadOptions(max_file_bytes=max_file_bytes, steps=False))
    calls = [e for e in s.events if e.extra.get("call_file")]
    return {
        "id": s.id,
        "path": s.source_path,
        "title": " ".join((s.task or "").split())[:80] or None,
        "status": s.outcome.status if s.outcome is not None and s.outcome.status else "unfinished",
        "calls": len(calls),
        "events": len(s.events),
        "model": s.run.models[0] if s.run.models else None,
        "cost": s.run.cost_usd,
        "updated": s.run.ended_at,
        "subagents": 0,
        "diagnostics": [d.to_dict() for d in s.diagnostics if d.severity == ERROR],
    }


# ---------------------------------------------------------------- shapes


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def is_call(value: Any) -> bool:
    """Whether a decoded JSON file is a completion log (V0, SDK, Responses-API or error log)."""
    if not isinstance(value, dict):
        return False
    has_request = "messages" in value or "input" in value or "fncall_messages" in value
    return has_request and ("response" in value or "error" in value or "instructions" in value or "timestamp" in value)


def text_of(content: Any) -> str:
    """A chat / Responses content as text (parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, dict):
                t = p.get("text")
                if isinstance(t, str):
                    out.append(t)
                elif p.get("type") not in (None, "text", "input_text", "output_text"):
                    out.append(f"[{p.get('type')}]")
        return "".join(out)
    return orjson.dumps(content, default=str).decode()


def chat_messages(record: dict[str, Any]) -> list[Any]:
    """The request messages in chat-completions shape: ``fncall_messages``
    (V0 mock function calling: the structured form), else ``messages``, else
    a Responses-API ``instructions`` + ``input`` laid out as chat messages
    (function calls as assistant ``tool_calls``, outputs as ``tool`` messages)."""
    fm = record.get("fncall_messages")
    if isinstance(fm, list):
        return fm
    msgs = record.get("messages")
    if isinstance(msgs, list):
        return msgs
    out: list[Any] = []
    ins = record.get("instructions")
    if isinstance(ins, str) and ins:
        out.append({"role": "system", "content": ins})
    items = record.get("input")
    if isinstance(items, str):
        return out + [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return out
    for it in items:
        if not isinstance(it, dict):
            out.append(it)
            continue
        t = it.get("type")
        if t == "function_call":
            call = {"id": it.get("call_id"), "type": "function", "function": {"name": it.get("name"), "arguments": it.get("arguments")}}
            if out and isinstance(out[-1], dict) and out[-1].get("role") == "assistant" and out[-1].get("_fc"):
                out[-1]["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call], "_fc": True})
        elif t == "function_call_output":
            out.append({"role": "tool", "tool_call_id": it.get("call_id"), "content": it.get("output")})
        elif t == "reasoning":
            continue
        else:
            out.append({"role": it.get("role", "user"), "content": it.get("content")})
    for m in out:
        if isinstance(m, dict):
            m.pop("_fc", None)
    return out


def chat_response(record: dict[str, Any]) -> dict[str, Any] | None:
    """The response in chat-completions shape (``fncall_response`` first; a
    Responses-API response's ``output`` items folded into one message)."""
    r = record.get("fncall_response") if isinstance(record.get("fncall_response"), dict) else record.get("response")
    if not isinstance(r, dict):
        return None
    if "choices" in r or not isinstance(r.get("output"), list):
        return r
    text, reasoning, calls = [], [], []
    for it in r["output"]:
        if not isinstance(it, dict):
            continue
        t = it.get("type")
        if t == "message":
            text.append(text_of(it.get("content")))
        elif t == "reasoning":
            summ = it.get("summary")
            reasoning.append(text_of(summ) if isinstance(summ, list) else text_of(it.get("content")))
        elif t == "function_call":
            calls.append({"id": it.get("call_id"), "type": "function", "function": {"name": it.get("name"), "arguments": it.get("arguments")}})
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        msg["tool_calls"] = calls
    if any(reasoning):
        msg["reasoning_content"] = "\n".join(x for x in reasoning if x)
    return {"id": r.get("id"), "model": r.get("model"), "choices": [{"index": 0, "message": msg, "finish_reason": r.get("status")}],
            "usage": r.get("usage")}


def _message_of(resp: dict[str, Any] | None) -> dict[str, Any]:
    ch = _d(resp).get("choices")
    return _d(_d(ch[0]).get("message")) if isinstance(ch, list) and ch else {}


def _calls_in(m: Any) -> list[dict[str, Any]]:
    if not isinstance(m, dict) or m.get("role") != "assistant" or not isinstance(m.get("tool_calls"), list):
        return []
    return [tc for tc in m["tool_calls"] if isinstance(tc, dict)]


def _fn(tc: dict[str, Any]) -> tuple[str, Any]:
    fn = _d(tc.get("function"))
    name = fn.get("name")
    return (name if isinstance(name, str) else str(name or "")), fn.get("arguments")


def _tool_call(tc: dict[str, Any]) -> Any:
    name, arguments = _fn(tc)
    cid = tc.get("id") if isinstance(tc.get("id"), str) else None
    return COMPLETION_TOOLS.call(name, arguments, cid, lazy_json=isinstance(arguments, str))


def _args(arguments: Any) -> Any:
    if isinstance(arguments, str):
        value, _ = loads(arguments)
        return arguments if value is MISSING else value
    return arguments


def render(name: str, arguments: Any) -> str:
    """A call's step text by the benchmark rule: ``execute_bash`` as its
    command, ``execute_ipython_cell`` as its code, else ``name(<arguments JSON>)``
    (arguments that are not JSON as written)."""
    args = _args(arguments)
    key = SINGLE_ARGUMENT.get(name)
    if key is not None and isinstance(args, dict):
        v = args.get(key)
        return blank_safe(v if isinstance(v, str) else "" if v is None else dumps_python(v))
    body = args if isinstance(args, str) else dumps_python(args if args is not None else {})
    return blank_safe(f"{name}({body})")


def _usage(record: dict[str, Any], resp: dict[str, Any] | None) -> tuple[Usage | None, dict[str, Any] | None]:
    summary = record.get("usage_summary")
    counts: dict[str, Any] | None = None
    source = None
    ru = _d(resp).get("usage")
    if isinstance(ru, dict):
        counts, source = dict(ru), "response.usage"
        ptd = ru.get("prompt_tokens_details")
        if isinstance(ptd, dict) and isinstance(ptd.get("cached_tokens"), int):
            counts["cached_tokens"] = ptd["cached_tokens"]
        ctd = ru.get("completion_tokens_details")
        if isinstance(ctd, dict) and isinstance(ctd.get("reasoning_tokens"), int):
            counts["reasoning_tokens"] = ctd["reasoning_tokens"]
    if isinstance(summary, dict):
        counts = {**(counts or {}), **summary}
        source = "usage_summary" if source is None else "usage_summary + response.usage"
    cost = record.get("cost")
    if counts is None and not (isinstance(cost, (int, float)) and not isinstance(cost, bool)):
        return None, None
    counts = counts or {}
    u = Usage.from_counts(counts, source or "cost")
    if u is not None and isinstance(cost, (int, float)) and not isinstance(cost, bool):
        u.cost = float(cost)
        counts["cost"] = float(cost)
    model = _d(resp).get("model")
    if u is not None and isinstance(model, str):
        u.model = model
    return u, counts


def _iso(ts: Any) -> str | None:
    if isinstance(ts, (int, float)) and not isinstance(ts, bool) and ts == ts:
        try:
            return datetime.fromtimestamp(float(ts), tz=timezone.utc).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _key(m: Any) -> bytes:
    try:
        return orjson.dumps(m, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(m).encode()


# ---------------------------------------------------------------- reading


class _Call:
    __slots__ = ("name", "path", "record", "ts", "order", "messages", "resp", "event", "cum")

    def __init__(self, name: str, path: str, record: dict[str, Any]) -> None:
        self.name = name
        self.path = path
        self.record = record
        self.ts = record.get("timestamp")
        m = FILE_NAME.match(name)
        t = self.ts if isinstance(self.ts, (int, float)) and not isinstance(self.ts, bool) else (float(m.group("ts")) if m else float("inf"))
        self.order = (t, name)
        self.messages = chat_messages(record)
        self.resp = chat_response(record)
        self.event: Event | None = None
        #: running count of non-finish assistant tool calls over ``messages`` (the view rule)
        self.cum: list[int] | None = None


def read(root: Path, options: ReadOptions) -> Session:
    """The folder of completion logs at ``root`` (or the folder of the log
    file ``root``) as a Session; never raises on bad data."""
    root = Path(root)
    probe = Probe()
    if probe.is_file(root):
        root = root.parent
    b = SessionBuilder(NAME, root, options, view="completions", probe=probe)
    session = b.session
    session.id = root.name
    if not probe.is_dir(root):
        b.diag("completions.no-calls", "no such folder of completion logs", ERROR, file=root)
        return session
    calls: list[_Call] = []
    for name in sorted(probe.listdir(root) or ()):
        p = root / name
        if name.startswith(".") or not name.endswith(".json") or probe.is_dir(p):
            continue
        value, sf = b.read_json(p, "completion")
        if value is MISSING:
            continue
        if not is_call(value):
            sf.status, sf.role = "unused", "other"
            sf.note = "JSON that is not a completion log"
            if FILE_NAME.match(name):
                b.diag("completions.not-a-call", f"named like a completion log but holds a JSON {type(value).__name__} "
                       "without messages/input and response; left alone", WARNING, file=p)
            continue
        calls.append(_Call(name, sf.path, value))
    if not calls:
        b.diag("completions.no-calls", "no completion log in the folder", ERROR, file=root)
        return b.finish()
    calls.sort(key=lambda c: c.order)
    for c in calls:
        if not isinstance(c.ts, (int, float)) or isinstance(c.ts, bool):
            b.diag("completions.no-timestamp", "no numeric timestamp in the file; ordered by the time in its name", INFO, file=c.path)
    _events(b, calls)
    _run(session, calls)
    if options.steps:
        session.steps = build_steps(b, calls)
    return b.finish()


def _events(b: SessionBuilder, calls: list[_Call]) -> None:
    session = b.session
    prev: list[Any] | None = None
    emitted: set[bytes] = set()
    actions: dict[str, Event] = {}
    answered: set[str] = set()
    task: str | None = None
    for k, c in enumerate(calls):
        rec = c.record
        stem = c.name[:-5]
        for field_name, want in (("messages", list), ("kwargs", dict), ("tools", list), ("usage_summary", dict)):
            if field_name in rec and rec[field_name] is not None and not isinstance(rec[field_name], want):
                b.diag("completions.bad-field", f"{field_name} is a JSON {type(rec[field_name]).__name__}, not a{'n object' if want is dict else ' list'}; ignored",
                       WARNING, file=c.path, event_id=stem)
        if isinstance(rec.get("fncall_messages"), list):
            b.diag("completions.mock-fncall", "mock function calling: the structured fncall_messages / fncall_response are read; "
                   "messages / response (the text the model saw) stay in the record", INFO, file=c.path, event_id=stem)
        msgs = c.messages
        start = 0
        if prev is not None:
            common = min(len(prev), len(msgs))
            while start < common and prev[start] == msgs[start]:
                start += 1
            if start < len(prev):
                b.diag("completions.history-rewritten", f"the request drops or rewrites the logged context from message {start} on "
                       "(condensation); new messages are read from there", INFO, file=c.path, event_id=stem)
        # the view rule's count, reusing the previous call's for the shared prefix
        cum = calls[k - 1].cum[:start] if prev is not None and calls[k - 1].cum is not None else []  # type: ignore[index]
        total = cum[-1] if cum else 0
        for m in msgs[len(cum):]:
            total += _non_finish_calls((m,))
            cum.append(total)
        c.cum = cum
        for i in range(start, len(msgs)):
            m = msgs[i]
            kk = _key(m)
            if kk in emitted:
                continue
            emitted.add(kk)
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            mid = f"{stem}/msg-{i}"
            ref = Ref(c.path, mid)
            if role == "tool":
                cid = m.get("tool_call_id") if isinstance(m.get("tool_call_id"), str) else None
                if cid is not None and cid in answered:
                    continue
                act = actions.get(cid) if cid else None
                if cid:
                    answered.add(cid)
                session.events.append(Event(mid, OBSERVATION, "tool", m, source="environment", role="tool",
                                            text=text_of(m.get("content")), call_id=cid, cause=act.id if act else None, ref=ref))
            elif role == "assistant":
                tcs = _calls_in(m)
                if tcs and all(isinstance(tc.get("id"), str) and tc["id"] in actions for tc in tcs):
                    continue  # the response of an earlier call, already an event
                if not tcs and prev is not None:
                    pm = _message_of(calls[k - 1].resp)
                    if text_of(pm.get("content")).strip() == text_of(m.get("content")).strip():
                        continue
                tool_calls = [_tool_call(tc) for tc in tcs]
                ev = Event(mid, ACTION if tool_calls else MESSAGE, "assistant", m, source="agent", role="assistant",
                           text=text_of(m.get("content")) or None, tool_calls=tool_calls, ref=ref)
                for tc in tool_calls:
                    if tc.call_id:
                        actions.setdefault(tc.call_id, ev)
                session.events.append(ev)
            elif role in ("system", "developer"):
                ev = Event(mid, SYSTEM, str(role), m, source="agent", role="system", text=text_of(m.get("content")), ref=ref)
                tools = rec.get("tools") if isinstance(rec.get("tools"), list) else _d(rec.get("kwargs")).get("tools")
                if isinstance(tools, list):
                    ev.tools = tools
                session.events.append(ev)
            else:
                text = text_of(m.get("content"))
                if task is None and role == "user":
                    task = text
                session.events.append(Event(mid, MESSAGE, str(role), m, source="user" if role == "user" else str(role),
                                            role=role if isinstance(role, str) else None, text=text, ref=ref))
        prev = msgs
        # the call itself
        resp = c.resp
        msg = _message_of(resp)
        tcs = _calls_in(msg)
        err = rec.get("error")
        extra: dict[str, Any] = {"call_file": c.name, "call_index": k}
        for key in ("latency_sec", "context_window"):
            if isinstance(rec.get(key), (int, float)) and not isinstance(rec.get(key), bool):
                extra[key] = rec[key]
        if isinstance(_d(resp).get("model"), str):
            extra["model"] = resp["model"]  # type: ignore[index]
        if isinstance(rec.get("raw_response"), dict) or isinstance(rec.get("fncall_response"), dict):
            extra["mock_fncall"] = True
        reasoning = msg.get("reasoning_content") if isinstance(msg.get("reasoning_content"), str) else None
        if reasoning is None and isinstance(msg.get("reasoning"), str):
            reasoning = msg["reasoning"]
        if err is not None or resp is None:
            kind, typ = ERROR_EVENT, "completion.error"
            text = text_of(_d(err).get("message")) if isinstance(err, dict) else (text_of(err) if err is not None else "no response recorded")
            if err is not None:
                b.diag("completions.call-error", f"the call failed: {text[:200]}", WARNING, file=c.path, event_id=stem)
            else:
                b.diag("completions.no-response", "the file holds no response object", WARNING, file=c.path, event_id=stem)
            tool_calls = []
        else:
            tool_calls = [_tool_call(tc) for tc in tcs]
            kind, typ, text = (ACTION if tool_calls else MESSAGE), "completion", text_of(msg.get("content")) or None
        rid = _d(resp).get("id")
        ev = Event(stem, kind, typ, rec, source="agent", role="assistant", timestamp=_iso(c.ts), text=text, tool_calls=tool_calls,
                   response_id=rid if isinstance(rid, str) else stem, reasoning=reasoning, ref=Ref(c.path, stem), extra=extra)
        u, counts = _usage(rec, resp)
        if u is not None:
            ev.usage, ev.model_usage = counts, u
        for tc in tool_calls:
            if tc.call_id:
                actions.setdefault(tc.call_id, ev)
        c.event = ev
        session.events.append(ev)
        b.account(c.path, "completion").event_ids.append(stem)
    if task is not None:
        session.task, session.task_source = task, "first user message"


def _run(session: Session, calls: list[_Call]) -> None:
    run = session.run
    run.harness = "openhands"
    models = []
    for c in calls:
        m = _d(c.resp).get("model")
        if not isinstance(m, str):
            fm = FILE_NAME.match(c.name)
            m = fm.group("model").replace("__", "/") if fm else None
        if isinstance(m, str):
            models.append(m)
    run.models = list(dict.fromkeys(models))
    stamps = [e.timestamp for e in session.events if e.timestamp]
    if stamps:
        run.started_at, run.ended_at = stamps[0], stamps[-1]
    costs = [e.model_usage.cost for e in session.events if e.model_usage is not None and e.model_usage.cost is not None]
    if costs:
        run.cost_usd = sum(costs)
    sdk = any(FILE_NAME.match(c.name) and FILE_NAME.match(c.name).group("hex") for c in calls) or any("usage_summary" in c.record for c in calls)  # type: ignore[union-attr]
    run.harness_version = "sdk" if sdk else "v0"
    session.metadata["writer"] = "openhands-sdk" if sdk else "openhands-v0"
    session.metadata["calls"] = len(calls)
    session.outcome = _outcome(calls)


def _outcome(calls: list[_Call]) -> Outcome | None:
    """The run's own end signal, as far as the logs show one: the last
    call answering with ``finish`` (the agent's end), a last call that
    failed (an external error), or neither (a cut-off run)."""
    last = calls[-1] if calls else None
    if last is None or last.event is None:
        return None
    ev = [{"event_id": last.event.id, "file": last.path}]
    if last.event.kind == ERROR_EVENT:
        return Outcome(False, external_error=f"the last model call failed: {(last.event.text or '')[:200]}", status="error",
                       signal="the last logged call is an error", evidence=ev)
    if any(tc.name == "finish" for tc in last.event.tool_calls):
        return Outcome(True, status="finish", signal="the last logged call answers with finish", claimed_success=True, evidence=ev)
    return Outcome(False, status=None, signal="the last logged call does not finish: the run was cut off or its later calls were not logged",
                   evidence=ev)


# ---------------------------------------------------------------- steps


def _non_finish_calls(messages: Any) -> int:
    n = 0
    for m in messages:
        if type(m) is dict and m.get("role") == "assistant":
            tcs = m.get("tool_calls")
            if type(tcs) is list:
                for tc in tcs:
                    if type(tc) is dict:
                        fn = tc.get("function")
                        if not (type(fn) is dict and fn.get("name") == "finish"):
                            n += 1
    return n


def view_of(calls: list[Any]) -> int | None:
    """The index of the benchmark's view: the call whose request messages
    hold the most non-``finish`` assistant tool calls (ties: the earliest)."""
    best, best_n = None, -1
    for i, c in enumerate(calls):
        n = (c.cum[-1] if c.cum else 0) if c.cum is not None else _non_finish_calls(c.messages)
        if n > best_n:
            best, best_n = i, n
    return best


def build_steps(b: SessionBuilder, calls: list[_Call]) -> list[Step]:
    session = b.session
    vi = view_of(calls)
    if vi is None:
        return []
    view = calls[vi]
    session.metadata["view_path"] = view.path
    stem = view.name[:-5]
    results: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, m in enumerate(view.messages):
        if isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            results.setdefault(m["tool_call_id"], (i, m))
    by_id = {e.id: e for e in session.events}
    action_of: dict[Any, Any] = {}
    answer_of: dict[Any, Any] = {}
    for e in session.events:
        if e.kind == ACTION:
            for tc in e.tool_calls:
                action_of.setdefault(tc.call_id, e.id)
        elif e.kind == OBSERVATION and e.call_id is not None:
            answer_of.setdefault(e.call_id, e.id)
    steps: list[Step] = []
    unanswered = []
    for i, m in enumerate(view.messages):
        tcs = [tc for tc in _calls_in(m) if _fn(tc)[0] != "finish"]
        thought = text_of(m.get("content")).strip() or None if tcs else None
        for k, tc in enumerate(tcs):
            name, arguments = _fn(tc)
            cid = tc.get("id") if isinstance(tc.get("id"), str) else None
            res = results.get(cid) if cid else None
            aid = f"{stem}/msg-{i}"
            oid = f"{stem}/msg-{res[0]}" if res else None
            if res is None:
                unanswered.append(cid)
            steps.append(Step(
                step_id=len(steps) + 1,
                action=render(name, arguments),
                tool_type=name,
                observation=text_of(res[1].get("content")) if res else "",
                thinking=thought if k == 0 else None,
                action_ref=Ref(view.path, aid),
                observation_ref=Ref(view.path, oid) if oid else None,
                action_event_id=aid if aid in by_id else action_of.get(cid),
                observation_event_id=oid if oid in by_id else answer_of.get(cid),
                parallel_group=aid if len(tcs) > 1 else None,
                extra={"call_id": cid, "view": view.name},
            ))
    last = steps[-1].extra.get("call_id") if steps else None
    early = [cid for cid in unanswered if cid != last or cid is None]
    if early:
        b.diag("completions.unanswered-call", f"{len(early)} tool call(s) before the last step have no tool result in the view "
               "(only the final step may lack one)", WARNING, file=view.path)
    session.metadata["actions_without_observation"] = unanswered
    return steps


# ---------------------------------------------------------------- context and model calls


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw on each call, exactly as logged: the file's
    ``messages`` (a Responses-API log: ``instructions`` as a system message,
    then its ``input`` items as they are)."""
    out = []
    for e in session.events:
        if not e.extra.get("call_file") or not isinstance(e.raw, dict):
            continue
        rec = e.raw
        if isinstance(rec.get("messages"), list):
            msgs = rec["messages"]
        else:
            msgs = ([{"role": "system", "content": rec["instructions"]}] if isinstance(rec.get("instructions"), str) else [])
            items = rec.get("input")
            msgs = msgs + (items if isinstance(items, list) else [{"role": "user", "content": items}] if isinstance(items, str) else [])
        out.append({"llm_response_id": e.response_id, "event_id": e.id, "messages": msgs})
    if at is not None:
        hit = [x for x in out if x["event_id"] == at]
        if hit:
            return hit
        if session.event_by_id(at) is None:
            raise TrajkitError(f"no event {at!r} in {session.source_path}")
        later = [x for x in out if str(at).startswith(f"{x['event_id']}/")]
        return later[:1] or [{"llm_response_id": None, "event_id": at, "messages": []}]
    return out


def _openai_tools(rec: dict[str, Any]) -> list[Any] | None:
    kw = _d(rec.get("kwargs")).get("tools")
    if isinstance(kw, list) and kw:
        return kw
    tools = rec.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    out = []
    for t in tools:
        if isinstance(t, dict) and t.get("type") == "function":
            out.append(t)
        elif isinstance(t, dict):
            name = t.get("title") or _d(t.get("annotations")).get("title") or t.get("name")
            out.append({"type": "function", "function": {"name": name, "description": t.get("description"),
                                                         "parameters": t.get("parameters") or {"type": "object"}}})
    return out


def model_calls(session: Session) -> list[tuple[Any, Any, Any]]:
    """Every logged call as an RL :class:`~trajkit.rl.calls.ModelCall`
    (request messages and tools, the response), with its event id."""
    from ...rl.calls import classify, parse_call

    out = []
    for e in session.events:
        if not e.extra.get("call_file") or not isinstance(e.raw, dict):
            continue
        rec = e.raw
        request = {"messages": chat_messages(rec), "tools": _openai_tools(rec)}
        resp = chat_response(rec)
        if isinstance(_d(resp).get("model"), str):
            request["model"] = resp["model"]  # type: ignore[index]
        info = parse_call({"turn": len(out), "request": request, "response": resp}, len(out))
        out.append((info, e.id, None))
    classify([c for c, _, _ in out])
    return out
