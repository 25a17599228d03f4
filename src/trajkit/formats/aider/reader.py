"""Aider chat histories (format name ``aider``): ``.aider.chat.history.md``,
the markdown transcript Aider appends to in the git root on every launch
(``shared/formats/aider.md``).

One file holds many runs, one per ``# aider chat started at <time>`` header:
it is a container (``Format.members``) whose members are the runs, named by
their header time (``2026-06-09T14:01:00``, ``-2``, ``-3`` … for a second
run in the same second), so an id stays the same when the file grows.
Read a run as ``FILE#ID``; the verbs run over every run when none is named.

Lines are classified as Aider writes them (``aider/io.py``): ``#### `` user
input (consecutive lines one prompt), ``> `` tool output, anything else the
assistant's reply. Each user block is a user message; each reply an
assistant message, or an action when it holds edit blocks (SEARCH/REPLACE
blocks under a file name, unified-diff files): one tool call per block;
``> Applied edit to F`` / ``> Did not apply edit to F`` lines answer the
first unanswered block editing F, and every other ``> `` line is an
observation of the reply it follows (``> `` lines before the first prompt
are the startup notices; ``> Model: …`` and ``> Aider v…`` give the model
and version). ``> Tokens: 4.5k sent, 429 received. Cost: $0.0018 message,
…`` becomes the reply's usage, marked approximate (rounded).

The record is lossy: no per-message times (only the run header, local time
with no zone; ``--tz`` gives the zone), no tool-call structure, rounded token
counts, no system prompt or repo map, and ``#### `` inside a reply cannot be
told from a prompt (Aider's rule is followed). Each read run says so in one
``aider.lossy`` diagnostic, which the loss report carries.

Steps (``aider.md`` §5): one per edit block answered by an applied / not
applied line naming its file.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ...diagnostics import INFO, WARNING
from ...model import ACTION, MESSAGE, OBSERVATION, OTHER, Event, Outcome, ReadOptions, Ref, Session, Usage
from ...reading.builder import SessionBuilder
from ...reading.io import read_capped
from ...reading.pairing import pair_by_call_id
from .names import AIDER_TOOLS, NAME

HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_APPLIED = re.compile(r"^(Applied edit to|Did not apply edit to) (.+?)(?: \(.*\))?$")
_TOKENS = re.compile(r"^Tokens: ([\d.]+)(k|m)? sent(?:, ([\d.]+)(k|m)? cache write)?(?:, ([\d.]+)(k|m)? cache hit)?, ([\d.]+)(k|m)? received\.?"
                     r"(?: Cost: \$([\d.]+) message, \$([\d.]+) session\.?)?")
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")
_VERSION = re.compile(r"^Aider v(\S+)")
LOSSY = ("per-message times (only the run's start, in local time)", "the tool-call structure (edits are parsed from the reply text)",
         "exact token counts (rounded in the Tokens line)", "the system prompt, repo map and files in the chat",
         "whether a '#### ' line inside a reply was a prompt")




# ---------------------------------------------------------------- the file as runs

def _runs(text: str) -> tuple[list[tuple[str, int, list[str]]], list[str]]:
    """``(member id, header line number, lines after the header)`` per run,
    and the lines before the first header."""
    runs: list[tuple[str, int, list[str]]] = []
    before: list[str] = []
    seen: dict[str, int] = {}
    cur: list[str] | None = None
    for n, line in enumerate(text.split("\n"), 1):
        m = HEADER.match(line)
        if m:
            base = m.group(1).replace(" ", "T")
            seen[base] = seen.get(base, 0) + 1
            mid = base if seen[base] == 1 else f"{base}-{seen[base]}"
            cur = []
            runs.append((mid, n, cur))
        elif cur is None:
            before.append(line)
        else:
            cur.append(line)
    return runs, before


def members(root: Path, options: ReadOptions) -> list[str]:
    """The runs of the file, by id, in file order (``[]`` when it cannot be read)."""
    data, _why = read_capped(str(root), options.max_file_bytes)
    if data is None:
        return []
    return [r[0] for r in _runs(data.decode("utf-8", errors="replace"))[0]]


def _num(v: str | None, unit: str | None) -> int | None:
    if v is None:
        return None
    x = float(v) * (1000 if unit == "k" else 1_000_000 if unit == "m" else 1)
    return int(round(x))


def _edit_blocks(reply: list[str]) -> list[dict[str, Any]]:
    """The edit blocks of a reply: SEARCH/REPLACE blocks (the file named on
    the line before, a code fence skipped) and unified-diff files."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(reply):
        line = reply[i]
        if line.strip() == "<<<<<<< SEARCH":
            path = None
            j = i - 1
            while j >= 0 and (not reply[j].strip() or reply[j].strip().startswith("```")):
                j -= 1
            if j >= 0:
                path = reply[j].strip().strip("`*").strip() or None
            k = i + 1
            search: list[str] = []
            while k < len(reply) and reply[k].strip() != "=======":
                search.append(reply[k])
                k += 1
            replace: list[str] = []
            k += 1
            while k < len(reply) and reply[k].strip() != ">>>>>>> REPLACE":
                replace.append(reply[k])
                k += 1
            out.append({"name": "search_replace", "args": {"path": path, "old_str": "\n".join(search), "new_str": "\n".join(replace)},
                        "complete": k < len(reply), "at": i})
            i = k + 1
            continue
        if line.startswith("+++ ") and i > 0 and reply[i - 1].startswith("--- "):
            path = line[4:].strip()
            path = path[2:] if path.startswith("b/") else path
            k = i + 1
            hunk = [reply[i - 1], line]
            while k < len(reply) and not reply[k].startswith("```") and not (reply[k].startswith("--- ") and k + 1 < len(reply) and reply[k + 1].startswith("+++ ")):
                hunk.append(reply[k])
                k += 1
            out.append({"name": "udiff", "args": {"path": path, "patch": "\n".join(hunk)}, "complete": True, "at": i - 1})
            i = k
            continue
        i += 1
    return out


def _strip(line: str, prefix: str) -> str:
    return line[len(prefix):].rstrip(" ") if line.startswith(prefix) else line.rstrip(" ")


def _read_run(session: Session, file: str, mid: str, header_line: int, lines: list[str], options: ReadOptions) -> None:
    run = session.run
    run.harness = NAME
    stamp = mid[:19]
    started = stamp
    if options.tz:
        try:
            from zoneinfo import ZoneInfo

            started = datetime.fromisoformat(stamp).replace(tzinfo=ZoneInfo(options.tz)).astimezone(ZoneInfo("UTC")).isoformat().replace("+00:00", "Z")
        except Exception:  # an unknown zone: keep the local time and say so below
            session.diag("aider.bad-tz", f"--tz {options.tz!r} is no IANA zone; the run time stays local", WARNING, file=file)
    run.started_at = started
    session.id = mid
    session.metadata["run_header_line"] = header_line
    session.events.append(Event(f"{mid}/header", OTHER, "run_header", f"# aider chat started at {stamp.replace('T', ' ')}",
                                timestamp=started, text=f"aider chat started at {stamp.replace('T', ' ')}",
                                ref=Ref(file, f"{mid}/header", header_line, header_line)))
    model: str | None = None
    # group lines into blocks: (kind, first line number, last line number, lines)
    blocks: list[tuple[str, int, int, list[str]]] = []
    for n, line in enumerate(lines, header_line + 1):
        if line.startswith("#### ") or line.rstrip() == "####":
            kind, body = "user", _strip(line, "#### " if line.startswith("#### ") else "####")
        elif line.startswith("> ") or line.rstrip() == ">":
            # (a '>>>>>>> REPLACE' marker is reply text)
            kind, body = "tool", _strip(line, "> " if line.startswith("> ") else ">")
        else:
            kind, body = "text", line.rstrip(" ")
        if kind == "tool":
            blocks.append((kind, n, n, [body]))  # one tool message per line
        elif blocks and blocks[-1][0] == kind:
            k, a, _b, ls = blocks[-1]
            blocks[-1] = (k, a, n, ls + [body])
        else:
            blocks.append((kind, n, n, [body]))
    seen_user = False
    reply_ev: Event | None = None
    open_edits: list[tuple[str | None, str]] = []  # (path, call id) of the current reply's unanswered edit blocks
    unanswered: list[tuple[str | None, str, str]] = []  # (path, call id, reply event id) of the run's unanswered blocks
    n_reply = 0
    for kind, a, b, body in blocks:
        if kind == "text":
            text = "\n".join(body).strip("\n")
            if not text.strip():
                continue
            if not seen_user:
                eid = f"{mid}/L{a}"
                session.events.append(Event(eid, OTHER, "text_before_prompt", "\n".join(body), text=text, ref=Ref(file, eid, a, b)))
                continue
            n_reply += 1
            eid = f"{mid}/L{a}"
            edits = _edit_blocks(body)
            calls = []
            open_edits = []
            for k, ed in enumerate(edits, 1):
                cid = f"{eid}/edit-{k}"
                calls.append(AIDER_TOOLS.call(ed["name"], ed["args"], cid))
                open_edits.append((ed["args"].get("path"), cid))
                unanswered.append((ed["args"].get("path"), cid, eid))
                if not ed["complete"]:
                    session.diag("aider.edit-cut", f"an edit block for {ed['args'].get('path')} has no closing marker", WARNING,
                                 file=file, event_id=eid, line=a + ed["at"])
            reply_ev = Event(eid, ACTION if calls else MESSAGE, "reply", "\n".join(body), source="agent", role="assistant",
                             text=text, tool_calls=calls, response_id=eid, ref=Ref(file, eid, a, b))
            session.events.append(reply_ev)
            continue
        if kind == "user":
            seen_user = True
            reply_ev = None
            open_edits = []
            eid = f"{mid}/L{a}"
            text = "\n".join(body)
            session.events.append(Event(eid, MESSAGE, "prompt", "\n".join("#### " + x for x in body), source="user", role="user",
                                        text=text, ref=Ref(file, eid, a, b)))
            if text.startswith("/"):
                session.events[-1].extra["slash_command"] = text.split()[0]
            continue
        # a tool line
        line = body[0]
        eid = f"{mid}/L{a}"
        ref = Ref(file, eid, a, b)
        if not seen_user:
            mm, mv = _MODEL.match(line), _VERSION.match(line)
            if mm:
                model = mm.group(1)
            if mv:
                run.harness_version = mv.group(1)
            session.events.append(Event(eid, OTHER, "notice", "> " + line, source="environment", text=line, ref=ref))
            continue
        tm = _TOKENS.match(line)
        if tm and reply_ev is not None:
            sent, cw, hit, recv = _num(tm.group(1), tm.group(2)), _num(tm.group(3), tm.group(4)), _num(tm.group(5), tm.group(6)), _num(tm.group(7), tm.group(8))
            u = Usage(input=(sent or 0) + (cw or 0) + (hit or 0) if sent is not None else None, output=recv, cache_read=hit, cache_write=cw,
                      cost=float(tm.group(9)) if tm.group(9) else None, source="aider Tokens line (rounded, approximate)", model=model)
            if reply_ev.model_usage is None:
                reply_ev.model_usage = u
                reply_ev.usage = {"sent": sent, "received": recv, "cache_write": cw, "cache_hit": hit,
                                  "cost_message": u.cost, "cost_session": float(tm.group(10)) if tm.group(10) else None,
                                  "approximate": True}
            session.events.append(Event(eid, OTHER, "tokens", "> " + line, source="environment", text=line, ref=ref))
            continue
        am = _APPLIED.match(line)
        if am and reply_ev is not None:
            path = am.group(2).strip()
            hit_call = next((c for p, c in open_edits if p == path), None)
            cause = reply_ev.id
            if hit_call is None:
                # No block of the reply just before edits F: an earlier reply of the run
                # does when a '#### ' line inside it was taken for a prompt (aider.md trap 1).
                hit = next(((c, r) for p, c, r in reversed(unanswered) if p == path), None)
                if hit is not None:
                    hit_call, cause = hit
                    session.diag("aider.edit-result-earlier",
                                 f"'{line}' answers an edit block of an earlier reply ({cause}): a '#### ' line inside that reply "
                                 "was probably a markdown heading, not a prompt", INFO, file=file, event_id=eid, line=a)
            if hit_call is not None:
                open_edits = [(p, c) for p, c in open_edits if c != hit_call]
                unanswered[:] = [u for u in unanswered if u[1] != hit_call]
                ev = Event(eid, OBSERVATION, "edit_result", "> " + line, source="environment", role="tool", text=line,
                           call_id=hit_call, cause=cause, ref=ref)
                ev.extra["applied"] = am.group(1) == "Applied edit to"
                session.events.append(ev)
                continue
        session.events.append(Event(eid, OBSERVATION if reply_ev is not None else OTHER, "tool_output", "> " + line,
                                    source="environment", role="tool" if reply_ev is not None else None, text=line,
                                    cause=reply_ev.id if reply_ev is not None else None, ref=ref))
    if model:
        run.models = [model]
    first = next((e for e in session.events if e.kind == MESSAGE and e.role == "user"), None)
    if first is not None:
        session.task, session.task_source = first.text, "first prompt"
    last = next((e for e in reversed(session.events) if e.kind in (MESSAGE, ACTION)), None)
    ended = last is not None and last.role == "assistant"
    session.outcome = Outcome(ended, status=None,
                              signal="Aider records no end status; the run ends with the assistant's reply" if ended
                              else "Aider records no end status; the run does not end with a reply",
                              evidence=[{"event_id": last.id}] if last is not None else [])
    if not any(e.kind in (MESSAGE, ACTION) for e in session.events):
        session.diag("aider.empty-run", "the run has no prompt and no reply (Aider was started and left)", INFO, file=file, line=header_line)
    session.diag("aider.lossy", "the chat history is a rendering for people; not recoverable from it: " + "; ".join(LOSSY)
                 + ("" if options.tz else "; the run time is local with no zone (give --tz)"), INFO, file=file, line=header_line)


def read(root: Path, options: ReadOptions) -> Session:
    b = SessionBuilder(NAME, root, options, view="chat_history")
    session = b.session
    data, sf = b.read_bytes(root, "chat_history")
    if data is None:
        return b.finish()
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        b.diag("aider.not-utf8", "the file is not valid UTF-8; undecodable bytes read as U+FFFD", WARNING, file=root)
    runs, before = _runs(text)
    file = str(root)
    if any(x.strip() for x in before):
        b.diag("aider.text-before-first-run", "text before the first '# aider chat started at' line; kept as an event", INFO, file=root, line=1)
    want = options.member
    chosen = [r for r in runs if want is None or r[0] == want]
    if not runs:
        b.diag("aider.no-runs", "no '# aider chat started at' line: no run to read", WARNING, file=root)
    elif want is not None and not chosen:
        b.diag("aider.no-such-run", f"no run {want!r} in the file (runs: {', '.join(r[0] for r in runs)})", WARNING, file=root)
    if want is None and len(runs) > 1:
        # without a member (a direct read), every run is read, each a sub-session of the file
        session.id = Path(file).name
        for mid, line, lines in runs:
            child = Session(format=NAME, source_path=f"{file}#{mid}", view="chat_history")
            _read_run(child, file, mid, line, lines, options)
            child.steps = pair_by_call_id(child) if options.steps else []
            session.children.append(child)
    elif chosen:
        mid, line, lines = chosen[0]
        _read_run(session, file, mid, line, lines, options)
        if options.steps:
            session.steps = pair_by_call_id(session)
    if any(x.strip() for x in before) and (want is None or not chosen):
        session.events.insert(0, Event("preamble", OTHER, "preamble", "\n".join(before), text="\n".join(before).strip(),
                                       ref=Ref(file, "preamble", 1, len(before))))
    sf.event_ids = [e.id for s in session.walk() for e in s.events]
    return b.finish()


__all__ = ["read", "members"]
