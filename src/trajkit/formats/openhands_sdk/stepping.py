"""Steps of an SDK conversation at CodeTraceBench granularity, and which
step spawned each sub-agent.

One step per action event on the active branch that an answer (an
observation, a user reject or an agent error) answers, first answer wins,
matched by the answer's ``action_id`` and else by tool call id. Rendering
follows the V0 rule (:mod:`trajkit.steps`): the terminal tool renders as its
command, think as its thought, anything else as ``<tool>(<arguments JSON>)``
over the arguments the model wrote.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from orjson import JSONDecodeError, loads

from ...diagnostics import INFO
from ...jsonio import dumps_python
from ...model import Session, SpawnLink, Step
from ...steps import blank_safe, render_action
from ...vocab.openhands import SDK_TOOLS
from .fields import action_call, action_kind, action_reasoning, answer_text, response_id_of, texts
from .fields import usage_of as _usage_of
from .tree import ABANDONED

_ANSWER_TYPES = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})

#: Tools whose rendering is one argument, as in V0.
SINGLE_ARGUMENT_TOOLS = SDK_TOOLS.single_argument()
#: Action kinds standing in for a missing tool name.
_TOOL_OF_ACTION_KIND = {
    "TerminalAction": "terminal",
    "FileEditorAction": "file_editor",
    "TaskTrackerAction": "task_tracker",
    "FinishAction": "finish",
    "ThinkAction": "think",
    "TaskAction": "task",
    "DelegateAction": "delegate",
}
_SPAWNING_TOOLS = ("task", "delegate")


#: ``json.dumps(args, ensure_ascii=False)``, byte for byte, with one encoder built once.
_encode_args = dumps_python


def render_step_action(name: str, args: Any) -> str:
    """The step text of an action, by :func:`trajkit.steps.render_action`'s
    rule with :data:`SINGLE_ARGUMENT_TOOLS`; the common ``<tool>(<args>)``
    case is encoded with one C encoder built once (same text as
    ``json.dumps(args, ensure_ascii=False)``, no per-call encoder construction)."""
    if type(args) is dict:
        key = SINGLE_ARGUMENT_TOOLS.get(name)
        if key is not None:
            value = args.get(key)
            if type(value) is str:
                return blank_safe(value)
            return render_action(name, args, single=SINGLE_ARGUMENT_TOOLS)
        if "thought" in args:
            args = {k: v for k, v in args.items() if k != "thought"}
        try:
            return f"{name}({_encode_args(args)})"
        except (TypeError, ValueError):
            pass
    return render_action(name, args if args is not None else {}, single=SINGLE_ARGUMENT_TOOLS)


def _ts(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    return dt.replace(tzinfo=None)


class Pairing(NamedTuple):
    """Actions and their answers as the first pass of :func:`build_steps`
    pairs them, when the reader made the pairing as it read (a log with no
    ACP tool calls): positions in ``Session.events``."""

    order: list[int]  # every ActionEvent, in order
    answer_of: dict[int, int]  # action -> its first answer
    extra_answers: list[tuple[int, int]]  # (answer, action) of later answers, in order
    batch_size: dict[str, int]  # actions per LLM response id


#: Where a step's usage comes from (the state's per-response metrics).
STEP_USAGE_SOURCE = "base_state usage_to_metrics"


def build_steps(s: Session, places: list[str] | None = None, pairing: Pairing | None = None,
                usages: dict[str, Any] | None = None) -> None:
    """Fill ``s.steps`` (and match ``s.children`` to the steps that spawned them).

    Answers carry ``cause`` (the reader sets it from ``action_id``, else from
    the tool call id), so pairing is one pass. ``places`` is each event's
    ``branch`` when the caller has them at hand; ``pairing`` the
    pairing the reader made as it read (used when no event is off the
    active branch); ``usages``: the :class:`~trajkit.model.Usage` the reader
    made per response id for the response's first event, shared with the
    step (made here when absent). The facts of
    actions and answers are read from their decoded JSON with the reader's
    own functions, so building steps derives no field of a lazily built
    event (ACP tool calls excepted).
    """
    events = s.events
    check_branch = bool(s.metadata.get("abandoned_event_ids"))
    if check_branch and places is None:
        places = [ev.branch for ev in events]
    action_at: dict[Any, int] = {}
    answer_of: dict[int, int] = {}
    acp_groups: dict[str, list[int]] = {}
    order: list[int] = []
    batch_size: dict[str, int] = {}
    if pairing is not None and not check_branch:
        order, answer_of, extra, batch_size = pairing
        for j, target in extra:
            ev = events[j]
            s.diag("sdk.extra-answer", f"action already answered by {events[answer_of[target]].id}; this answer is not a step's", INFO, file=ev.ref.path if ev.ref else None, event_id=ev.id)
    for i, ev in enumerate(events if pairing is None or check_branch else ()):
        if check_branch and places[i] == ABANDONED:  # type: ignore[index]
            continue
        t = ev.type
        if t == "ActionEvent":
            order.append(i)
            if ev.id not in action_at:
                action_at[ev.id] = i
            rid = ev.raw.get("llm_response_id")
            if rid and type(rid) is str:
                batch_size[rid] = batch_size.get(rid, 0) + 1
        elif t in _ANSWER_TYPES:
            target = action_at.get(ev.cause)
            if target is None:
                continue
            if target in answer_of:
                s.diag("sdk.extra-answer", f"action already answered by {events[answer_of[target]].id}; this answer is not a step's", INFO, file=ev.ref.path if ev.ref else None, event_id=ev.id)
                continue
            answer_of[target] = i
        elif t == "ACPToolCallEvent":
            key = ev.call_id or ev.id
            if key not in acp_groups:
                acp_groups[key] = []
                order.append(i)
            acp_groups[key].append(i)
    steps: list[Step] = []
    unanswered: list[Any] = []
    first_step_of_response: dict[str, int] = {}
    usage_of = s.metadata.get("usage_by_response") or {}
    for i in order:
        ev = events[i]
        if ev.type == "ACPToolCallEvent":
            group = acp_groups[ev.call_id or ev.id]
            last = events[group[-1]]
            call = ev.tool_calls[0]
            step = Step(
                len(steps) + 1,
                render_action(call.name, call.arguments if call.arguments is not None else {}, single={}),
                call.name,
                last.extra.get("acp_output") or "",
                None,
                ev.ref,
                last.ref,
                ev.id,
                last.id,
            )
            step.extra["acp"] = True
            steps.append(step)
            continue
        j = answer_of.get(i)
        if j is None:
            unanswered.append(ev.id)
            continue
        ans = events[j]
        raw = ev.raw
        # action_call(raw), inlined for a tool call with a name and JSON arguments
        tc = raw.get("tool_call")
        name = args = None
        if type(tc) is dict:
            name = tc.get("name")
            a = tc.get("arguments")
            if type(name) is str and name and name != "?" and type(a) is str:
                try:
                    args = loads(a)
                except JSONDecodeError:
                    name = None
            else:
                name = None
        if name is None:
            name, args, _ = action_call(raw)
            if not name or name == "?":
                kind = action_kind(raw) or "?"
                name = _TOOL_OF_ACTION_KIND.get(kind, kind)
        # thinking_of(name, {"thought": thought}), then the reasoning, inlined
        if name == "think":
            thinking = None
        else:
            thinking = texts(raw.get("thought"), "\n")
            if not (thinking and thinking.strip()):
                thinking = action_reasoning(raw) or None
        at = ans.type
        if at == "ObservationEvent":
            obs = ans.raw.get("observation")
            out = texts(obs.get("content"), "") if type(obs) is dict else ""
        else:
            out = answer_text(ans.raw, at) or ""
        step = Step(
            len(steps) + 1,
            render_step_action(name, args),
            name,
            out,
            thinking,
            ev.ref,
            ans.ref,
            ev.id,
            ans.id,
        )
        rid = raw.get("llm_response_id")
        if rid and type(rid) is str:
            if batch_size[rid] > 1:
                step.parallel_group = rid
            first = first_step_of_response.get(rid)
            if first is not None:
                step.extra["usage_shared_with_step"] = first
            else:
                first_step_of_response[rid] = step.step_id
                u = usage_of.get(rid)
                if u is not None:
                    step.usage = u  # the first event of the response holds the same entry
                    cost = u.get("cost")
                    if type(cost) is float or type(cost) is int:
                        step.cost = cost
                    mu = usages.get(rid) if usages is not None else None
                    step.model_usage = mu if mu is not None else _usage_of(u, STEP_USAGE_SOURCE)
        if at != "ObservationEvent":
            step.extra["answer"] = "user_reject" if at == "UserRejectObservation" else "agent_error"
        steps.append(step)
    s.steps = steps
    s.metadata["actions_without_observation"] = unanswered
    if s.children:
        match_children(s)


def _child_prompt(child: Session) -> str | None:
    for ev in child.events:
        if ev.type == "MessageEvent" and ev.role == "user":
            return ev.text
    return None


def _step_prompts(step: Step, by_id: dict[Any, Any]) -> list[str]:
    ev = by_id.get(step.action_event_id)
    if ev is None or not ev.tool_calls:
        return []
    args = ev.tool_calls[0].arguments
    out = []
    if isinstance(args, dict):
        if isinstance(args.get("prompt"), str):
            out.append(args["prompt"])
        for t in args.get("tasks") or [] if isinstance(args.get("tasks"), list) else []:
            if isinstance(t, str):
                out.append(t)
            elif isinstance(t, dict):
                for k in ("prompt", "task", "description"):
                    if isinstance(t.get(k), str):
                        out.append(t[k])
    return out


def match_children(s: Session) -> None:
    """Attach each child session to the step whose action spawned it, saying how.

    In order: ``usage-metrics`` (the parent's ``task:<task_id>`` metrics list
    the child's response ids, and the step's TaskObservation has that
    task_id), ``prompt`` (the child's first user message is the action's
    prompt; nearest in time wins), ``timestamp`` (the child started between
    the action and its answer).
    """
    by_response = s.metadata.get("usage_by_response", {})
    task_steps: dict[str, Step] = {}
    spawn_steps: list[Step] = []
    by_id: dict[Any, Any] = {}  # Session.event_by_id for every step: the first event of each id
    for e in s.events:
        by_id.setdefault(e.id, e)
    for st in s.steps:
        if st.tool_type in _SPAWNING_TOOLS:
            spawn_steps.append(st)
        obs = by_id.get(st.observation_event_id)
        if obs is not None and isinstance(obs.raw, dict):
            o = obs.raw.get("observation")
            if isinstance(o, dict) and isinstance(o.get("task_id"), str):
                task_steps[o["task_id"]] = st
                if st not in spawn_steps:
                    spawn_steps.append(st)
    for child in s.children:
        rids = list(dict.fromkeys(rid for e in child.events if (rid := response_id_of(e.raw, e.type))))
        match: tuple[Step, str, str] | None = None
        for rid in rids:
            uid = (by_response.get(rid) or {}).get("usage_id")
            if isinstance(uid, str) and uid.startswith("task:") and uid[5:] in task_steps:
                match = (task_steps[uid[5:]], "usage-metrics", f"parent stats {uid!r} lists response {rid}")
                break
        if match is None:
            # (asked only now: the start derives the child's first event, often its long system prompt)
            start = _ts(child.events[0].timestamp) if child.events else None
            prompt = _child_prompt(child)
            cands = [st for st in spawn_steps if prompt is not None and prompt in _step_prompts(st, by_id)]
            if cands:
                if start is not None and len(cands) > 1:
                    cands.sort(key=lambda st: abs(((_ts(_event_ts(by_id, st.action_event_id)) or start) - start).total_seconds()))
                match = (cands[0], "prompt", "the child's first user message is the action's prompt")
            elif start is not None:
                for st in spawn_steps:
                    a, o = _ts(_event_ts(by_id, st.action_event_id)), _ts(_event_ts(by_id, st.observation_event_id))
                    if a is not None and o is not None and a <= start <= o:
                        match = (st, "timestamp", "the child started between the action and its answer")
                        break
        if match is None:
            s.diag("sdk.child-unmatched", f"sub-agent {child.id} could not be tied to an action; kept as a child of the conversation", INFO, file=child.source_path)
            continue
        st, method, detail = match
        st.children.append(child)
        st.extra.setdefault("child_match", []).append({"child_id": child.id, "method": method, "detail": detail})
        child.spawned_by = SpawnLink(child.id, st.step_id, st.action_event_id, method, detail)
        child.metadata["spawned_by"] = {"step_id": st.step_id, "action_event_id": st.action_event_id, "method": method}


def _event_ts(by_id: dict[Any, Any], event_id: Any) -> str | None:
    ev = by_id.get(event_id)
    return ev.timestamp if ev is not None else None
