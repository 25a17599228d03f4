"""Human-readable renderings of a session: the steps table and the transcript.

Output goes through ``rich`` and degrades to plain text when stdout is not a
terminal (no colour codes in pipes).
"""

from __future__ import annotations

from typing import Any

from .model import Session


def _console():
    import sys

    from rich.console import Console

    # Pipes get a wide page instead of rich's 80-column default.
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 200)


def _cut(text: str | None, width: int) -> str:
    if text is None:
        return ""
    if width and len(text) > width:
        return text[: width - 1] + "…"
    return text


def _block(text: str | None, width: int, indent: str) -> str:
    """``text`` cut to ``width`` characters, every line indented by ``indent``."""
    return "\n".join(indent + line for line in _cut(text, width).splitlines() or [""])


def _one_line(text: str | None, width: int) -> str:
    return _cut((text or "").replace("\r", "").replace("\n", "⏎ "), width)


def _short_id(event_id) -> str:
    """An event id short enough for a table column (uuids cut to 8 characters)."""
    text = str(event_id)
    return text[:8] if len(text) > 12 else text


def print_steps_table(session: Session, per_view: dict[str, Any] | None = None, width: int = 80) -> None:
    """The steps as a table, with the task, view and step count above it."""
    from rich.table import Table

    con = _console()
    con.print(f"[bold]{session.format}[/bold] {session.source_path}")
    if session.id:
        con.print(f"session {session.id}")
    con.print(f"view: {session.view or '-'}   steps: {len(session.steps)}   events: {len(session.events)}")
    if session.task:
        con.print(f"task ({session.task_source}): {_one_line(session.task, 200)}")
    if per_view:
        con.print("views: " + ", ".join(f"{k}={v['step_count']}" for k, v in per_view.items()))
    t = Table(show_lines=False, expand=False)
    t.add_column("#", justify="right")
    t.add_column("tool")
    t.add_column("action", overflow="fold", max_width=width)
    t.add_column("observation", overflow="fold", max_width=width // 2)
    t.add_column("events")
    labelled = any(s.labels for s in session.steps)
    if labelled:
        t.add_column("labels")
    for s in session.steps:
        row = [str(s.step_id), s.tool_type, _one_line(s.action, width), _one_line(s.observation, width // 2),
               f"{_short_id(s.action_event_id)}→{_short_id(s.observation_event_id)}"]
        if labelled:
            row.append(",".join(s.labels))
        t.add_row(*row)
    con.print(t)


def print_session(session: Session, width: int = 400, indent: str = "") -> None:
    """The session as a transcript: task, then each event in order, with steps marked."""
    con = _console()
    step_of = {s.action_event_id: s for s in session.steps}
    con.print(f"{indent}[bold]{session.format}[/bold] {session.id or ''}  ({session.source_path})")
    meta = session.metadata
    facts = [f"{k}={meta[k]}" for k in ("model", "view", "execution_status", "final_agent_state", "layout") if meta.get(k)]
    if facts:
        con.print(indent + "  ".join(facts))
    if session.task:
        con.print(f"{indent}[bold]task[/bold] ({session.task_source}):")
        con.print(_block(session.task, width, indent + "  "), markup=False)
    con.print(f"{indent}{len(session.events)} events, {len(session.steps)} steps, {len(session.diagnostics)} diagnostics")
    con.rule()
    for e in session.events:
        step = step_of.get(e.id)
        tag = f"[bold cyan]step {step.step_id}[/bold cyan] " if step else ""
        head = f"{indent}#{e.id} {e.kind}:{e.type}" + (f" ({e.source})" if e.source else "")
        branch = e.extra.get("branch") if e.extra else None
        if branch and branch != "active":
            head += f" [{branch} branch]"
        if step:
            con.print(f"{head} {tag}")
            if step.thinking:
                con.print(_block("thought: " + step.thinking, width, indent + "  "), markup=False)
            con.print(_block("$ " + step.action, width, indent + "  "), markup=False)
        else:
            con.print(head)
            if e.text:
                con.print(_block(e.text, width, indent + "  "), markup=False)
            for c in e.tool_calls:
                con.print(f"{indent}  call {c.name}({_cut(str(c.arguments), width)})", markup=False)
    for s in session.steps:
        matches = {m.get("child_id"): m for m in s.extra.get("child_match", []) if isinstance(m, dict)}
        for child in s.children:
            how = matches.get(child.id, {})
            said = f" (matched by {how['method']}: {how.get('detail', '')})" if how.get("method") else ""
            con.rule(f"sub-agent of step {s.step_id}{said}")
            print_session(child, width, indent + "    ")
    unshown = [c for c in session.children if not any(c in s.children for s in session.steps)]
    for child in unshown:
        con.rule("sub-agent")
        print_session(child, width, indent + "    ")
    if session.diagnostics:
        con.rule("diagnostics")
        for d in session.diagnostics:
            con.print(indent + str(d), markup=False)
