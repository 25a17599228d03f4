"""Default step builders: which events make a step, and what each step shows.

A step is one agent action together with the environment's answer to it (the
benchmark granularity of :mod:`trajkit.steps`). Formats link answers to
actions in one of two ways, and each has a builder here:

- :func:`pair_by_call_id`: a tool result carries the ``call_id`` of the tool
  call it answers (OpenAI-style chat logs, rollout traces, Claude Code, Codex).
  One step per tool call that some result answers, in call order.
- :func:`pair_by_cause`: an answer names the id of the event it answers in
  ``Event.cause`` (OpenHands V0 and SDK event streams). One step per event
  that some answer names.

In both, the first answer wins and an action nobody answers is not a step.
OpenHands V0 and SDK keep their own builders where CodeTraceBench's
byte-exact rendering needs the native arguments; these two are the default
for a new format.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..model import ACTION, OBSERVATION, Event, Session, Step, ToolCall
from ..steps import render_action

#: ``render(tool_call) -> str``: the text of a step's action.
Render = Callable[[ToolCall], str]


def _thought(e: Event) -> str | None:
    if e.reasoning and e.reasoning.strip():
        return e.reasoning
    if e.text and e.text.strip():
        return e.text
    return None


def pair_by_call_id(
    session: Session,
    single_argument: Mapping[str, str] | None = None,
    render: Render | None = None,
) -> list[Step]:
    """One step per tool call that an observation answers (same ``call_id``).

    Steps follow the order of the calls; the first observation carrying a
    call id answers it. Calls of one model response that are answered
    together share a ``parallel_group`` (the response id, else the event
    id); the first of them carries the event's reasoning (or text) as
    ``thinking`` and its ``usage``. ``single_argument`` maps a tool name to
    the one argument its action renders as (``{"bash": "command"}``);
    ``render`` replaces the rendering altogether.
    """
    obs: dict[str, Event] = {}
    for e in session.events:
        if e.kind == OBSERVATION and e.call_id and e.call_id not in obs:
            obs[e.call_id] = e
    steps: list[Step] = []
    for e in session.events:
        if e.kind != ACTION:
            continue
        answered = [tc for tc in e.tool_calls if tc.call_id in obs]
        thought = _thought(e)
        for k, tc in enumerate(answered):
            o = obs[tc.call_id]  # type: ignore[index]
            steps.append(Step(
                step_id=len(steps) + 1,
                action=render(tc) if render is not None else render_action(tc.name, tc.arguments, single_argument),
                tool_type=tc.name,
                observation=o.text or "",
                thinking=thought if k == 0 else None,
                action_ref=e.ref,
                observation_ref=o.ref,
                action_event_id=e.id,
                observation_event_id=o.id,
                parallel_group=e.response_id or e.id if len(answered) > 1 else None,
                usage=e.usage if k == 0 else None,
                extra={"call_id": tc.call_id},
                model_usage=e.model_usage if k == 0 else None,
            ))
    return steps


def pair_by_cause(
    session: Session,
    single_argument: Mapping[str, str] | None = None,
    render: Callable[[Event], str] | None = None,
) -> list[Step]:
    """One step per event that some later-or-earlier event names as its
    ``cause``, in event order; the first answer wins, and an event id seen
    twice makes one step (the first).

    The action renders from the event's first tool call (its name and
    arguments), or from its type when it has none; ``render(event)``
    replaces that. ``thinking`` is the event's reasoning, else its text.
    """
    answer: dict[Any, Event] = {}
    for e in session.events:
        c = e.cause
        if c is not None and c not in answer:
            answer[c] = e
    steps: list[Step] = []
    done: set[Any] = set()
    for e in session.events:
        if e.cause is not None or e.id in done:
            continue
        o = answer.get(e.id)
        if o is None or o is e:
            continue
        done.add(e.id)
        if render is not None:
            action = render(e)
            tool = e.tool_calls[0].name if e.tool_calls else e.type
        elif e.tool_calls:
            tc = e.tool_calls[0]
            action, tool = render_action(tc.name, tc.arguments, single_argument), tc.name
        else:
            action, tool = render_action(e.type, {}, single_argument), e.type
        steps.append(Step(
            step_id=len(steps) + 1,
            action=action,
            tool_type=tool,
            observation=o.text or "",
            thinking=_thought(e),
            action_ref=e.ref,
            observation_ref=o.ref,
            action_event_id=e.id,
            observation_event_id=o.id,
            parallel_group=None,
            usage=e.usage,
            model_usage=e.model_usage,
        ))
    return steps
