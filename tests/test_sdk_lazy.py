"""Lazily built SDK events equal their fully derived twins."""

from __future__ import annotations

import pickle

import orjson

from trajkit.formats.openhands_sdk import find_sessions, read
from trajkit.formats.openhands_sdk.reader import read_derived
from trajkit.model import ReadOptions

def _pairs(conv, options):
    lazy, full = read(conv, options), read_derived(conv, options)
    assert lazy.to_dict() == full.to_dict()  # metadata, files, diagnostics, children, steps
    assert [st.to_dict() for st in lazy.steps] == [st.to_dict() for st in full.steps]
    for ls, fs in zip(lazy.walk(), full.walk()):
        assert len(ls.events) == len(fs.events)
        yield from zip(ls.events, fs.events)

def test_lazy_events_equal_fully_derived_events(corpus):
    convs = find_sessions(corpus)
    assert len(convs) >= 10
    n = 0
    for conv in convs:
        for options in (ReadOptions(), ReadOptions(tz="Europe/Paris")):
            for e, full in _pairs(conv, options):
                assert e == full
                assert e.to_dict() == full.to_dict()
                assert list(e.extra) == list(full.extra)  # same keys, same order
                n += 1
    assert n > 100

def test_lazy_event_keeps_fields_set_before_derivation(corpus):
    sessions = [(c, read(c, ReadOptions(steps=False))) for c in find_sessions(corpus)]
    conv, s = next((c, s) for c, s in sessions if any(e.type == "ActionEvent" for e in s.events))
    ev = next(e for e in s.events if e.type == "ActionEvent")
    ev.usage = {"prompt_tokens": 3}
    assert ev.usage == {"prompt_tokens": 3} and ev.tool_calls and ev.extra["index"] >= 0
    assert ev.extra["on_active_branch"] in (True, False) and "action_kind" in ev.extra
    clone = pickle.loads(pickle.dumps(read(conv).events[0]))
    assert clone.text is not None and clone.extra["index"] == 0

def test_lazy_events_of_odd_members_equal_derived(tmp_path):
    """Misfit members, ids written as ints, unknown kinds and answers matched by call id."""
    conv = tmp_path / "c" / ("ab" * 16)
    ev_dir = conv / "events"
    ev_dir.mkdir(parents=True)
    events = [
        {"id": 7, "kind": "MessageEvent", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "go"}]}},
        {"id": "a1", "kind": "ActionEvent", "source": "agent", "tool_name": "terminal", "tool_call_id": "c1", "llm_response_id": "r1",
         "tool_call": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}, "action": {"kind": "TerminalAction", "command": "ls"},
         "thought": [{"type": "text", "text": "look"}], "parent_id": "7"},
        {"id": "o1", "kind": "AgentErrorEvent", "source": "environment", "tool_name": "terminal", "tool_call_id": "c1", "error": "boom"},
        {"id": "a2", "kind": "ActionEvent", "source": "agent", "tool_name": 3, "tool_call_id": None, "tool_call": {"name": "x", "arguments": "{bad"}},
        {"id": "u1", "kind": "Mystery", "source": "agent"},
        {"id": "o2", "kind": "ObservationEvent", "source": "environment", "tool_call_id": "c1", "observation": "nope"},
    ]
    for i, e in enumerate(events):
        (ev_dir / f"event-{i:05d}-{i:032x}.json").write_bytes(orjson.dumps(e))
    pairs = list(_pairs(conv, ReadOptions()))
    assert len(pairs) == len(events)
    for e, full in pairs:
        assert e == full and e.to_dict() == full.to_dict()
    assert pairs[2][0].kind == "observation" and pairs[2][0].cause == "a1"
    from trajkit.formats.openhands_sdk.stepping import build_steps

    s, own = read(conv), read(conv, ReadOptions(steps=False))
    build_steps(own)
    assert [d.code for d in s.diagnostics].count("sdk.extra-answer") == 1
    assert [st.to_dict() for st in s.steps] == [st.to_dict() for st in own.steps] and len(s.steps) == 1
    assert [d.to_dict() for d in s.diagnostics] == [d.to_dict() for d in own.diagnostics]


def test_step_rendering_fast_path_matches_the_generic_rule(corpus):
    """The cached C encoder renders every action as trajkit.steps.render_action does."""
    from trajkit.formats.openhands_sdk.stepping import SINGLE_ARGUMENT_TOOLS, render_step_action
    from trajkit.steps import render_action

    n = 0
    for conv in find_sessions(corpus):
        for s in read(conv).walk():
            for e in s.events:
                for call in e.tool_calls:
                    args = call.arguments
                    if isinstance(args, dict):
                        generic = render_action(call.name, {k: v for k, v in args.items() if k != "thought"} if call.name not in SINGLE_ARGUMENT_TOOLS else args, single=SINGLE_ARGUMENT_TOOLS)
                        assert render_step_action(call.name, args) == generic
                        n += 1
    assert n > 20
    odd = {"s": "é\u2028\x00\"\\", "f": [1.5, -0.0, 1e300, float("nan")], "n": None, "t": True, "d": {"x": [{}]}, "big": 10**30, "thought": "t"}
    assert render_step_action("tool", odd) == render_action("tool", {k: v for k, v in odd.items() if k != "thought"}, single={})
    assert render_step_action("tool", {"x": {1, 2}}) == render_action("tool", {"x": {1, 2}}, single={})


def test_pairing_made_while_reading_equals_build_steps_own(corpus):
    """Steps from the reader's pairing equal the steps build_steps pairs itself."""
    from trajkit.formats.openhands_sdk.stepping import build_steps

    n = 0
    for conv in find_sessions(corpus):
        s = read(conv)
        if s.children:  # their matching needs the children's own steps
            continue
        own = read(conv, ReadOptions(steps=False))
        build_steps(own)
        assert [st.to_dict() for st in s.steps] == [st.to_dict() for st in own.steps]
        assert [d.to_dict() for d in s.diagnostics] == [d.to_dict() for d in own.diagnostics]
        assert s.metadata["actions_without_observation"] == own.metadata["actions_without_observation"]
        n += len(s.steps)
    assert n > 10


def test_a_read_derives_no_event_of_a_conversation_without_sub_agents(corpus):
    """The outcome, the cost estimate, the task and the steps read what they
    need without deriving a lazy event in full (deriving them all was a fifth
    of a real-sized read)."""
    import trajkit

    checked = 0
    for conv in find_sessions(corpus):
        s = trajkit.read(conv)
        if s.children or not s.events:
            continue
        lazy = [e for e in s.events if object.__getattribute__(e, "_derive") is not None]
        assert len(lazy) == len(s.events), conv
        # and what was set while reading is what derivation gives
        full = read_derived(conv)
        for e, f in zip(s.events, full.events):
            assert (e.source, e.model_usage) == (f.source, f.model_usage)
        assert s.task == full.task
        checked += 1
    assert checked >= 5


def test_usage_of_a_response_equals_usage_from_counts(corpus):
    """``usage_of`` (the reader's short path) gives what ``Usage.from_counts``
    gives, for every per-response usage entry of the corpus and for entries
    of other shapes (which it hands to ``from_counts``)."""
    from trajkit.formats.openhands_sdk.fields import usage_of
    from trajkit.model import Usage

    entries = []
    for conv in find_sessions(corpus):
        for s in read(conv).walk():
            entries.extend((s.metadata.get("usage_by_response") or {}).values())
    assert len(entries) >= 10
    odd = [
        {"prompt_tokens": 10.0, "completion_tokens": True},
        {"prompt_tokens": 5, "cached_tokens": 3, "total_tokens": 9},
        {"input_tokens": 7, "output_tokens": 2, "cost": 0},
        {"prompt_tokens": 1, "model": 3, "cost": False},
        {},
    ]
    for u in entries + odd:
        assert usage_of(u, "src") == Usage.from_counts(u, "src"), u


def test_usage_entry_fast_path_equals_tolerant_int_rule(corpus):
    """``reader._usage`` (its short path for an entry whose seven counts are
    plain integers) makes what the general rule makes: every count present
    read by ``jsonio.tolerant_int`` (floats and bad values tallied), in the
    SDK's count order, then the model when it is a string. Checked on every
    token usage entry of the corpus and on odd entries around the short
    path's edges (2**53, negatives, bools, floats, missing or extra members)."""
    from trajkit.formats.openhands_sdk.reader import _COUNT_FIELDS, _Numbers, _usage
    from trajkit.jsonio import tolerant_int

    def reference(tu):
        out, floats, bad = {}, 0, 0
        for f in _COUNT_FIELDS:
            if f in tu:
                v = tu[f]
                n, flagged = tolerant_int(v)
                if flagged and v is not None:
                    if isinstance(v, float) and v.is_integer() and n == v:
                        floats += 1
                    else:
                        bad += 1
                out[f] = n
        if isinstance(tu.get("model"), str) and not isinstance(tu.get("model"), bool):
            out["model"] = tu["model"]
        return out, floats, bad

    entries = []
    for conv in find_sessions(corpus):
        for s in read(conv).walk():
            for m in ((s.metadata.get("state") or {}).get("stats") or {}).get("usage_to_metrics", {}).values():
                entries.extend(t for t in m.get("token_usages", []) if isinstance(t, dict))
    assert len(entries) >= 10
    base = dict(entries[0])
    odd = [dict(base, prompt_tokens=1 << 53), dict(base, prompt_tokens=(1 << 53) + 1), dict(base, completion_tokens=-1),
           dict(base, reasoning_tokens=True), dict(base, cache_read_tokens=12.0), dict(base, per_turn_token=1.5),
           dict(base, model=7), {k: v for k, v in base.items() if k != "model"}, dict(base, extra_member=3),
           {k: v for k, v in base.items() if k != "context_window"}, dict(base, context_window=None), {}]
    for tu in entries + odd:
        nums = _Numbers()
        got = _usage(tu, nums)
        want, floats, bad = reference(tu)
        assert (list(got.items()), nums.floats, nums.bad) == (list(want.items()), floats, bad), tu


def test_event_and_step_usage_equal_usage_from_counts(corpus):
    """The Usage the reader makes for a response's first event (read_stats'
    entry taken as it is) is ``Usage.from_counts`` of the event's usage dict
    with the state's source, and its step shares it."""
    from trajkit.formats.openhands_sdk.stepping import STEP_USAGE_SOURCE
    from trajkit.model import Usage

    checked = 0
    for conv in find_sessions(corpus):
        for s in read(conv).walk():
            for e in s.events:
                if e.usage is not None:
                    assert e.model_usage == Usage.from_counts(e.usage, STEP_USAGE_SOURCE), e.id
                    checked += 1
            for st in s.steps:
                if st.usage is not None:
                    assert st.model_usage == Usage.from_counts(st.usage, STEP_USAGE_SOURCE), st.step_id
    assert checked >= 10
