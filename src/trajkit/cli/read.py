"""The reading verbs: ``detect`` (which format a path holds), ``show`` (a
readable transcript),
``normalize`` (CodeTracer ``steps.json``/``task.md``), ``ls`` (the sessions
under a directory) and ``context`` (what the model saw on each call). ``ls``
and ``context`` work for every format that declares ``find_sessions`` +
``summarize`` or ``context``; on a run of a format that does not, they exit 2
saying which formats can. ``steps`` has a module of its own
(:mod:`.steps`): it is the verb run most often, on one small run at a time,
so its process imports only what it needs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..model import ReadOptions, TrajkitError
from ..view.safe import printable
from ._common import (
    EXIT_CANNOT_RUN,
    EXIT_CHECK_FAILED,
    console,
    echo_json,
    fail,
    load_session,
    out_console,
    session_targets,
    progress as _progress,
    warn_secrets,
)
from ._options import format_option, member_option, redaction_options, size_option, tz_option, view_option


# ---------------------------------------------------------------- detect

@click.command("detect")
@click.argument("path", type=click.Path(exists=False))
@click.option("--why", is_flag=True, help="Show every format and fingerprint considered, up to the first strong match.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def detect_cmd(path: str, why: bool, as_json: bool) -> None:
    """Say which format PATH holds (a run, or any path inside one)."""
    from ..registry import detect

    if not os.path.lexists(path):
        fail(f"{printable(path)}: no such file or directory")
    det = detect(path)
    for d in det.diagnostics:  # formats that failed to load, names claimed twice, sniffs that raised
        click.echo(printable(str(d)), err=True)
    if as_json:
        echo_json(det.to_dict())
    else:
        if det.format is None:
            click.echo(f"{printable(path)}: no known format")
        else:
            amb = "  (AMBIGUOUS)" if det.ambiguous else ""
            click.echo(printable(f"{det.format.name}\t{det.match.root}\tfingerprint {det.match.fingerprint!r}{amb}"))
        if why:
            for c in det.considered:
                extra = f" -> {c.root} ({c.strength}; {c.reason})" if c.outcome == "match" else (f" ({c.reason})" if c.reason else "")
                click.echo(printable(f"  considered {c.format} [priority {c.priority}] at {c.path}: fingerprint {c.fingerprint!r} {c.outcome}{extra}"))
    if det.format is None:
        sys.exit(EXIT_CANNOT_RUN)
    if det.ambiguous:
        sys.exit(EXIT_CHECK_FAILED)


# ---------------------------------------------------------------- show

@click.command("show")
@click.argument("path", type=click.Path(exists=False))
@format_option
@member_option
@tz_option
@size_option
@view_option
@click.option("--width", type=int, default=None,
              help="Cut long texts to this many characters, and draw nothing wider (default: 400 characters; 0: never cut).")
def show_cmd(path, format_name, member, tz, max_file_bytes, view, width):
    """Print the run at PATH as a readable transcript (every session in turn,
    for a file holding many; name one as PATH#ID or with --member ID)."""
    from ..view.terminal import draw_transcript, transcript

    targets = session_targets(path, format_name, max_file_bytes, member)
    for address, detection in targets:
        if len(targets) > 1:
            click.echo(printable(f"== {address}"))
        session = load_session(address, format_name, max_file_bytes, detection=detection, view=view, tz=tz)
        draw_transcript(transcript(session), 400 if width is None else width, console=out_console(width or None))


# ---------------------------------------------------------------- normalize

@click.command("normalize")
@click.argument("path", type=click.Path(exists=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Directory to write steps.json and task.md into.")
@format_option
@tz_option
@size_option
@view_option
@redaction_options
@click.option("--json", "as_json", is_flag=True, help="Print what was written (and any secret.detected) as JSON.")
def normalize_cmd(path, out_dir, format_name, tz, max_file_bytes, view, redact_secrets, secrets, redact_home, as_json):
    """Write CodeTracer-compatible steps.json and task.md for the run at PATH.

    Each file is written atomically. Credentials found by pattern are reported
    on stderr (secret.detected: kind and place, never the value); exit 2 when
    an output cannot be written."""
    from ..atomic import OutputError
    from ..export.codetracer import write_normalized
    from ..export.to_asf import Redactor

    session = load_session(path, format_name, max_file_bytes, view=view, tz=tz)
    redactor = Redactor(secrets=list(secrets), home=redact_home, patterns=redact_secrets)
    try:
        done = write_normalized(session, Path(out_dir), redactor=redactor)
    except OutputError as e:
        fail(str(e))
        raise  # unreachable
    if as_json:
        echo_json({"written": [str(p) for p in done.written], "step_count": len(session.steps), "view": session.view,
                   "secrets": done.secrets})
    else:
        for p in done.written:
            click.echo(str(p))
    warn_secrets(done.secrets)


# ---------------------------------------------------------------- ls, context (every format that declares them)

@click.command("ls")
@click.argument("root", type=click.Path(exists=False), required=False)
@click.option("--harness", "harness", default=None, metavar="NAME",
              help="List the sessions of this format's harness: under ROOT, or, with no ROOT, under the harness's "
                   "home folder (e.g. ~/.openhands/conversations).")
@click.option("--json", "as_json", is_flag=True, help="A JSON array, one object per session (with its format).")
@format_option
@size_option
def ls_cmd(root: str | None, harness: str | None, as_json: bool, format_name: str | None, max_file_bytes: int) -> None:
    """List the sessions under ROOT, for every format that can list them
    (OpenHands SDK conversations: ~/.openhands/conversations, a directory
    above several, one conversation, or a file inside one). With
    ``--harness NAME`` and no ROOT, list the user's sessions from that
    harness's home folder. Sub-agents are counted with their parent, not
    listed."""
    import os

    from ..diagnostics import ERROR, Diagnostic
    from ..model import DetectionError
    from ..registry import cannot, detect, formats, formats_that_can, get_format, home_dirs, origin

    if harness and format_name and harness != format_name:
        fail(f"--harness {harness} and --format {format_name} name different formats")
    format_name = format_name or harness
    if format_name:
        try:
            fmts = [get_format(format_name)]
        except DetectionError as e:
            fail(str(e))
        if not fmts[0].can("ls"):
            fail(f"{root or format_name}: {cannot(format_name, 'ls')}")
    else:
        fmts = [f for f in formats() if f.can("ls")]
    diags: list[Diagnostic] = []
    found = []
    if root is None:
        if not harness:
            fail("give a ROOT to list, or --harness NAME to list a harness's home folder "
                 f"(harnesses with one: {', '.join(formats_that_can('homes')) or 'none installed'})")
        if not fmts[0].can("homes"):
            fail(f"{cannot(harness, 'homes')}")
        homes = home_dirs(fmts[0])
        present = [h for h in homes if os.path.isdir(h)]
        if not present:
            fail(f"no {harness} home folder here (looked in {', '.join(str(h) for h in homes) or 'nothing'})")
        for home in present:
            try:
                found += [(fmts[0], r) for r in fmts[0].find_sessions(str(home), diags)]
            except Exception as e:  # a plugin's lister must not take ls down
                diags.append(Diagnostic("read.format-failed", f"listing {harness} sessions (from {origin(harness)}) raised "
                                        f"{type(e).__name__}: {e}", ERROR, file=str(home)))
        root = os.pathsep.join(str(h) for h in present)  # for the "no sessions under" line
    else:
        if not os.path.exists(root):
            fail(f"{root}: no such file or directory")
        for f in fmts:
            try:
                found += [(f, r) for r in f.find_sessions(root, diags)]
            except Exception as e:  # a plugin's lister must not take ls down
                diags.append(Diagnostic("read.format-failed", f"listing {f.name} sessions (from {origin(f.name)}) raised "
                                        f"{type(e).__name__}: {e}", ERROR, file=os.path.abspath(root)))
        if not found and not format_name:
            det = detect(root)
            if det.format is not None and not det.format.can("ls"):
                fail(f"{root}: read as {det.format.name}; {cannot(det.format.name, 'ls')}")
    rows = []
    progress = None
    if len(found) > 50 and sys.stderr.isatty():
        progress = _progress(None, console(stderr=True))
        progress.start()
        task = progress.add_task("reading sessions", total=len(found))
    try:
        for f, r in found:
            rows.append({"format": f.name, **f.summarize(r, max_file_bytes)})
            if progress is not None:
                progress.advance(task)
    finally:
        if progress is not None:
            progress.stop()
    for d in diags:
        click.echo(printable(str(d)), err=True)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"no sessions under {printable(root)} (formats that list sessions: {', '.join(formats_that_can('ls')) or 'none'})", err=True)
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    # Ids are what a user copies and the path is what they pass next, so
    # both are always printed whole. A table when every cell fits the width;
    # otherwise one block per session: id and facts, then its path.
    # steps and tokens come from rows that know them (summarize may leave
    # them out: "?"); a cost the record lacks and trajkit estimated reads "~".
    cols = ("id", "status", "title", "model", "events", "steps", "tokens", "cost", "updated", "sub", "path")

    def _cost(r):
        if r.get("cost") is None:
            return ""
        return ("~" if r.get("cost_estimated") else "") + f"{r['cost']:.4f}"

    cells = [[printable(str(c)) for c in (
        r["id"],
        r.get("status") or r.get("execution_status") or "?",
        r.get("title") or "",
        r.get("model") or "",
        "?" if r.get("events") is None else r["events"],
        "?" if r.get("steps") is None else r["steps"],
        "" if r.get("tokens") is None else r["tokens"],
        _cost(r),
        r.get("updated") or "",
        r["subagents"] if r.get("subagents") else "",
        r.get("path") or "",
    )] for r in rows]
    widths = [max([len(c)] + [min(len(row[i]), 40 if c == "title" else 1 << 30) for row in cells]) for i, c in enumerate(cols)]
    con = out_console(soft_wrap=True)
    if sum(widths) + 2 * (len(cols) - 1) <= con.width:
        t = Table(expand=False, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for col in cols:
            kw = {"max_width": 40, "overflow": "ellipsis"} if col == "title" else {}
            t.add_column(col, no_wrap=True, justify="right" if col in ("events", "steps", "tokens", "cost", "sub") else "left", **kw)
        for row in cells:
            t.add_row(*(Text(c) for c in row))
        con.print(t)
    else:
        for row in cells:
            ident, status, title, model, events, steps, tokens, cost, updated, sub, path = row
            counts = f"{events} events" + (f", {steps} steps" if steps != "?" else "")
            con.print(Text(f"{ident}  {status}  {counts}" + (f"  {sub} sub-agents" if sub else "")))
            more = [model] if model else []
            more += [f"{tokens} tokens"] if tokens else []
            more += [("~$" + cost[1:]) if cost.startswith("~") else f"${cost}"] if cost else []
            more += [updated] if updated else []
            if more:
                con.print(Text("  " + "  ".join(more)))
            if title:
                con.print(Text(f"  {title}"))
            con.print(Text(f"  {path}"))
    for r in rows:
        for d in r.get("diagnostics") or []:
            click.echo(printable(f"{d['severity']}[{d['code']}] {d.get('file', '')}: {d['message']}"), err=True)


@click.command("context")
@click.argument("conv", type=click.Path(exists=False))
@click.option("--at", "at", default=None, help="Only the call that produced this event (or, for another event, a call made right after it).")
@click.option("--recursive", "-r", is_flag=True, help="Also the calls of sub-agent conversations (entries gain conversation_id).")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of {llm_response_id, event_id, messages}.")
@click.option("--width", type=int, default=200, show_default=True, help="Cut long texts to this many characters in the text view (0: never).")
@click.option("--check", is_flag=True, help="Compare with the requests the record also logged (the SDK's LLMCompletionLogEvent); exit 1 on a difference.")
@format_option
@size_option
def context_cmd(conv: str, at: str | None, recursive: bool, as_json: bool, width: int, check: bool, format_name: str | None, max_file_bytes: int) -> None:
    """Print the chat messages the model was sent on each agent LLM call of
    the run CONV, for every format that declares what the model saw. For an
    OpenHands SDK conversation they are rebuilt from its events (active
    branch, condensations replayed, parallel actions grouped, observations
    formatted as the SDK formats them)."""
    import os

    from ..model import DetectionError
    from ..registry import cannot, formats_that_can, get_format, read, root_for

    from ..registry import split_member

    if not os.path.exists(split_member(conv)[0]):
        fail(f"{conv}: no such file or directory")
    try:
        root = root_for(conv, format_name) if format_name else conv  # a path inside the run finds its root
        session = read(root, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes, steps=False))
    except (DetectionError, TrajkitError) as e:
        fail(f"{e}; formats that can show what the model saw: {', '.join(formats_that_can('context'))}")
    fmt = get_format(session.format)
    if not fmt.can("context"):
        fail(f"{conv}: read as {session.format}; {cannot(session.format, 'context')}")
    entries = []
    try:
        sessions = list(session.walk()) if recursive else [session]
        for s in sessions:
            if at is not None and s.event_by_id(at) is None:
                continue
            for e in fmt.context(s, at=at):
                if recursive:
                    e = {"conversation_id": s.id, **e}
                entries.append(e)
    except TrajkitError as e:  # the run does not allow it (e.g. an SDK ACPAgent), or an unknown --at
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
    text = printable(text.replace("\n", "⏎ "))
    return text if not width or len(text) <= width else text[: width - 1] + "…"


def _print_entries(entries: list[dict], width: int) -> None:
    for n, e in enumerate(entries, 1):
        conv = f" [{e['conversation_id']}]" if "conversation_id" in e else ""
        if e["llm_response_id"]:
            head = f"call {n}{conv}: {e['llm_response_id']} (produced event {e['event_id']})"
        else:
            head = f"a call right after event {e['event_id']}{conv}"
        click.echo(printable(f"── {head} — {len(e['messages'])} messages"))
        for m in e["messages"]:
            if not isinstance(m, dict):  # a logged request holds what it holds
                m = {"role": "?", "content": str(m)}
            parts = m.get("content") or []
            text = " | ".join(p.get("text", "[image]") if isinstance(p, dict) else str(p) for p in parts) if isinstance(parts, list) else str(parts)
            fns = [c.get("function") if isinstance(c, dict) and isinstance(c.get("function"), dict) else {} for c in m.get("tool_calls") or []]
            calls = ", ".join(f"{f.get('name')}({f.get('arguments')})" for f in fns)
            if not m.get("role") and m.get("type"):  # a Responses-API input item (function_call, ...)
                text = text or (f"{m['name']}({m.get('arguments')})" if m.get("name") else str(m.get("output") or m.get("summary") or ""))
            head = str(m.get("role") or m.get("type") or "?") + (f"[{m.get('tool_call_id') or m.get('call_id')}]" if m.get("tool_call_id") or m.get("call_id") else "")
            body = text + (f"  → {calls}" if calls else "")
            click.echo(f"  {printable(head)}: {_cut(body, width)}")
