"""The reference V0 step rule, written from the format note alone
(``shared/formats/openhands-v0.md`` §4.3: agent-eval's ``openhands_sessions``
parser, ``tangle-network/agent-eval@80623706``), to time trajkit against it.

Plain ``json`` (the standard library, as a Python skill script decodes) and
the rule as the note states it:

- flat view: the largest ``.json`` directly in ``sessions/``, used when it is
  a non-empty list (not re-sorted); a bare file is that list;
- else, per session directory in sorted order, the first non-empty
  ``events/`` (sorted by id), else the ``event_cache`` shards sorted by
  numeric (start, end);
- an observation is an event with an int ``cause`` and an ``observation``
  key, the first one per cause wins; a step is an event with an ``action``
  key and an int id that some observation points to;
- rendering: ``run`` -> ``args.command``, ``run_ipython`` -> ``args.code``,
  ``think`` -> ``args.thought``, else ``action(<args JSON without thought>)``;
  blank text -> its JSON literal; observation = ``content`` or ``""``;
  ``thinking`` = non-blank ``args.thought`` except on ``think``.

This is a benchmark baseline, not part of trajkit.
"""

from __future__ import annotations

import json
import os
import re

_EVENT = re.compile(r"^(\d+)\.json$")
_SHARD = re.compile(r"^(\d+)-(\d+)\.json$")


def _load(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _flat(sessions: str) -> list | None:
    best = None
    for name in os.listdir(sessions):
        p = os.path.join(sessions, name)
        if name.endswith(".json") and os.path.isfile(p):
            size = os.path.getsize(p)
            if best is None or size > best[0]:
                best = (size, p)
    if best is None:
        return None
    data = _load(best[1])
    return data if isinstance(data, list) and data else None


def _session_events(sdir: str) -> list:
    ev = os.path.join(sdir, "events")
    if os.path.isdir(ev):
        names = sorted((int(m.group(1)), n) for n in os.listdir(ev) if (m := _EVENT.match(n)))
        if names:
            return [_load(os.path.join(ev, n)) for _, n in names]
    cache = os.path.join(sdir, "event_cache")
    out: list = []
    if os.path.isdir(cache):
        shards = sorted((int(m.group(1)), int(m.group(2)), n) for n in os.listdir(cache) if (m := _SHARD.match(n)))
        for _, _, n in shards:
            page = _load(os.path.join(cache, n))
            if isinstance(page, list):
                out.extend(page)
    return out


def events_of(path: str) -> list:
    """The event stream the rule reads for a trial directory or a bare flat export."""
    if os.path.isfile(path):
        data = _load(path)
        return data if isinstance(data, list) else []
    sessions = os.path.join(path, "sessions")
    flat = _flat(sessions)
    if flat is not None:
        return flat
    inner = os.path.join(sessions, "sessions")
    out: list = []
    if os.path.isdir(inner):
        for name in sorted(os.listdir(inner)):
            events = _session_events(os.path.join(inner, name))
            if events:
                out = events
                break
    return out


def _blank_literal(text):
    return json.dumps(text) if isinstance(text, str) and not text.strip() else text


def _render(e: dict) -> str:
    action = e.get("action")
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    if action == "run":
        text = args.get("command", "")
    elif action == "run_ipython":
        text = args.get("code", "")
    elif action == "think":
        text = args.get("thought", "")
    else:
        text = f"{action}({json.dumps({k: v for k, v in args.items() if k != 'thought'}, ensure_ascii=False)})"
    return _blank_literal(text if isinstance(text, str) else json.dumps(text))


def steps_of(path: str) -> list[dict]:
    """The steps of the run at ``path`` under the rule: one dict per step."""
    events = [e for e in events_of(path) if isinstance(e, dict)]
    first_obs: dict[int, dict] = {}
    for e in events:
        c = e.get("cause")
        if isinstance(c, int) and not isinstance(c, bool) and "observation" in e and c not in first_obs:
            first_obs[c] = e
    steps = []
    for e in events:
        i = e.get("id")
        if "action" not in e or not isinstance(i, int) or isinstance(i, bool) or i not in first_obs:
            continue
        obs = first_obs[i]
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        thought = args.get("thought")
        steps.append({
            "step_id": len(steps) + 1,
            "action_event_id": i,
            "observation_event_id": obs.get("id"),
            "tool_type": e.get("action"),
            "action": _render(e),
            "observation": obs.get("content") if isinstance(obs.get("content"), str) else "",
            "thinking": thought if isinstance(thought, str) and thought.strip() and e.get("action") != "think" else None,
        })
    return steps
