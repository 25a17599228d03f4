"""The OpenHands SDK (V1) verbs: ``trajkit ls`` (the conversations under a
directory) and ``trajkit context`` (what the model saw on each call)."""

from __future__ import annotations

import sys

import click

from ..cli import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, echo_json, fail, format_option, load_session, size_option


@click.command("ls")
@click.argument("root", type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="A JSON array, one object per conversation.")
@size_option
def ls_cmd(root: str, as_json: bool, max_file_bytes: int) -> None:
    """List the OpenHands SDK conversations under ROOT: a directory of
    conversations (~/.openhands/conversations), a directory above several,
    one conversation, or a file inside one. Sub-agents are counted with
    their parent, not listed."""
    from ..formats.openhands_sdk import find_sessions
    from ..formats.openhands_sdk.reader import summarize
    from ..diagnostics import Diagnostic

    diags: list[Diagnostic] = []
    roots = find_sessions(root, diags)
    if any(d.code == "sdk.root-missing" for d in diags):
        fail(f"{root}: no such file or directory")
    rows = []
    progress = None
    if len(roots) > 50 and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import Progress

        progress = Progress(console=Console(stderr=True), transient=True)
        progress.start()
        task = progress.add_task("reading conversations", total=len(roots))
    try:
        for r in roots:
            rows.append(summarize(r, max_file_bytes))
            if progress is not None:
                progress.advance(task)
    finally:
        if progress is not None:
            progress.stop()
    for d in diags:
        click.echo(str(d), err=True)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"no OpenHands SDK conversations under {root}", err=True)
        return
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 200)
    t = Table(expand=False)
    for col, kw in (("id", {}), ("title", {"max_width": 40, "overflow": "ellipsis"}), ("status", {}), ("events", {"justify": "right"}),
                    ("model", {}), ("cost", {"justify": "right"}), ("updated", {}), ("sub", {"justify": "right"})):
        t.add_column(col, **kw)
    for r in rows:
        t.add_row(
            str(r["id"]),
            r["title"] or "",
            r["execution_status"] or "?",
            str(r["events"]),
            r["model"] or "",
            "" if r["cost"] is None else f"{r['cost']:.4f}",
            r["updated"] or "",
            str(r["subagents"]) if r["subagents"] else "",
        )
    con.print(t)
    for r in rows:
        for d in r["diagnostics"]:
            click.echo(f"{d['severity']}[{d['code']}] {d.get('file', '')}: {d['message']}", err=True)


@click.command("context")
@click.argument("conv", type=click.Path(exists=True))
@click.option("--at", "at", default=None, help="Only the call that produced this event (or, for another event, a call made right after it).")
@click.option("--recursive", "-r", is_flag=True, help="Also the calls of sub-agent conversations (entries gain conversation_id).")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of {llm_response_id, event_id, messages}.")
@click.option("--width", type=int, default=200, show_default=True, help="Cut long texts to this many characters in the text view (0: never).")
@click.option("--check", is_flag=True, help="Compare with the requests the agent server logged (LLMCompletionLogEvent); exit 1 on a difference.")
@format_option
@size_option
def context_cmd(conv: str, at: str | None, recursive: bool, as_json: bool, width: int, check: bool, format_name: str | None, max_file_bytes: int) -> None:
    """Print the chat messages the SDK sent to the model on each agent LLM
    call of the conversation CONV, rebuilt from its events (active branch,
    condensations replayed, parallel actions grouped, observations formatted
    as the SDK formats them)."""
    from ..formats.openhands_sdk.context import ContextUnavailable, rebuild_context
    from ..model import TrajkitError

    session = load_session(conv, format_name or "openhands-sdk", max_file_bytes, steps=False)
    if session.format != "openhands-sdk":
        fail(f"{conv}: read as {session.format}; `context` needs an OpenHands SDK conversation")
    entries = []
    try:
        sessions = list(session.walk()) if recursive else [session]
        for s in sessions:
            if at is not None and s.event_by_id(at) is None:
                continue
            for e in rebuild_context(s, at=at):
                if recursive:
                    e = {"conversation_id": s.id, **e}
                entries.append(e)
    except ContextUnavailable as e:
        fail(str(e), EXIT_CANNOT_RUN)
    except TrajkitError as e:
        fail(str(e), EXIT_CANNOT_RUN)
    if at is not None and not entries:
        fail(f"no event {at!r} in {conv}")
    if as_json:
        echo_json(entries)
    else:
        _print_entries(entries, width)
    if check:
        logged = [e for e in entries if "logged" in e]
        bad = [e for e in logged if e["logged"]["differences"]]
        if not logged:
            click.echo("trajkit: no logged requests (LLMCompletionLogEvent) to check against", err=True)
        for e in bad:
            for d in e["logged"]["differences"]:
                click.echo(f"{e['llm_response_id']}: {d}", err=True)
        click.echo(f"checked {len(logged)} logged request(s): {len(logged) - len(bad)} identical, {len(bad)} different", err=True)
        if bad:
            sys.exit(EXIT_CHECK_FAILED)


def _cut(text: str, width: int) -> str:
    text = text.replace("\n", "⏎ ")
    return text if not width or len(text) <= width else text[: width - 1] + "…"


def _print_entries(entries: list[dict], width: int) -> None:
    for n, e in enumerate(entries, 1):
        conv = f" [{e['conversation_id']}]" if "conversation_id" in e else ""
        if e["llm_response_id"]:
            head = f"call {n}{conv}: {e['llm_response_id']} (produced event {e['event_id']})"
        else:
            head = f"a call right after event {e['event_id']}{conv}"
        click.echo(f"── {head} — {len(e['messages'])} messages")
        for m in e["messages"]:
            parts = m.get("content") or []
            text = " | ".join(p.get("text", "[image]") if isinstance(p, dict) else str(p) for p in parts) if isinstance(parts, list) else str(parts)
            calls = ", ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in m.get("tool_calls") or [])
            head = m["role"] + (f"[{m['tool_call_id']}]" if m.get("tool_call_id") else "")
            body = text + (f"  → {calls}" if calls else "")
            click.echo(f"  {head}: {_cut(body, width)}")
