"""The presentation tree (trajkit.view.transcript) and its terminal back-end.

Expected counts come from the raw files (event files, JSON lists, trace
records, sub-agent directories, the SDK's parent links), never from the
reader; the tree is then checked against them.
"""

from __future__ import annotations

import ast
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trajkit.registry import read
from trajkit.view.terminal import draw_steps_table, draw_transcript
from trajkit.view.transcript import EventNode, Transcript, steps_table, transcript

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
SDK_EXAMPLE = EXAMPLES / "openhands-sdk-conversation"
SDK_FIX = REPO / "tests" / "fixtures" / "sdk"


def _console():
    from rich.console import Console

    return Console(file=io.StringIO(), highlight=False, soft_wrap=False, width=200, color_system=None)


def _draw(tree: Transcript) -> str:
    con = _console()
    draw_transcript(tree, 400, "", con)
    return con.file.getvalue()


def _anchors(tree: Transcript) -> list[str]:
    out = []
    for t in tree.walk():
        out += [e.anchor for e in t.events] + [s.anchor for s in t.steps]
        out += [sub.anchor for st in t.steps for sub in st.sub_agents] + [sub.anchor for sub in t.sub_agents]
    return out


# ---------------------------------------------------------------- raw counts, by their own route


def _sdk_raw(conv: Path) -> dict:
    """Events, actions (steps) and sub-agents of an SDK conversation directory,
    from its files: one event per events/event-*.json, one step per ActionEvent."""
    kinds = [json.loads(p.read_text())["kind"] for p in sorted((conv / "events").glob("event-*.json"))]
    subs = sorted(p for p in (conv / "subagents").iterdir() if p.is_dir()) if (conv / "subagents").is_dir() else []
    return {"events": len(kinds), "steps": kinds.count("ActionEvent"), "subs": [_sdk_raw(p) for p in subs]}


def _tree_counts(t: Transcript) -> dict:
    subs = [sub for st in t.steps for sub in st.sub_agents] + t.sub_agents
    return {"events": len(t.events), "steps": len(t.steps), "subs": [_tree_counts(s.transcript) for s in subs]}


def test_sdk_example_tree_counts_match_the_files():
    tree = transcript(read(SDK_EXAMPLE))
    assert _tree_counts(tree) == _sdk_raw(SDK_EXAMPLE)
    assert tree.header.event_count == len(tree.events) and tree.header.step_count == len(tree.steps)
    # the sub-agent hangs under the step whose TaskObservation names its task
    # (the SDK links them only through the parent's stats)
    raws = [json.loads(p.read_text()) for p in sorted((SDK_EXAMPLE / "events").glob("event-*.json"))]
    spawning = [r["action_id"] for r in raws if r["kind"] == "ObservationEvent" and "task_id" in (r.get("observation") or {})]
    assert len(spawning) == 1
    (holder,) = [st for st in tree.steps if st.sub_agents]
    assert holder.action_event_id == spawning[0]
    (sub,) = holder.sub_agents
    assert sub.step_id == holder.step_id and sub.method == "usage-metrics" and "task:" in sub.detail
    assert tree.sub_agents == []
    child_dir = next((SDK_EXAMPLE / "subagents").iterdir())
    assert sub.transcript.header.id.replace("-", "") == child_dir.name and sub.transcript.depth == 1
    assert all(a.startswith("sub1-") for a in _anchors(sub.transcript) if a != "sub1")


def test_v0_example_tree_counts_match_the_files():
    expected = json.loads((EXAMPLES / "openhands-v0-trial" / "EXPECTED.json").read_text())
    raw_events = json.loads((EXAMPLES / "openhands-v0-trial" / expected["view_path"]).read_text())
    tree = transcript(read(EXAMPLES / "openhands-v0-trial"))
    assert len(tree.events) == len(raw_events)
    assert [e.id for e in tree.events] == [r["id"] for r in raw_events]
    assert len(tree.steps) == expected["expected_step_count"]
    assert [s.action_event_id for s in tree.steps] == [s["action_event_id"] for s in expected["steps"]]
    # each step is marked on its action event, and names the event of its answer
    marked = [e for e in tree.events if e.step is not None]
    assert [e.id for e in marked] == [s["action_event_id"] for s in expected["steps"]]
    for e in marked:
        assert e.step.action_anchor == e.anchor
    answered = {e.id: e for e in tree.events if e.answers is not None}
    assert sorted(answered) == sorted(s["observation_event_id"] for s in expected["steps"])
    assert tree.header.task == expected["expected_task_text"]
    assert not any(e.off_branch for e in tree.events) and all(e.branch is None for e in tree.events)


def test_rollout_example_tree_counts_match_the_trace():
    records = json.loads((EXAMPLES / "rollout" / "trace.json").read_text())
    agent = [r for r in records if r["request"].get("tools")]
    # the conversation: the first agent call's leading system/user messages,
    # one event per captured call, one per tool result a later request carries
    opening = 0
    for m in agent[0]["request"]["messages"]:
        if m["role"] not in ("system", "user"):
            break
        opening += 1
    results = {m["tool_call_id"] for r in agent for m in r["request"]["messages"] if m["role"] == "tool"}
    calls = [c for r in agent for c in (r["response"]["choices"][0]["message"].get("tool_calls") or [])]
    tree = transcript(read(EXAMPLES / "rollout"))
    assert len(tree.events) == opening + len(records) + len(results)
    assert len(tree.steps) == len([c for c in calls if c["id"] in results])
    (st,) = tree.steps
    (ev,) = [e for e in tree.events if e.step is st]
    assert [c.name for c in ev.calls] == [calls[0]["function"]["name"]]


@pytest.mark.parametrize("example", ["openhands-sdk-conversation", "openhands-v0-trial", "rollout"])
def test_anchors_are_unique_and_resolve(example):
    tree = transcript(read(EXAMPLES / example))
    anchors = _anchors(tree)
    assert len(anchors) == len(set(anchors))
    for t in tree.walk():
        by_anchor = {e.anchor: e for e in t.events}
        for s in t.steps:
            assert s.anchor == f"{t.anchor}step-{s.step_id}"
            assert by_anchor[s.action_anchor].id == s.action_event_id
            if s.observation_event_id is not None:
                assert by_anchor[s.observation_anchor].id == s.observation_event_id
        for i, e in enumerate(t.events):
            assert e.position == i and e.anchor == f"{t.anchor}event-{i + 1}"


def test_steps_table_is_the_steps_and_their_labels():
    s = read(SDK_EXAMPLE)
    table = steps_table(s, {"events": {"step_count": 4}})
    assert [n.step_id for n in table.steps] == [st.step_id for st in s.steps]
    assert [n.action for n in table.steps] == [st.action for st in s.steps]
    assert table.header.views == {"events": 4} and not table.labelled
    assert all(n.sub_agents == [] for n in table.steps)  # a table builds no sub-agent trees
    s.steps[1].labels.append("incorrect")
    table = steps_table(s)
    assert table.labelled and table.header.views is None
    con = _console()
    draw_steps_table(table, 80, con)
    out = con.file.getvalue()
    assert "labels" in out and "incorrect" in out and "steps: 4" in out


# ---------------------------------------------------------------- branches, sub-agents, diagnostics


def test_branch_marks_follow_the_parent_links():
    conv = SDK_FIX / "branched" / "33333333333333333333333333333333"
    raws = [json.loads(p.read_text()) for p in sorted((conv / "events").glob("event-*.json"))]
    leaf = json.loads((conv / "base_state.json").read_text())["leaf_event_id"]
    parent = {r["id"]: r.get("parent_id") for r in raws}
    on_path, cur = set(), leaf
    while cur in parent:
        on_path.add(cur)
        cur = parent[cur]
    tree = transcript(read(conv))
    off = {e.id for e in tree.events if e.off_branch}
    assert off == set(parent) - on_path and off
    out = _draw(tree)
    for e in tree.events:
        head = f"#{e.id} {e.kind}:{e.type}" + (f" ({e.source})" if e.source else "")
        assert (f"{head} [{e.branch} branch]" in out) == e.off_branch
    # an abandoned action is no step
    assert all(e.step is None for e in tree.events if e.branch == "abandoned")


def _copy_example(tmp_path: Path) -> Path:
    dst = tmp_path / SDK_EXAMPLE.name
    shutil.copytree(SDK_EXAMPLE, dst)
    return dst


def _child_events(conv: Path) -> Path:
    return next((conv / "subagents").iterdir()) / "events"


def test_sub_agent_matched_by_prompt_says_so(tmp_path):
    dst = _copy_example(tmp_path)
    state = json.loads((dst / "base_state.json").read_text())
    state["stats"]["usage_to_metrics"] = {k: v for k, v in state["stats"]["usage_to_metrics"].items() if not k.startswith("task:")}
    (dst / "base_state.json").write_text(json.dumps(state))
    tree = transcript(read(dst))
    (sub,) = [sub for st in tree.steps for sub in st.sub_agents]
    assert sub.method == "prompt"
    assert f"sub-agent of step {sub.step_id} (matched by prompt: {sub.detail})" in _draw(tree)


def test_unattached_sub_agent_is_kept_and_shown(tmp_path):
    dst = _copy_example(tmp_path)
    state = json.loads((dst / "base_state.json").read_text())
    state["stats"]["usage_to_metrics"] = {k: v for k, v in state["stats"]["usage_to_metrics"].items() if not k.startswith("task:")}
    (dst / "base_state.json").write_text(json.dumps(state))
    for p in sorted(_child_events(dst).glob("event-*.json")):
        ev = json.loads(p.read_text())
        ev["timestamp"] = "2099-01-01T00:00:00"  # after every parent action: no rule ties it
        if ev["kind"] == "MessageEvent":
            for part in ev["llm_message"]["content"]:
                part["text"] = "a prompt nobody sent"
        p.write_text(json.dumps(ev))
    tree = transcript(read(dst))
    assert all(st.sub_agents == [] for st in tree.steps)
    (sub,) = tree.sub_agents
    assert sub.step_id is None and sub.method is None
    assert len(sub.transcript.events) == len(list(_child_events(dst).glob("event-*.json")))
    out = _draw(tree)
    assert "─ sub-agent ─" in out and "sub-agent of step" not in out
    (d,) = [d for d in tree.diagnostics if d.code == "sdk.child-unmatched"]
    assert d.target is None  # it names no event


def test_diagnostics_link_to_the_step_or_event_they_concern(tmp_path):
    dst = _copy_example(tmp_path)
    files = sorted((dst / "events").glob("event-*.json"))
    raws = [json.loads(p.read_text()) for p in files]
    action = next(r for r in raws if r["kind"] == "ActionEvent")
    message = next(r for r in raws if r["kind"] == "MessageEvent")
    # two later files reuse ids already taken: the reader keeps the first of each
    last = len(files)
    for n, r in enumerate((action, message)):
        (dst / "events" / f"event-{last + n:05d}-{r['id']}.json").write_text(json.dumps(r))
    s = read(dst)
    tree = transcript(s)
    dups = {d.event_id: d for d in tree.diagnostics if d.code == "sdk.event-duplicate-id"}
    assert set(dups) == {action["id"], message["id"]}
    (step,) = [st for st in tree.steps if st.action_event_id == action["id"]]
    assert dups[action["id"]].target == step.anchor
    # both copies of the message are events; the diagnostic is about the second
    first, second = [e for e in tree.events if e.id == message["id"]]
    assert second.file == dups[message["id"]].file and dups[message["id"]].target == second.anchor
    assert [d.text for d in tree.diagnostics] == [str(d) for d in s.diagnostics]


# ---------------------------------------------------------------- the tree's contract


def test_tree_needs_no_files_and_no_rich(tmp_path):
    dst = _copy_example(tmp_path)
    s = read(dst)
    before = _draw(transcript(s))
    shutil.rmtree(dst)
    tree = transcript(s)
    assert _draw(tree) == before and len(tree.events) == 16
    code = "import sys, trajkit.view.transcript; assert 'rich' not in sys.modules, 'rich imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_view_reads_no_native_shapes():
    """The tree and its back-ends read typed facts: never ``.raw``, never
    ``.extra``, never a format name in a comparison."""
    for path in sorted((REPO / "src" / "trajkit" / "view").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("raw", "extra"), f"{path.name}:{node.lineno} reads .{node.attr}"
            if isinstance(node, ast.Compare):
                names = [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
                assert "format" not in names, f"{path.name}:{node.lineno} compares a format name"


def test_event_text_is_whole_in_the_tree_and_cut_on_the_terminal():
    s = read(SDK_EXAMPLE)
    tree = transcript(s)
    longest = max((e for e in tree.events if e.step is None and e.text), key=lambda e: len(e.text))
    assert isinstance(longest, EventNode) and longest.text == s.events[longest.position].text
    con = _console()
    draw_transcript(tree, 20, "", con)
    out = con.file.getvalue()
    assert len(longest.text) > 20
    cut = (longest.text[:19] + "…").splitlines()
    assert "\n".join("  " + line for line in cut) in out


def test_rl_imports_no_format_module():
    """rl/ works from captured calls (rl/calls.py), not format internals."""
    for path in sorted((REPO / "src" / "trajkit" / "rl").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = ("." * node.level) + (node.module or "")
                assert "formats" not in mod.split("."), f"{path.name}:{node.lineno} imports {mod}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("trajkit.formats") for a in node.names), f"{path.name}:{node.lineno}"


# ---------------------------------------------------------------- hostile text on the terminal

HOSTILE = "[/x] fix [red]this[/red] :smile: [bold]"


def test_markup_and_emoji_codes_in_a_run_print_as_written(tmp_path, cli, monkeypatch):
    """Texts from the run reach rich as text, never as markup: a closing tag
    in the task used to crash ``steps`` (MarkupError) and ``[abandoned
    branch]`` marks were swallowed as unknown styles."""
    dst = _copy_example(tmp_path)
    files = sorted((dst / "events").glob("event-*.json"))
    for p in files:
        ev = json.loads(p.read_text())
        if ev["kind"] == "MessageEvent" and ev.get("source") == "user":
            ev["llm_message"]["content"][0]["text"] = HOSTILE  # the task
        elif ev["kind"] == "ActionEvent" and ev.get("tool_name") == "terminal":
            ev["action"]["command"] = "echo " + HOSTILE
            ev["tool_call"]["arguments"] = json.dumps({"command": "echo " + HOSTILE})
            ev["thought"] = [{"type": "text", "text": "think " + HOSTILE}]
        elif ev["kind"] == "ObservationEvent":
            ev["observation"]["content"] = [{"type": "text", "text": "saw " + HOSTILE}]
        p.write_text(json.dumps(ev))
    # an event of a kind nobody knows, named like markup
    last = json.loads(files[-1].read_text())
    odd = {"id": "0dd0dd0d-0000-4000-8000-000000000000", "kind": "[bold]Weird[/bold]", "source": "[/src]",
           "timestamp": last["timestamp"], "parent_id": last["id"]}
    (dst / "events" / f"event-{len(files):05d}-{odd['id']}.json").write_text(json.dumps(odd))

    monkeypatch.setenv("COLUMNS", "200")  # piped output is COLUMNS wide (80 unset): keep the task on one line
    steps = cli("steps", dst)
    assert steps.returncode == 0, steps.stderr
    assert f"): {HOSTILE}" in steps.stdout  # the task line
    assert "echo [/x] fix [red]this[/red]" in steps.stdout.replace("\n", "")

    show = cli("show", dst)
    assert show.returncode == 0, show.stderr
    out = show.stdout
    assert "\n  " + HOSTILE + "\n" in out  # the task block
    assert "$ echo " + HOSTILE in out and "thought: think " + HOSTILE in out
    assert "saw " + HOSTILE in out
    assert f"#{odd['id']} other:[bold]Weird[/bold] ([/src])" in out
