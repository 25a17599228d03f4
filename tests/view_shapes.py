"""Runs for the viewer's tests and benchmark, built from real corpus events.

Every event written here is a real OpenHands V0 event of the shared corpus,
copied and changed only where asked (fresh ids, the cause re-pointed, a
command or an output replaced), so the reader sees exactly the native shapes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from conftest import CORPUS

V0_FLAT = CORPUS / "openhands_v0" / "flat_exports"

#: The V0 actions whose pairs are steps in CodeTraceBench's counting.
TOOL_ACTIONS = ("run", "read", "edit")


def real_pairs() -> tuple[dict[str, Any], list[tuple[dict[str, Any], dict[str, Any]]], dict[str, Any]]:
    """The first user message, every (action, observation) pair of a tool
    action and the finish action of the corpus's V0 flat exports."""
    pairs, user, finish = [], None, None
    for name in ("basic_gui_mode.json", "wrong_initial_state.json", "basic.json"):
        events = json.loads((V0_FLAT / name).read_text())
        acts = {e["id"]: e for e in events if "action" in e}
        for e in events:
            if user is None and e.get("action") == "message" and e.get("source") == "user":
                user = e
            if finish is None and e.get("action") == "finish":
                finish = e
            if "observation" in e and e.get("cause") in acts and acts[e["cause"]]["action"] in TOOL_ACTIONS:
                pairs.append((acts[e["cause"]], e))
    assert user is not None and finish is not None and pairs
    return user, pairs, finish


def long_v0_run(dest: Path, steps: int, tweak=None) -> Path:
    """A V0 flat export at ``dest`` with ``steps`` tool steps, cycling
    through the corpus's real pairs. ``tweak(i, action, observation)`` may
    change the i-th pair (0-based) in place."""
    user, pairs, finish = real_pairs()
    out = [copy.deepcopy(user)]
    out[0]["id"] = 0
    nid = 1
    for i in range(steps):
        a, o = (copy.deepcopy(x) for x in pairs[i % len(pairs)])
        a["id"], o["id"], o["cause"] = nid, nid + 1, nid
        for k in ("tool_call_metadata",):
            a.pop(k, None)
            o.pop(k, None)
        if tweak is not None:
            tweak(i, a, o)
        out += [a, o]
        nid += 2
    f = copy.deepcopy(finish)
    f["id"] = nid
    f.pop("tool_call_metadata", None)
    out.append(f)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out))
    return dest
