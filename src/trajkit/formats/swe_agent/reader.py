"""The SWE-agent reader (see the package docstring: :mod:`trajkit.formats.swe_agent`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING, dumps_python, loads
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
    TrialResult,
    TrajkitError,
)
from ...reading import fs
from ...reading.builder import SessionBuilder
from ...reading.listing import session_row
from ...reading.probe import Probe
from ...steps import blank_safe
from ...vocab.swe_agent import SWE_AGENT_TOOLS, text_call
from ...vocab.swebench import SWE_BENCH, report_candidates, report_record
from ...vocab.trials import HARBOR, find_verifier_dir, trial_outcome
from .detect import HARBOR_COPY, NAME, SUFFIX, _traj_files

_DEMO_MARKER = "--- DEMONSTRATION ---"

#: ``info.exit_status`` values (the part inside ``submitted (...)`` for an
#: auto-submission) that mean a cap was hit, and those that mean an external block.
BUDGET_STATUSES = frozenset({
    "exit_cost", "exit_context", "exit_total_execution_time", "exit_command_timeout", "exit_step_limit",
    "exit_steps", "exit_max_steps", "exit_timeout",
})
BLOCKED_STATUSES = frozenset({
    "exit_format", "exit_error", "exit_environment_error", "exit_api", "exit_blocklist", "early_exit",
})
#: The agent ended on its own without submitting.
GAVE_UP_STATUSES = frozenset({"exit_forfeit", "exit_command"})


# ---------------------------------------------------------------- reading helpers


def _text(content: Any) -> str | None:
    """A history item's content as text (1.x content may be a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def _is_demo(item: dict[str, Any]) -> bool:
    if item.get("is_demo") is True or item.get("message_type") == "demonstration":
        return True
    c = item.get("content")
    return isinstance(c, str) and _DEMO_MARKER in c


def _state(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's ``state`` (a dict in 1.x, a JSON string in 0.x), or {}."""
    st = entry.get("state")
    if isinstance(st, str):
        try:
            st = orjson.loads(st)
        except orjson.JSONDecodeError:
            return {}
    return st if isinstance(st, dict) else {}


def _open_file(state: dict[str, Any]) -> str | None:
    f = state.get("open_file")
    return f if isinstance(f, str) and f and f != "n/a" else None


def _mapping(v: Any) -> dict[str, Any]:
    if isinstance(v, str):
        try:
            v = orjson.loads(v)
        except orjson.JSONDecodeError:
            v, _ = loads(v)
    return v if isinstance(v, dict) else {}


def exit_outcome(status: Any, evidence: list[dict[str, Any]]) -> Outcome:
    """The engine outcome of a SWE-agent / mini-swe-agent ``exit_status``."""
    if not isinstance(status, str) or not status.strip():
        return Outcome(False, status=None, signal="no exit_status: the run ended without its own end signal", evidence=evidence)
    s = status.strip()
    low = s.lower()
    inner = low[len("submitted ("):-1].strip() if low.startswith("submitted (") and low.endswith(")") else None
    key = inner if inner is not None else low
    auto = " (auto-submitted)" if inner is not None else ""
    if key in ("submitted",):
        return Outcome(True, status=s, signal=f"exit_status {s}", claimed_success=True, evidence=evidence)
    if key in BUDGET_STATUSES or key in ("limitsexceeded", "timeoutexpired"):
        return Outcome(False, budget_exhausted=True, status=s, signal=f"exit_status {s}{auto}", evidence=evidence)
    if key in BLOCKED_STATUSES or key.startswith("exit due to") or key in ("formaterror", "executiontimeouterror"):
        return Outcome(False, external_error=f"exit_status {s}", status=s, signal=f"exit_status {s}{auto}", evidence=evidence)
    if key in GAVE_UP_STATUSES:
        return Outcome(True, status=s, signal=f"exit_status {s}: the agent stopped without submitting", evidence=evidence)
    return Outcome(False, status=s, signal=f"exit_status {s}: not a known end signal", evidence=evidence)


def swebench_result(b: SessionBuilder, run_file: str, instance_id: str | None) -> None:
    """Put a SWE-bench ``report.json`` found beside the run into ``session.run.results``."""
    for p in report_candidates(run_file, instance_id):
        if not fs.isfile(p):
            continue
        doc, sf = b.read_json(p, "results")
        if doc is MISSING:
            return
        rec = report_record(doc, instance_id)
        if rec is None:
            sf.status = "ignored"
            sf.note = "a report.json that is no SWE-bench instance report"
            continue
        b.session.run.results.append(TrialResult(SWE_BENCH, p, rec))
        b.session.metadata["swebench_report"] = {"path": p, "resolved": rec.get("resolved")}
        return


def _harbor(b: SessionBuilder, trial: Path) -> None:
    """A harbor trial around the run: ``result.json`` (its exception is the end
    signal when there is one) and ``verifier/`` (the gate)."""
    session = b.session
    session.run.benchmark = session.run.benchmark or "harbor"
    session.run.verifier_dir = find_verifier_dir(str(trial))
    res = trial / "result.json"
    if fs.isfile(res):
        doc, _sf = b.read_json(res, "results")
        if isinstance(doc, dict):
            session.run.results.append(TrialResult(HARBOR, str(res), doc))
            o = session.outcome
            got = trial_outcome(session.run.results, o.claimed_success if o else False, list(o.evidence) if o else [])
            if got is not None:
                session.outcome = got


# ---------------------------------------------------------------- reading


def read(root: Path, options: ReadOptions | None = None) -> Session:
    """The SWE-agent run in ``root``: a ``.traj`` file, a folder holding exactly
    one, or a harbor trial (``agent/swe-agent.trajectory.json``)."""
    options = options or ReadOptions()
    root = Path(root)
    probe = Probe()
    if probe.is_dir(root) and probe.is_file(root / "agent" / HARBOR_COPY):
        root = root / "agent" / HARBOR_COPY
    if probe.is_dir(root):
        trajs = _traj_files(probe, root)
        if len(trajs) != 1:
            b = SessionBuilder(NAME, root, options, probe=probe)
            code = "swe-agent.no-traj" if not trajs else "swe-agent.several-trajs"
            b.diag(code, f"{len(trajs)} .traj files in the folder; a run is one .traj file", ERROR)
            return b.finish() if not trajs else b.session
        root = root / trajs[0]
    b = SessionBuilder(NAME, root, options, view="trajectory", probe=probe)
    session = b.session
    path = str(root)
    session.id = root.name[: -len(SUFFIX)] if root.name.endswith(SUFFIX) else root.name
    run = session.run
    run.harness = NAME
    run.instance_id = session.id
    harbor_trial = root.parent.parent if root.name == HARBOR_COPY and root.parent.name == "agent" else None
    if harbor_trial is not None:
        session.id = run.trial_id = harbor_trial.name
        run.instance_id = None
    doc, src = b.read_json(root, "events")
    if doc is MISSING:
        return session
    if not isinstance(doc, dict):
        b.diag("swe-agent.not-an-object", f"the file holds a JSON {type(doc).__name__}, not a trajectory object", ERROR, file=path)
        ev = Event("document", OTHER, "document", doc, ref=Ref(path, "document"))
        session.events.append(ev)
        src.event_ids.append(ev.id)
        return session

    prefix = ""
    attempts = doc.get("attempts")
    chosen = doc
    others: list[tuple[str, Any]] = []
    if isinstance(attempts, list) and attempts:
        info0 = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        best = info0.get("best_attempt_idx")
        if "trajectory" in doc or "history" in doc:
            # the chosen attempt is merged at the top level; every attempt rides along
            others = [(f"attempts[{k}]", a) for k, a in enumerate(attempts)]
        else:
            k = best if isinstance(best, int) and not isinstance(best, bool) and 0 <= best < len(attempts) else len(attempts) - 1
            if k != best:
                b.diag("swe-agent.retry-attempt", f"RetryAgent file without a usable best_attempt_idx ({best!r}); read the last attempt", INFO, file=path)
            chosen = attempts[k] if isinstance(attempts[k], dict) else {}
            prefix = f"attempts[{k}]."
            others = [(f"attempts[{j}]", a) for j, a in enumerate(attempts) if j != k]
            top = {key: v for key, v in doc.items() if key != "attempts"}
            if top:
                session.metadata["retry_members"] = top
        session.metadata["retry_attempts"] = len(attempts)
        session.metadata["attempt_read"] = prefix[:-1] if prefix else "top level (merged best attempt)"
    elif attempts is not None and not isinstance(attempts, list):
        b.diag("swe-agent.bad-record", f"attempts is a JSON {type(attempts).__name__}, not a list; kept as it is", WARNING, file=path, event_id="attempts")
        others = [("attempts", attempts)]

    events = session.events
    ids = src.event_ids

    def add(ev: Event) -> Event:
        events.append(ev)
        ids.append(ev.id)
        return ev

    history = chosen.get("history")
    if history is None:
        history = []
    elif not isinstance(history, list):
        b.diag("swe-agent.bad-history", f"history is a JSON {type(history).__name__}, not a list; what the model saw is unknown", WARNING, file=path, event_id=prefix + "history")
        add(Event(prefix + "history", OTHER, "history", history, ref=Ref(path, prefix + "history")))
        history = []
    trajectory = chosen.get("trajectory", MISSING)
    reconstruct = trajectory is MISSING
    if reconstruct:
        if history:
            b.diag("swe-agent.history-only", "no trajectory (a demonstration holding only history): steps rebuilt from the "
                   "assistant tool calls and their results; the CodeTraceBench rule refuses such files", INFO, file=path)
            session.metadata["steps_source"] = "history (reconstructed: no trajectory)"
        else:
            b.diag("swe-agent.bad-trajectory", "neither trajectory nor history: nothing to read", ERROR, file=path)
        trajectory = []
    elif not isinstance(trajectory, list):
        b.diag("swe-agent.bad-trajectory", f"trajectory is a JSON {type(trajectory).__name__}, not a list; no steps", ERROR, file=path, event_id=prefix + "trajectory")
        add(Event(prefix + "trajectory", OTHER, "trajectory", trajectory, ref=Ref(path, prefix + "trajectory")))
        trajectory = []
    else:
        session.metadata["steps_source"] = "trajectory"

    # -- history: the preamble (before the first assistant message) is the conversation's start
    first_assistant = next((k for k, h in enumerate(history) if isinstance(h, dict) and h.get("role") == "assistant"), len(history))
    assistants: list[dict[str, Any]] = []  # assistant history items after the preamble, in order (tool call ids)
    task: str | None = None
    later: list[tuple[int, Any]] = []
    for k, h in enumerate(history):
        hid = f"{prefix}history[{k}]"
        if not isinstance(h, dict):
            b.diag("swe-agent.bad-record", f"history item {k} is a JSON {type(h).__name__}, not an object; kept as it is", WARNING, file=path, event_id=hid)
            later.append((k, h))
            continue
        role = h.get("role")
        if task is None and role == "user" and not _is_demo(h):
            t = _text(h.get("content"))
            if t is not None and t.strip():
                task = t.strip()
        if role == "assistant":
            assistants.append(h)
        if k >= first_assistant and not reconstruct:
            later.append((k, h))
            continue
        text = _text(h.get("content"))
        if role == "system":
            add(Event(hid, SYSTEM, "system", h, source="agent", role="system", text=text, ref=Ref(path, hid)))
        elif role == "assistant":  # reconstruct mode: the action itself
            calls = []
            for tc in h.get("tool_calls") or []:
                fn = tc.get("function") if isinstance(tc, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    args = fn.get("arguments")
                    calls.append(SWE_AGENT_TOOLS.call(fn["name"], args, tc.get("id") if isinstance(tc.get("id"), str) else None,
                                                      lazy_json=isinstance(args, str)))
            thought = h.get("thought") if isinstance(h.get("thought"), str) and h["thought"].strip() else None
            add(Event(hid, ACTION if calls else MESSAGE, "assistant", h, source="agent", role="assistant",
                      text=text if text != thought else None, reasoning=thought, tool_calls=calls, response_id=hid, ref=Ref(path, hid)))
        elif role == "tool":
            cids = h.get("tool_call_ids")
            cid = cids[0] if isinstance(cids, list) and cids and isinstance(cids[0], str) else None
            add(Event(hid, OBSERVATION, "tool", h, source="environment", role="tool", text=text or "", call_id=cid, ref=Ref(path, hid)))
        else:
            ev = add(Event(hid, MESSAGE, str(role or "message"), h, source="user" if role == "user" else None,
                           role=role if isinstance(role, str) else None, text=text, ref=Ref(path, hid)))
            if _is_demo(h):
                ev.extra["demonstration"] = True
    if task is not None:
        session.task, session.task_source = task, "history (first user message that is no demonstration)"

    # -- trajectory: one action + one observation per entry, one step per entry
    steps: list[Step] = []
    fc_items = [h for h in assistants if isinstance(h.get("tool_calls"), list) and h["tool_calls"]]
    function_calling = bool(fc_items) and not reconstruct
    if function_calling:
        session.metadata["mode"] = "function calling"
    elif not reconstruct:
        session.metadata["mode"] = "text commands"
    for i, entry in enumerate(trajectory):
        aid = f"{prefix}trajectory[{i}]"
        ref = Ref(path, aid)
        if not isinstance(entry, dict):
            b.diag("swe-agent.bad-record", f"trajectory entry {i} is a JSON {type(entry).__name__}, not an object; "
                   "counted as a step, kept as it is", WARNING, file=path, event_id=aid)
            add(Event(aid, OTHER, "trajectory", entry, ref=ref))
            steps.append(Step(len(steps) + 1, blank_safe(dumps_python(entry)), "unknown", "",
                              action_ref=ref, action_event_id=aid))
            continue
        raw_action = entry.get("action")
        action_text = raw_action if isinstance(raw_action, str) else dumps_python(raw_action)
        obs = entry.get("observation")
        if obs is None or isinstance(obs, str):
            obs_text = obs or ""
        else:
            b.diag("swe-agent.bad-observation", f"observation of entry {i} is a JSON {type(obs).__name__}, not a string; shown as JSON",
                   WARNING, file=path, event_id=aid)
            obs_text = dumps_python(obs)
        thought = entry.get("thought")
        thinking = thought if isinstance(thought, str) and thought.strip() else None
        response = entry.get("response")
        text = response if isinstance(response, str) and response.strip() and response != thought else None
        state = _state(entry)
        call = None
        if action_text.strip():
            h = fc_items[i] if function_calling and i < len(fc_items) else None
            fn = None
            if h is not None and h.get("action") in (None, raw_action):
                tc = h["tool_calls"][0]
                fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                args = fn.get("arguments")
                name = fn["name"]
                spec = SWE_AGENT_TOOLS.spec(name)
                inp = None
                if spec.op == "edit" and _open_file(state):
                    # the windowed editor edits the open file: name it for certify
                    decoded = _mapping(args)
                    if decoded or not isinstance(args, str):
                        args = decoded
                    inp = decoded if "path" in decoded else {**decoded, "path": _open_file(state)}
                call = SWE_AGENT_TOOLS.call(name, args, tc.get("id") if isinstance(tc.get("id"), str) else f"call_{i + 1}",
                                            lazy_json=isinstance(args, str), input=inp)
            else:
                call = text_call(action_text, f"call_{i + 1}", _open_file(state))
        act = add(Event(aid, ACTION if call is not None else MESSAGE, "trajectory", entry, source="agent", role="assistant",
                        text=text, reasoning=thinking, tool_calls=[call] if call is not None else [], response_id=aid, ref=ref))
        oid = aid + ".observation"
        cwd = state.get("working_dir")
        o = add(Event(oid, OBSERVATION if call is not None else MESSAGE, "observation", obs, source="environment",
                      role="tool" if call is not None else "user", text=obs_text, call_id=call.call_id if call is not None else None,
                      cause=aid, ref=Ref(path, oid), cwd=cwd if isinstance(cwd, str) and cwd.startswith("/") else None))
        steps.append(Step(
            step_id=len(steps) + 1,
            action=blank_safe(action_text),
            tool_type=call.name if call is not None else "",
            observation=obs_text,
            thinking=thinking,
            action_ref=ref,
            observation_ref=o.ref,
            action_event_id=act.id,
            observation_event_id=o.id,
            extra={"call_id": call.call_id} if call is not None else {},
        ))

    for k, h in later:
        hid = f"{prefix}history[{k}]"
        role = h.get("role") if isinstance(h, dict) else None
        add(Event(hid, OTHER, f"history.{role}" if isinstance(role, str) else "history", h, ref=Ref(path, hid)))

    # -- info: the end signal, the submission, the cost
    info = chosen.get("info")
    if info is not None and not isinstance(info, dict):
        b.diag("swe-agent.bad-info", f"info is a JSON {type(info).__name__}, not an object; no end signal", WARNING, file=path, event_id=prefix + "info")
    iid = prefix + "info"
    if info is not None:
        ev = add(Event(iid, STATE, "info", info, source="environment", ref=Ref(path, iid)))
        if isinstance(info, dict):
            sub = info.get("submission")
            if isinstance(sub, str) and "diff --git" in sub:
                ev.edit = FileEdit(None, patch=sub, final=True)
    info = info if isinstance(info, dict) else {}
    if "exit_status" not in info and not reconstruct:
        b.diag("swe-agent.no-exit-status", "info has no exit_status: the run's end signal is unknown", INFO, file=path)
    if not reconstruct or "exit_status" in info:
        session.outcome = exit_outcome(info.get("exit_status"), [{"event_id": iid, "file": path}])
    stats = info.get("model_stats")
    if isinstance(stats, dict):
        session.metadata["model_stats"] = stats
        cost = stats.get("instance_cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            run.cost_usd = float(cost)
    for key in ("exit_status", "swe_agent_version", "swe_rex_version"):
        if key in info:
            session.metadata[key] = info[key]
    if isinstance(info.get("swe_agent_version"), str):
        run.harness_version = info["swe_agent_version"]

    # -- the other members ride along in the metadata
    members = {k: v for k, v in chosen.items() if k not in ("trajectory", "history", "info", "attempts")}
    if members:
        session.metadata["members"] = members
    replay = _mapping(chosen.get("replay_config"))
    agent_cfg = replay.get("agent") if isinstance(replay.get("agent"), dict) else {}
    model_cfg = agent_cfg.get("model") if isinstance(agent_cfg.get("model"), dict) else {}
    model = model_cfg.get("name") or model_cfg.get("model_name")
    if isinstance(model, str):
        run.models = [model]
        session.metadata["model"] = model
    ps = replay.get("problem_statement")
    if isinstance(ps, dict) and isinstance(ps.get("id"), str):
        run.instance_id = ps["id"]
    if isinstance(agent_cfg.get("type"), str):
        run.agent = agent_cfg["type"]
    session.metadata["context_rebuildable"] = False  # the trajectory is not the history byte for byte: context() reads history
    for oid_, val in others:
        add(Event(oid_, OTHER, "attempt", val, ref=Ref(path, oid_)))
    swebench_result(b, path, run.instance_id)
    if harbor_trial is not None:
        _harbor(b, harbor_trial)

    if options.steps:
        if reconstruct:
            from ...reading.pairing import pair_by_call_id

            steps = pair_by_call_id(session, SWE_AGENT_TOOLS.single_argument())
        session.steps = steps
    return session


def summary_row(session: Session, root: Path) -> dict[str, Any]:
    """A ``trajkit ls`` row (one file is the whole run: its time is the last update)."""
    import datetime as _dt

    st = Probe().stat(session.source_path)
    o = session.outcome
    title = (session.task or "").strip().splitlines()[0][:120] if session.task else None
    updated = _dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc).isoformat().replace("+00:00", "Z") if st else None
    return session_row(session, title=title, status=o.status if o is not None else None, updated=updated,
                       diagnostics=[d.to_dict() for d in session.diagnostics])


def summarize(root: Path, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """The ``trajkit ls`` row of one ``.traj`` run."""
    return summary_row(read(Path(root), ReadOptions(max_file_bytes=max_file_bytes)), Path(root))


# ---------------------------------------------------------------- what the model saw


def _chat(h: Any) -> dict[str, Any] | None:
    if not isinstance(h, dict):
        return None
    role = h.get("role")
    m: dict[str, Any] = {"role": role if isinstance(role, str) else "user", "content": h.get("content")}
    if isinstance(h.get("tool_calls"), list) and h["tool_calls"]:
        m["tool_calls"] = h["tool_calls"]
    if role == "tool":
        cids = h.get("tool_call_ids")
        if isinstance(cids, list) and cids:
            m["tool_call_id"] = cids[0]
    return m


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw on each call: the ``history`` items before each
    assistant item, as chat messages (``is_demo`` demonstrations included, as
    SWE-agent sent them)."""
    items = [e for e in session.events if isinstance(e.id, str) and "history[" in e.id and e.ref is not None]
    if not items:
        raise TrajkitError(f"{session.source_path}: no history in this trajectory: what the model saw is not recorded")
    out = []
    msgs: list[dict[str, Any]] = []
    for e in items:
        m = _chat(e.raw)
        if m is None:
            continue
        if m["role"] == "assistant" and (at is None or at == e.id):
            out.append({"llm_response_id": e.id, "event_id": e.id, "messages": list(msgs)})
        msgs.append(m)
    return out
