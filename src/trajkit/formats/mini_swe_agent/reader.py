"""The mini-swe-agent reader (see the package docstring: :mod:`trajkit.formats.mini_swe_agent`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING
from ...model import (
    ACTION,
    MESSAGE,
    OBSERVATION,
    OTHER,
    STATE,
    SYSTEM,
    Event,
    FileEdit,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    Step,
    TrajkitError,
    TrialResult,
    Usage,
)
from ...reading.builder import SessionBuilder
from ...reading.probe import Probe
from ...steps import blank_safe, render_action
from ...vocab.swe_agent import MINI_SWE_AGENT_TOOLS
from ...vocab.trials import TERMINAL_BENCH, trial_outcome
from ..swe_agent.reader import _text, exit_outcome, summary_row, swebench_result
from .detect import NAME, SUFFIX, TB_TRAJ, _traj_files

#: Fence names whose block is the command (CodeTracer's ``bash``, and v2's ``mswea_bash_command``).
FENCES = ("bash", "mswea_bash_command")
_FENCE_MARKS = tuple("```" + f for f in FENCES)
_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n?```", re.DOTALL)
#: The commands that end a run and submit its output (v1.x before / after 2025-08-07).
SUBMIT_SIGNALS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
KNOWN_FORMATS = ("mini-swe-agent-1", "mini-swe-agent-1.1")
_SINGLE = MINI_SWE_AGENT_TOOLS.single_argument()


# ---------------------------------------------------------------- helpers


def _has_fence(content: Any) -> bool:
    return isinstance(content, str) and any(f in content for f in _FENCE_MARKS)


def command_of(content: str) -> str:
    """The first fenced command's body, stripped (the whole content, stripped, when no block parses)."""
    m = _BLOCK.search(content)
    return m.group(1).strip() if m else content.strip()


def _prose(content: str) -> str | None:
    """The text before the first command fence (the THOUGHT), when not blank."""
    cut = min((i for i in (content.find(f) for f in _FENCE_MARKS) if i >= 0), default=len(content))
    t = content[:cut].strip()
    return t or None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _reasoning(m: dict[str, Any]) -> str | None:
    r = m.get("reasoning_content")
    if not isinstance(r, str):
        choices = _dict(_dict(m.get("extra")).get("response")).get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            msg = _dict(choices[0].get("message"))
            r = msg.get("reasoning_content") if isinstance(msg.get("reasoning_content"), str) else msg.get("reasoning")
    return r if isinstance(r, str) and r.strip() else None


def _usage(m: dict[str, Any]) -> tuple[dict[str, Any] | None, Usage | None]:
    extra = _dict(m.get("extra"))
    resp = _dict(extra.get("response"))
    counts, source = resp.get("usage"), "extra.response.usage"
    if not isinstance(counts, dict):
        counts, source = m.get("usage"), "message usage"
    cost = extra.get("cost")
    cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    if not isinstance(counts, dict):
        if cost is None:
            return None, None
        return {"cost": cost}, Usage(cost=cost, source="extra.cost")
    u = Usage.from_counts(counts, source)
    ptd = counts.get("prompt_tokens_details")
    if u is not None and u.cache_read is None and isinstance(ptd, dict) and isinstance(ptd.get("cached_tokens"), int):
        u.cache_read = ptd["cached_tokens"]  # chat completions name the cache hit here
    d = dict(counts)
    if cost is not None and u is not None:
        u.cost = cost
        u.source = f"{source} + extra.cost"
        d["cost"] = cost
    model = resp.get("model")
    if u is not None and u.model is None and isinstance(model, str):
        u.model = model
    return d, u


def _tool_calls(m: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    out = []
    for tc in m.get("tool_calls") or []:
        if not isinstance(tc, dict):
            continue
        fn = _dict(tc.get("function"))
        name = fn.get("name")
        if isinstance(name, str):
            out.append((name, fn.get("arguments"), tc.get("id") if isinstance(tc.get("id"), str) else None))
    return out


def _response_items(m: dict[str, Any]) -> tuple[list[tuple[str, Any, str | None]], str | None, str | None]:
    """(function calls, output text, reasoning text) of a Responses-API turn."""
    calls, texts, reasons = [], [], []
    for it in m.get("output") or []:
        if not isinstance(it, dict):
            continue
        t = it.get("type")
        if t == "function_call" and isinstance(it.get("name"), str):
            cid = it.get("call_id") if isinstance(it.get("call_id"), str) else it.get("id") if isinstance(it.get("id"), str) else None
            calls.append((it["name"], it.get("arguments"), cid))
        elif t == "message":
            for c in it.get("content") or []:
                if isinstance(c, dict) and isinstance(c.get("text"), str):
                    texts.append(c["text"])
        elif t == "reasoning":
            for c in (it.get("summary") or []) + (it.get("content") or []):
                if isinstance(c, dict) and isinstance(c.get("text"), str):
                    reasons.append(c["text"])
    return calls, ("\n".join(texts) or None), ("\n".join(reasons) or None)


def _submits(command: str | None) -> bool:
    return isinstance(command, str) and any(s in command for s in SUBMIT_SIGNALS)


# ---------------------------------------------------------------- reading


#: What else a terminal-bench trial holds, and what it is to the reader (CodeTracer's
#: fallbacks ``sessions/agent.log`` and ``commands.txt`` are not read while the JSON is there).
TB_OTHERS = {"sessions": "recording", "panes": "recording", "agent.cast": "recording", "commands.txt": "commands",
             "post-agent.txt": "recording", "post-test.txt": "recording"}


def read(root: Path, options: ReadOptions | None = None) -> Session:
    """The mini-swe-agent run in ``root``: a ``.traj.json`` file, a folder
    holding exactly one, or a terminal-bench trial (``agent-logs/mini.traj.json``
    beside ``results.json``)."""
    options = options or ReadOptions()
    root = Path(root)
    probe = Probe()
    trial = root if probe.is_dir(root) and probe.is_file(root / TB_TRAJ[0] / TB_TRAJ[1]) else None
    if trial is not None:
        b = SessionBuilder(NAME, trial, options, view="messages", probe=probe)
        _read_run(b, trial / TB_TRAJ[0] / TB_TRAJ[1], options)
        _read_trial(b, trial)
        return b.finish()
    if probe.is_dir(root):
        trajs = _traj_files(probe, root)
        if len(trajs) != 1:
            b = SessionBuilder(NAME, root, options, probe=probe)
            code = "mini-swe-agent.no-traj" if not trajs else "mini-swe-agent.several-trajs"
            b.diag(code, f"{len(trajs)} .traj.json files in the folder; a run is one .traj.json file", ERROR)
            return b.finish() if not trajs else b.session
        root = root / trajs[0]
    b = SessionBuilder(NAME, root, options, view="messages", probe=probe)
    _read_run(b, root, options)
    return b.session


def _read_trial(b: SessionBuilder, trial: Path) -> None:
    """A terminal-bench trial around the run: its ``results.json`` (outcome, gate, task) and its other files."""
    session = b.session
    session.id = trial.name
    session.metadata["trial_root"] = str(trial)
    session.run.trial_id = trial.name
    session.run.benchmark = "terminal-bench"
    probe = b.probe
    for name in sorted(probe.listdir(trial / TB_TRAJ[0]) or ()):
        if name != TB_TRAJ[1]:
            b.unused(trial / TB_TRAJ[0] / name, "other", note="beside the trajectory in agent-logs/")
    for name, role in TB_OTHERS.items():
        if probe.exists(trial / name):
            b.unused(trial / name, role, note="a log or recording of the trial, not the event record")
    if probe.is_file(trial / "results.json"):
        doc, _sf = b.read_json(trial / "results.json", "results")
        if isinstance(doc, dict):
            session.run.results.append(TrialResult(TERMINAL_BENCH, str(trial / "results.json"), doc))
            if session.task is None and isinstance(doc.get("instruction"), str):
                session.task, session.task_source = doc["instruction"], "results.json instruction"
            if isinstance(doc.get("task_id"), str):
                session.run.instance_id = doc["task_id"]
            claimed = session.outcome.claimed_success if session.outcome is not None else False
            ev = list(session.outcome.evidence) if session.outcome is not None else []
            o = trial_outcome(session.run.results, claimed, ev)
            if o is not None:
                session.outcome = o  # the harness saw what the trajectory cannot (timeouts, failed installs)


def _read_run(b: SessionBuilder, root: Path, options: ReadOptions) -> None:
    """Read the ``.traj.json`` at ``root`` into ``b.session``."""
    session = b.session
    path = str(root)
    session.id = root.name[: -len(SUFFIX)] if root.name.endswith(SUFFIX) else root.name
    run = session.run
    run.harness = NAME
    doc, src = b.read_json(root, "events")
    if doc is MISSING:
        return
    events = session.events
    ids = src.event_ids

    def add(ev: Event) -> Event:
        events.append(ev)
        ids.append(ev.id)
        return ev

    info: Any = None
    if isinstance(doc, list):
        messages: Any = doc
        form = "list"
    elif isinstance(doc, dict) and ("messages" in doc or "trajectory_format" in doc or "info" in doc):
        messages = doc.get("messages")
        tf = doc.get("trajectory_format")
        form = tf if isinstance(tf, str) else "dict"
        if isinstance(tf, str) and tf not in KNOWN_FORMATS:
            if tf.startswith("mini-swe-agent-1."):
                b.diag("mini-swe-agent.unknown-version", f"trajectory_format {tf!r} is newer than trajkit knows; read as mini-swe-agent-1.1", INFO, file=path)
            else:
                b.diag("mini-swe-agent.unknown-version", f"trajectory_format {tf!r} is not a mini-swe-agent-1.x format; read as best it can", WARNING, file=path)
        info = doc.get("info")
        members = {k: v for k, v in doc.items() if k not in ("messages", "info")}
        if members:
            session.metadata["members"] = members
        if isinstance(doc.get("instance_id"), str):
            run.instance_id = doc["instance_id"]
    else:
        b.diag("mini-swe-agent.not-a-trajectory", f"the file holds a JSON {type(doc).__name__} that is neither a message list "
               "nor a trajectory object", ERROR, file=path)
        add(Event("document", OTHER, "document", doc, ref=Ref(path, "document")))
        return
    session.metadata["trajectory_format"] = form
    if not isinstance(messages, list):
        b.diag("mini-swe-agent.bad-messages", f"messages is a JSON {type(messages).__name__}, not a list; no steps", ERROR, file=path, event_id="messages")
        if messages is not None:
            add(Event("messages", OTHER, "messages", messages, ref=Ref(path, "messages")))
        messages = []

    # -- one event per message
    task: str | None = None
    last_action: Event | None = None  # the latest text-mode action (observations answer it)
    last_command: str | None = None
    submit_action: Event | None = None  # the last action that ran the completion command
    submission_msg: Event | None = None
    v2_end: dict[str, Any] = {}
    for k, m in enumerate(messages):
        mid = f"messages[{k}]"
        ref = Ref(path, mid)
        if not isinstance(m, dict):
            b.diag("mini-swe-agent.bad-record", f"message {k} is a JSON {type(m).__name__}, not an object; kept as it is", WARNING, file=path, event_id=mid)
            add(Event(mid, OTHER, "message", m, ref=ref))
            continue
        role = m.get("role")
        content = m.get("content")
        text = _text(content)
        extra = _dict(m.get("extra"))
        if m.get("object") == "response" or (role is None and isinstance(m.get("output"), list)):
            calls, out_text, reason = _response_items(m)
            usage, mu = _usage(m)
            tcs = [MINI_SWE_AGENT_TOOLS.call(n, a, c, lazy_json=isinstance(a, str)) for n, a, c in calls]
            add(Event(mid, ACTION if tcs else MESSAGE, "response", m, source="agent", role="assistant", text=out_text,
                      reasoning=reason, tool_calls=tcs, response_id=m.get("id") if isinstance(m.get("id"), str) else mid,
                      usage=usage, model_usage=mu, ref=ref))
            continue
        if role is None and m.get("type") == "function_call_output":
            out = m.get("output")
            add(Event(mid, OBSERVATION, "function_call_output", m, source="environment", role="tool",
                      text=_text(out) if _text(out) is not None else ("" if out is None else str(out)),
                      call_id=m.get("call_id") if isinstance(m.get("call_id"), str) else None, ref=ref))
            continue
        if role == "system":
            add(Event(mid, SYSTEM, "system", m, source="agent", role="system", text=text, ref=ref))
        elif role == "assistant":
            usage, mu = _usage(m)
            reason = _reasoning(m)
            native = _tool_calls(m)
            rid = _dict(extra.get("response")).get("id")
            rid = rid if isinstance(rid, str) else mid
            if native:
                tcs = [MINI_SWE_AGENT_TOOLS.call(n, a, c, lazy_json=isinstance(a, str)) for n, a, c in native]
                add(Event(mid, ACTION, "assistant", m, source="agent", role="assistant", text=text, reasoning=reason,
                          tool_calls=tcs, response_id=rid, usage=usage, model_usage=mu, ref=ref))
            elif _has_fence(content):
                cmd = command_of(content)
                call = MINI_SWE_AGENT_TOOLS.call("bash", {"command": cmd}, f"call_{k}")
                last_action = add(Event(mid, ACTION, "assistant", m, source="agent", role="assistant", text=text, reasoning=reason,
                                        tool_calls=[call], response_id=rid, usage=usage, model_usage=mu, ref=ref))
                last_command = cmd
                if _submits(cmd):
                    submit_action = last_action
            else:
                add(Event(mid, MESSAGE, "assistant", m, source="agent", role="assistant", text=text, reasoning=reason,
                          response_id=rid, usage=usage, model_usage=mu, ref=ref))
        elif role == "tool":
            cid = m.get("tool_call_id")
            add(Event(mid, OBSERVATION, "tool", m, source="environment", role="tool", text=text or "",
                      call_id=cid if isinstance(cid, str) else None, ref=ref))
        elif role == "user" and task is None:
            task = text.strip() if isinstance(text, str) else None
            add(Event(mid, MESSAGE, "user", m, source="user", role="user", text=text, ref=ref))
        elif role == "user" and isinstance(content, str) and "<returncode>" in content and last_action is not None:
            add(Event(mid, OBSERVATION, "user", m, source="environment", role="user", text=content,
                      call_id=last_action.tool_calls[0].call_id, cause=last_action.id, ref=ref))
        else:
            ev = add(Event(mid, MESSAGE, str(role) if isinstance(role, str) else "message", m,
                           source="environment" if role == "user" else None, role=role if isinstance(role, str) else None,
                           text=text, ref=ref))
            if "exit_status" in extra or "submission" in extra:
                v2_end = {"event": ev, **extra}
            elif role == "user" and _submits(last_command) and isinstance(content, str) and content.strip():
                submission_msg = ev
    if task is not None:
        session.task, session.task_source = task, "first user message"

    # -- the end: info (v1), the final message's extra (v2), or the completion command (list form)
    if info is not None and not isinstance(info, dict):
        b.diag("mini-swe-agent.bad-info", f"info is a JSON {type(info).__name__}, not an object; no end signal", WARNING, file=path, event_id="info")
    info_ev = add(Event("info", STATE, "info", info, source="environment", ref=Ref(path, "info"))) if info is not None else None
    info = _dict(info)
    submission = info.get("submission") if "submission" in info else v2_end.get("submission")
    carrier = info_ev if "submission" in info else v2_end.get("event") if "submission" in v2_end else submission_msg
    if carrier is not None and submission is None and carrier is submission_msg:
        submission = submission_msg.text
    if carrier is not None and isinstance(submission, str) and "diff --git" in submission:
        carrier.edit = FileEdit(None, patch=submission, final=True)
    status = info.get("exit_status") if "exit_status" in info else v2_end.get("exit_status")
    if "exit_status" in info or "exit_status" in v2_end:
        where = info_ev if "exit_status" in info else v2_end["event"]
        session.outcome = exit_outcome(status, [{"event_id": where.id, "file": path}])
    elif submit_action is not None:
        ev = [{"event_id": submit_action.id, "file": path}] + ([{"event_id": submission_msg.id, "file": path}] if submission_msg else [])
        session.outcome = Outcome(True, status="submitted", signal="the agent ran the completion command (no exit_status recorded)",
                                  claimed_success=True, evidence=ev)
    else:
        session.outcome = exit_outcome(None, [{"file": path}])
    stats = _dict(info.get("model_stats"))
    if stats:
        session.metadata["model_stats"] = stats
    cost = stats.get("instance_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        run.cost_usd = float(cost)
    else:
        costs = [e.model_usage.cost for e in events if e.model_usage is not None and e.model_usage.cost is not None]
        if costs:
            run.cost_usd = sum(costs)
    if isinstance(info.get("mini_version"), str):
        run.harness_version = info["mini_version"]
    config = _dict(info.get("config"))
    model_cfg = _dict(config.get("model"))
    model = model_cfg.get("model_name")
    models = [model] if isinstance(model, str) else []
    models += [e.model_usage.model for e in events if e.model_usage is not None and isinstance(e.model_usage.model, str)]
    run.models = list(dict.fromkeys(models))
    if isinstance(config.get("agent_type"), str):
        run.agent = config["agent_type"]
    if run.instance_id is None:
        run.instance_id = session.id
    for key in ("exit_status", "mini_version"):
        if key in info:
            session.metadata[key] = info[key]
    # the ASF items (a synthesised call per fenced command) are not the messages as sent: context() reads the messages
    session.metadata["context_rebuildable"] = False
    swebench_result(b, path, run.instance_id)

    if options.steps:
        session.steps, rules = build_steps(session)
        session.metadata["step_rule"] = rules


def build_steps(session: Session) -> tuple[list[Step], list[str]]:
    """The steps (CodeTracer's ``miniswe`` rule for fenced commands, one per
    native tool call otherwise) and the rules that gave them."""
    evs = session.events
    results: dict[str, Event] = {}
    for e in evs:
        if e.kind == OBSERVATION and e.call_id and e.type in ("tool", "function_call_output") and e.call_id not in results:
            results[e.call_id] = e
    # the first user message with <returncode> at or after each position (one backward pass, not a scan per step)
    next_rc: list[Event | None] = [None] * (len(evs) + 1)
    for i in range(len(evs) - 1, -1, -1):
        o = evs[i]
        c = o.raw.get("content") if o.role == "user" and isinstance(o.raw, dict) else None
        next_rc[i] = o if isinstance(c, str) and "<returncode>" in c else next_rc[i + 1]
    steps: list[Step] = []
    rules: list[str] = []
    for i, e in enumerate(evs):
        if e.kind != ACTION:
            continue
        raw = e.raw
        if e.type == "assistant" and isinstance(raw, dict) and not raw.get("tool_calls"):
            content = raw.get("content")
            if not _has_fence(content):
                continue
            obs = next_rc[i + 1]
            call = e.tool_calls[0]
            steps.append(Step(
                step_id=len(steps) + 1,
                action=blank_safe(call.arguments["command"]),
                tool_type="bash",
                observation=obs.raw["content"] if obs is not None else "",
                thinking=_prose(content) or e.reasoning,
                action_ref=e.ref,
                observation_ref=obs.ref if obs is not None else None,
                action_event_id=e.id,
                observation_event_id=obs.id if obs is not None else None,
                usage=e.usage,
                model_usage=e.model_usage,
                extra={"call_id": call.call_id, "rule": "fence"},
            ))
            if "fence" not in rules:
                rules.append("fence")
            continue
        for n, tc in enumerate(e.tool_calls):
            o = results.get(tc.call_id) if tc.call_id else None
            steps.append(Step(
                step_id=len(steps) + 1,
                action=render_action(tc.name, tc.arguments, _SINGLE),
                tool_type=tc.name,
                observation=(o.text or "") if o is not None else "",
                thinking=(e.reasoning or (e.text if e.text and e.text.strip() else None)) if n == 0 else None,
                action_ref=e.ref,
                observation_ref=o.ref if o is not None else None,
                action_event_id=e.id,
                observation_event_id=o.id if o is not None else None,
                parallel_group=e.response_id if len(e.tool_calls) > 1 else None,
                usage=e.usage if n == 0 else None,
                model_usage=e.model_usage if n == 0 else None,
                extra={"call_id": tc.call_id, "rule": "tool_calls"},
            ))
            if "tool_calls" not in rules:
                rules.append("tool_calls")
    return steps, rules


def summarize(root: Path, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """The ``trajkit ls`` row of one ``.traj.json`` run."""
    return summary_row(read(Path(root), ReadOptions(max_file_bytes=max_file_bytes)), Path(root))


# ---------------------------------------------------------------- what the model saw


def _chat(e: Event) -> dict[str, Any] | None:
    m = e.raw
    if not isinstance(m, dict):
        return None
    if e.type == "response":
        out: dict[str, Any] = {"role": "assistant", "content": e.text}
        if e.tool_calls:
            out["tool_calls"] = [{"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": m_args}}
                                 for c, m_args in ((c, c.arguments if isinstance(c.arguments, str) else _json(c.arguments)) for c in e.tool_calls)]
        return out
    if e.type == "function_call_output":
        return {"role": "tool", "tool_call_id": e.call_id, "content": e.text}
    if not isinstance(m.get("role"), str):
        return None
    out = {k: v for k, v in m.items() if k != "extra"}
    return out


def _json(v: Any) -> str:
    from ...jsonio import dumps_python

    return dumps_python(v)


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw on each call: the messages before each assistant
    message, as recorded (mini-swe-agent keeps the whole conversation; the
    ``extra`` member, which trajkit's reader and not the model sees, is left out)."""
    msgs: list[dict[str, Any]] = []
    out = []
    convo = [e for e in session.events if isinstance(e.id, str) and e.id.startswith("messages[")]
    if not convo:
        raise TrajkitError(f"{session.source_path}: no messages: what the model saw is not recorded")
    for e in convo:
        m = _chat(e)
        if m is None:
            continue
        if m.get("role") == "assistant" and (at is None or at == e.id):
            out.append({"llm_response_id": e.response_id, "event_id": e.id, "messages": list(msgs)})
        msgs.append(m)
    return out
