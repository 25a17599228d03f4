"""Reading Claude Code transcripts and stream-json logs into a Session.

One row (JSON line) is one native event, except a ``user`` row holding
several ``tool_result`` blocks (or text beside results): its first part is
the event whose ``raw`` is the whole row, each further block an event
``<row id>/<k>`` whose ``raw`` is the block. Rules (``claude-code.md``):

- a model response is every ``assistant`` row sharing ``message.id``
  (fallback ``requestId``, then the row ``uuid``); its usage is counted once,
  on the response's first event, with the largest ``output_tokens`` of its
  rows (the row with a ``stop_reason`` when one has one) and
  ``Usage.output_lower_bound`` set when no row has a ``stop_reason`` (2.x
  writes the stream-start usage);
- a ``tool_result`` answers the latest earlier unanswered ``tool_use`` of
  its id; a reused id (non-Anthropic backends: ``functions.Bash:0``) gets a
  fresh call id ``<id>#<n>``; the native id stays in ``Event.extra``;
- the ``parentUuid`` tree: the active branch is the path from the
  last-written row to its root (a ``compact_boundary`` rejoined through
  ``logicalParentUuid``); rows off it are ``abandoned``;
- steps: one per ``tool_use`` on the active branch, with its result (an
  unanswered call is a step with an empty observation);
- sub-agent files become child sessions linked to the spawning call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import INFO, WARNING
from ...jsonio import MISSING
from ...model import (
    ACTION,
    BRANCH_ABANDONED,
    BRANCH_ACTIVE,
    CONDENSATION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    OTHER,
    REASONING,
    STATE,
    SYSTEM,
    Event,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    SourceFile,
    SpawnLink,
    Step,
    Usage,
)
from ...reading.builder import SessionBuilder
from ...reading.io import JsonLine
from ...steps import render_action
from ...vocab.claude_code import CLAUDE_CODE_TOOLS
from . import layout

NAME = "claude-code"
SINGLE_ARGUMENT = CLAUDE_CODE_TOOLS.single_argument()
#: How deep sub-agents nest before the reader stops following them.
MAX_DEPTH = 8

#: Prefixes of user text that the harness injected (not a person's prompt).
INJECTED_PREFIXES = ("<command-name>", "<local-command-stdout>", "<local-command-caveat>", "<task-notification>",
                     "<teammate-message", "<command-message>", "<user-prompt-submit-hook>", "Caveat: The messages below")
#: Row types that carry no conversation (kept as events of kind ``other``).
KNOWN_TYPES = frozenset({"user", "assistant", "system", "result"}) | layout.TRANSPORT_TYPES | {"rate_limit_event"}


def _s(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def block_text(content: Any) -> str:
    """The text of a ``tool_result`` / message content: a string, or the
    text blocks of a list joined (an image shows as ``[image <media type>]``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if c.get("type") == "text" and isinstance(c.get("text"), str):
                    parts.append(c["text"])
                elif c.get("type") == "image":
                    src = c.get("source") if isinstance(c.get("source"), dict) else {}
                    parts.append(f"[image {src.get('media_type') or ''}]".replace(" ]", "]"))
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts)
    if content is None:
        return ""
    return orjson.dumps(content, default=str).decode()


def injected_reason(row: dict[str, Any], text: str | None) -> str | None:
    """Why a user row is no person's prompt (None when it is one)."""
    for key in ("isCompactSummary", "isMeta", "isVisibleInTranscriptOnly"):
        if row.get(key) is True:
            return key
    if text:
        t = text.lstrip()
        for p in INJECTED_PREFIXES:
            if t.startswith(p):
                return p.strip("<>").split(" ")[0]
    return None


class _Rows:
    """The decoded rows of one file with their line numbers."""

    __slots__ = ("path", "rows", "sf")

    def __init__(self, path: str, rows: list[JsonLine], sf: SourceFile | None):
        self.path = path
        self.rows = rows
        self.sf = sf


# ---------------------------------------------------------------- one file -> events


class _Reader:
    """Turns the rows of one session (one file, or a stream's rows of one
    agent) into events, steps and usage."""

    def __init__(self, session: Session, kind: str, agent_file: bool = False):
        self.s = session
        self.kind = kind
        #: a sub-agent's own file: every row is a sidechain row, and that is the norm
        self.agent_file = agent_file
        self.ids: set[Any] = set()
        self.uuids: set[str] = set()
        self.calls: dict[str, list[tuple[Event, Any]]] = {}  # native id -> [(event, ToolCall)] in order
        self.minted: dict[str, int] = {}
        self.answered: set[str] = set()  # minted ids answered
        self.call_event: dict[str, Event] = {}  # minted id -> action event
        self.result_rows: dict[str, dict[str, Any]] = {}  # minted id -> the row that answered it
        self.responses: dict[str, list[tuple[Event, dict[str, Any]]]] = {}
        self.task: str | None = None
        self.models: list[str] = []
        self.versions: list[str] = []
        self.cwd: str | None = None
        self.stamps: list[str] = []
        self.result_row: tuple[Event, dict[str, Any]] | None = None
        self.init_row: dict[str, Any] | None = None
        self.titles: list[str] = []
        self.where: tuple[str, int, Any] = ("", 0, None)  # the row being read

    # -- ids
    def _eid(self, row: dict[str, Any], path: str, line: int) -> Any:
        u = row.get("uuid")
        if isinstance(u, str) and u and u not in self.ids:
            return u
        return f"{os.path.basename(path)}:{line}"

    def _add(self, e: Event) -> Event:
        self.ids.add(e.id)
        self.s.events.append(e)
        return e

    # -- rows
    def row(self, row: Any, path: str, line: int, sf: SourceFile | None) -> list[Event]:
        s = self.s
        if not isinstance(row, dict):
            eid = f"{os.path.basename(path)}:{line}"
            s.diag("claude-code.row-not-object", f"line holds a JSON {type(row).__name__}, not an object; kept as an event of kind other",
                   WARNING, file=path, line=line)
            return [self._add(Event(eid, OTHER, "row", row, ref=Ref(path, eid, line, line)))]
        t = row.get("type")
        u = row.get("uuid")
        if self.kind == layout.TRANSCRIPT and isinstance(u, str) and u in self.uuids:
            eid = f"{os.path.basename(path)}:{line}"
            s.diag("claude-code.duplicate-row", f"row {u} was already read (a resumed session repeats its rows); kept aside, counted once",
                   INFO, file=path, line=line, event_id=eid)
            return [self._add(Event(eid, OTHER, f"duplicate:{t}", row, ref=Ref(path, eid, line, line), extra={"duplicate_of": u}))]
        eid = self._eid(row, path, line)
        self.where = (path, line, eid)
        if isinstance(u, str):
            self.uuids.add(u)
        ref = Ref(path, eid, line, line)
        ts = _s(row.get("timestamp"))
        if ts:
            self.stamps.append(ts)
        v = row.get("version") or row.get("claude_code_version")
        if v is not None and v not in self.versions and isinstance(v, str):
            self.versions.append(v)
        if self.cwd is None and isinstance(row.get("cwd"), str):
            self.cwd = row["cwd"]
        parent = row.get("parentUuid")
        if t == "assistant":
            out = [self._assistant(row, eid, ref, ts)]
        elif t == "user":
            out = self._user(row, eid, ref, ts, path, line)
        elif t == "system":
            out = [self._system(row, eid, ref, ts)]
        elif t == "result" and self.kind == layout.STREAM:
            e = self._add(Event(eid, STATE, "result", row, source="harness", timestamp=ts, text=_s(row.get("result")), ref=ref))
            self.result_row = (e, row)
            out = [e]
        else:
            if t not in KNOWN_TYPES:
                s.diag("claude-code.unknown-row-type", f"row type {t!r} is not one this reader knows; kept as an event of kind other",
                       INFO, file=path, line=line, event_id=eid)
            if t == "summary" and isinstance(row.get("summary"), str):
                self.titles.append(row["summary"])
            text = None
            att = row.get("attachment")
            if isinstance(att, dict):
                text = _s(att.get("content")) or _s(att.get("prompt"))
            out = [self._add(Event(eid, OTHER, str(t), row, source="harness", timestamp=ts, text=text, ref=ref))]
        for e in out:
            if isinstance(parent, str) and e is out[0]:
                e.parent_id = parent
            elif len(out) > 1 and e is not out[0]:
                e.parent_id = out[0].id if isinstance(out[0].parent_id, str) or out[0].parent_id is not None else None
            if sf is not None:
                sf.event_ids.append(e.id)
        if row.get("isSidechain") is True and not self.agent_file:
            for e in out:
                e.extra["sidechain"] = True
        return out

    def _assistant(self, row: dict[str, Any], eid: Any, ref: Ref, ts: str | None) -> Event:
        msg = row.get("message") if isinstance(row.get("message"), dict) else {}
        content = msg.get("content")
        texts: list[str] = []
        thinking: list[str] = []
        calls = []
        extra: dict[str, Any] = {}
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                bt = b.get("type")
                if bt == "text" and isinstance(b.get("text"), str):
                    texts.append(b["text"])
                elif bt == "thinking":
                    if isinstance(b.get("thinking"), str):
                        thinking.append(b["thinking"])
                elif bt == "redacted_thinking":
                    extra["redacted_thinking"] = True
                elif bt in ("tool_use", "server_tool_use"):
                    calls.append(self._call(b))
                else:
                    extra.setdefault("other_blocks", []).append(bt)
        model = _s(msg.get("model"))
        if model and model != "<synthetic>" and model not in self.models:
            self.models.append(model)
        if model:
            extra["model"] = model
        rid = _s(msg.get("id")) or _s(row.get("requestId")) or (eid if isinstance(eid, str) else str(eid))
        kind = ACTION if calls else MESSAGE if texts else REASONING if thinking else OTHER
        e = Event(eid, kind, "assistant", row, source="agent", role="assistant", timestamp=ts,
                  text="\n".join(texts) if texts else None, tool_calls=calls, response_id=rid,
                  reasoning="\n".join(thinking) if thinking else None, ref=ref, extra=extra)
        if kind == REASONING:
            e.text = e.reasoning
        if isinstance(msg.get("stop_reason"), str):
            e.extra["stop_reason"] = msg["stop_reason"]
        if row.get("isApiErrorMessage") is True:
            e.extra["api_error"] = True
        self._add(e)
        for c in calls:
            self.call_event[c.call_id] = e
        self.responses.setdefault(rid, []).append((e, msg))
        return e

    def _call(self, b: dict[str, Any]):
        native = b.get("id") if isinstance(b.get("id"), str) else None
        name = b.get("name") if isinstance(b.get("name"), str) else "tool"
        cid = native
        if native is not None:
            n = self.minted.get(native, 0)
            self.minted[native] = n + 1
            if n:
                cid = f"{native}#{n + 1}"
                path, line, eid = self.where
                self.s.diag("claude-code.call-id-reused",
                            f"tool_use id {native!r} was used before in this session; this call is {cid!r}",
                            INFO, file=path, line=line, event_id=eid)
        call = CLAUDE_CODE_TOOLS.call(name, b.get("input"), cid)
        if native is not None:
            self.calls.setdefault(native, []).append((None, call))  # event set below via call_event
        return call

    def _user(self, row: dict[str, Any], eid: Any, ref: Ref, ts: str | None, path: str, line: int) -> list[Event]:
        msg = row.get("message") if isinstance(row.get("message"), dict) else {}
        content = msg.get("content")
        out: list[Event] = []
        if isinstance(content, list):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            rest = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
        else:
            results, rest = [], []
        parts = 0
        if not isinstance(content, list) or rest:
            text = content if isinstance(content, str) else block_text(rest)
            images = sum(1 for b in rest if isinstance(b, dict) and b.get("type") == "image")
            why = injected_reason(row, text)
            extra: dict[str, Any] = {}
            if why:
                extra["injected"] = why
            if images:
                extra["images"] = images
            if content is None:
                self.s.diag("claude-code.no-content", "a user row without message content", INFO, file=path, line=line, event_id=eid)
            e = Event(eid, MESSAGE, "user", row, source="user" if not why else "harness", role="user", timestamp=ts,
                      text=text, ref=ref, extra=extra)
            if row.get("isCompactSummary") is True:
                e.kind = OTHER
                e.type = "compact_summary"
                e.extra["copied_context"] = True
            self._add(e)
            out.append(e)
            parts += 1
            if why is None and self.task is None and text and text.strip() and row.get("isSidechain") is not True:
                self.task = text
        tur = row.get("toolUseResult", row.get("tool_use_result"))
        for k, b in enumerate(results):
            oid = eid if parts == 0 else f"{eid}/{parts}"
            parts += 1
            native = b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else None
            cid, act = self._answer(native)
            extra = {}
            if b.get("is_error") is True:
                extra["is_error"] = True
            if native is not None and cid != native:
                extra["native_call_id"] = native
            if act is None:
                self.s.diag("claude-code.orphan-result",
                            f"tool_result for {native!r} answers no earlier unanswered tool_use in this file",
                            INFO, file=path, line=line, event_id=oid)
            if isinstance(tur, dict) and len(results) == 1:
                for key in ("agentId", "runId", "status", "isAsync", "totalToolUseCount"):
                    if key in tur:
                        extra.setdefault("tool_use_result", {})[key] = tur[key]
            e = Event(oid, OBSERVATION, "tool_result", row if oid == eid else b, source="environment", role="tool",
                      timestamp=ts, text=block_text(b.get("content")), call_id=cid,
                      cause=act.id if act is not None else None, ref=Ref(ref.path, oid, line, line), extra=extra)
            self._add(e)
            out.append(e)
            if act is not None and cid is not None:
                self.result_rows[cid] = row
        return out

    def _answer(self, native: str | None) -> tuple[str | None, Event | None]:
        """The call a result for ``native`` answers: the latest earlier unanswered one."""
        if native is None:
            return None, None
        for _ev, call in reversed(self.calls.get(native, [])):
            if call.call_id not in self.answered:
                self.answered.add(call.call_id)
                return call.call_id, self.call_event.get(call.call_id)
        if native in self.minted:
            n = self.minted[native] + 1
            self.minted[native] = n
            return f"{native}#orphan{n}", None
        return native, None

    def _system(self, row: dict[str, Any], eid: Any, ref: Ref, ts: str | None) -> Event:
        sub = row.get("subtype")
        text = _s(row.get("content"))
        if sub == "init" and self.kind == layout.STREAM:
            self.init_row = row
            m = _s(row.get("model"))
            if m and m not in self.models:
                self.models.append(m)
            if isinstance(row.get("cwd"), str):
                self.cwd = row["cwd"]
            e = Event(eid, SYSTEM, "system/init", row, source="harness", role="system", timestamp=ts, ref=ref)
            e.text = None
            return self._add(e)
        if sub == "compact_boundary":
            e = Event(eid, CONDENSATION, "system/compact_boundary", row, source="harness", timestamp=ts, text=text, ref=ref)
            meta = row.get("compactMetadata") if isinstance(row.get("compactMetadata"), dict) else {}
            e.extra["compact"] = {k: meta.get(k) for k in ("trigger", "preTokens") if k in meta}
            lp = row.get("logicalParentUuid")
            if isinstance(lp, str):
                e.extra["logical_parent"] = lp
            return self._add(e)
        kind = ERROR_EVENT if sub in ("api_error",) else STATE
        e = Event(eid, kind, f"system/{sub}" if isinstance(sub, str) else "system", row, source="harness", timestamp=ts,
                  text=text, ref=ref)
        if sub == "api_retry":
            e.text = f"API retry {row.get('attempt')}/{row.get('max_retries')}: {row.get('error')}"
        return self._add(e)

    # -- after all rows
    def finish_usage(self) -> None:
        """Put each response's usage on its first event (counted once)."""
        snap = 0
        for rid, parts in self.responses.items():
            best: dict[str, Any] | None = None
            stopped = None
            max_out = None
            for _e, msg in parts:
                u = msg.get("usage")
                if not isinstance(u, dict):
                    continue
                o = _int(u.get("output_tokens"))
                if o is not None and (max_out is None or o > max_out):
                    max_out = o
                if stopped is None and isinstance(msg.get("stop_reason"), str):
                    stopped = u
                if best is None:
                    best = u
            chosen = stopped or best
            if chosen is None:
                continue
            first = parts[0][0]
            lower = stopped is None
            inp = _int(chosen.get("input_tokens"))
            cr = _int(chosen.get("cache_read_input_tokens"))
            cw = _int(chosen.get("cache_creation_input_tokens"))
            out = max_out if stopped is None else _int(chosen.get("output_tokens"))
            total_in = None if inp is None and cr is None and cw is None else (inp or 0) + (cr or 0) + (cw or 0)
            model = _s(parts[0][1].get("model"))
            usage = dict(chosen)
            if stopped is None and max_out is not None:
                usage["output_tokens"] = max_out
            first.usage = usage
            first.model_usage = Usage(input=total_in, output=out, cache_read=cr, cache_write=cw, total=_int(chosen.get("total_tokens")),
                                      cost=None, source="message.usage (once per message.id)", model=model,
                                      output_lower_bound=lower)
            first.extra["rows_in_response"] = len(parts)
            if lower:
                snap += 1
        if snap:
            self.s.diag("claude-code.usage-stream-snapshot",
                        f"{snap} model response(s) have no row with a stop_reason: their usage is the stream-start snapshot, "
                        "so output_tokens is a lower bound (Usage.output_lower_bound)", INFO)

    def regroup(self) -> None:
        """Stream-json (no row tree): rows of one response that tool results
        interrupted are moved up to the response's other rows, so a response
        is one contiguous run of events (its results follow it)."""
        evs = self.s.events
        last_of: dict[str, int] = {}
        out: list[Event] = []
        moved = 0
        for e in evs:
            rid = e.response_id if e.role == "assistant" else None
            if rid is not None and rid in last_of and last_of[rid] != len(out) - 1:
                pos = last_of[rid] + 1
                out.insert(pos, e)
                for k, v in last_of.items():
                    if v >= pos:
                        last_of[k] = v + 1
                last_of[rid] = pos
                moved += 1
                continue
            if rid is not None:
                last_of[rid] = len(out)
            out.append(e)
        if moved:
            self.s.events[:] = out
            self.s.diag("claude-code.response-regrouped",
                        f"{moved} row(s) of a model response were written after tool results of that response; "
                        "events list each response's rows together", INFO)


# ---------------------------------------------------------------- tree


def apply_tree(s: Session, leaf_hint: Any = None) -> None:
    """``Event.branch`` from the ``parentUuid`` tree: the active branch is the
    path from the last-written row (with a uuid) to its root."""
    by_id: dict[Any, Event] = {}
    for e in s.events:
        if "/" not in str(e.id):
            by_id.setdefault(e.id, e)
    tree = [e for e in s.events if isinstance(e.raw, dict) and isinstance(e.raw.get("uuid"), str) and e.id == e.raw.get("uuid")]
    if not tree:
        return
    # effective parents: a null parentUuid mid-file (not a compaction) or one
    # naming a row not in the file hangs off the row written before it
    prev: dict[bool, Event | None] = {False: None, True: None}
    nulls, gone = 0, 0
    for e in tree:
        side = bool(e.extra.get("sidechain"))
        p = e.parent_id
        if p is None and e.kind == CONDENSATION and isinstance(e.extra.get("logical_parent"), str):
            p = e.extra["logical_parent"] if e.extra["logical_parent"] in by_id else None
            e.parent_id = None
        elif p is None and prev[side] is not None:
            nulls += 1
            e.parent_id = prev[side].id
        elif p is not None and p not in by_id:
            gone += 1
            e.extra["native_parent"] = p
            e.parent_id = prev[side].id if prev[side] is not None else None
        prev[side] = e
    if nulls:
        s.diag("claude-code.parent-null", f"{nulls} row(s) after the first have a null parentUuid; each follows the row written before it",
               INFO)
    if gone:
        s.diag("claude-code.parent-missing", f"{gone} row(s) name a parentUuid that is not in this file (a resumed or cut session); "
               "each follows the row written before it", INFO)
    conv = [e for e in tree if e.kind in (MESSAGE, ACTION, OBSERVATION, REASONING, CONDENSATION) or e.type == "compact_summary"]
    main = [e for e in (conv or tree) if not e.extra.get("sidechain")] or (conv or tree)
    leaf = main[-1]
    path: list[Any] = []
    seen: set[Any] = set()
    cur: Event | None = leaf
    looped = False
    while cur is not None:
        if cur.id in seen:
            looped = True
            break
        seen.add(cur.id)
        path.append(cur.id)
        p = cur.parent_id
        if p is None and cur.kind == CONDENSATION:
            p = cur.extra.get("logical_parent")
        if p is None:
            break
        cur = by_id.get(p)
    if looped and cur is not None:
        s.diag("claude-code.parent-cycle", f"the parentUuid chain loops at {cur.id}; the branch stops there", WARNING, event_id=cur.id)
    on = set(path)
    # Parallel tool calls fork the tree without leaving it: each result hangs
    # off its own tool_use row, and the rows of one response can too. A side
    # row that continues a response on the branch, or answers a call on it,
    # is part of the conversation (as Claude Code loads it).
    active_resp = {by_id[i].response_id for i in path if i in by_id and by_id[i].role == "assistant"}
    changed = True
    while changed:
        changed = False
        for e in tree:
            if e.id in on or e.parent_id not in on or e.extra.get("sidechain"):
                continue
            if (e.role == "assistant" and e.response_id in active_resp) or (e.kind == OBSERVATION and e.cause in on):
                on.add(e.id)
                changed = True
    # everything whose chain reaches the active branch through rows off it is abandoned
    children: dict[Any, list[Event]] = {}
    for e in s.events:
        if e.parent_id is not None:
            children.setdefault(e.parent_id, []).append(e)
    # The active branch is one line: each of its rows follows the one before
    # it (so parallel results do not read as branches); rows off it keep
    # their tree parent.
    last_active: Any = None
    for e in tree:
        if e.id in on:
            e.parent_id = last_active
            last_active = e.id
    abandoned = 0
    leaves = []
    in_tree = {id(e) for e in tree}
    for e in s.events:
        if e.id in on:
            e.branch = BRANCH_ACTIVE
        elif "/" in str(e.id) and str(e.id).split("/", 1)[0] in on:
            e.branch = BRANCH_ACTIVE
        elif id(e) in in_tree or ("/" in str(e.id) and str(e.id).split("/", 1)[0] in by_id):
            if e.kind in (MESSAGE, ACTION, OBSERVATION, REASONING, CONDENSATION) and not e.extra.get("sidechain"):
                e.branch = BRANCH_ABANDONED
                abandoned += 1
                if e.id not in children:
                    leaves.append(e.id)
            else:
                e.branch = "side"
        else:
            e.branch = "side"
    s.metadata["leaf_event_id"] = leaf.id
    s.metadata["active_branch_length"] = len(path)
    if abandoned:
        s.metadata["abandoned_leaves"] = leaves
        s.diag("claude-code.forked", f"the row tree forks (a rewind or an edit): {abandoned} event(s) lie off the active branch "
               f"ending at {leaf.id}; they are kept as abandoned", INFO)


# ---------------------------------------------------------------- steps


def build_steps(s: Session) -> list[Step]:
    """One step per tool call on the active branch (or everywhere in a log
    without a tree), paired with the result that answered it."""
    obs: dict[str, Event] = {}
    usage_of: dict[Any, Event] = {}  # response id -> the event carrying its usage
    for e in s.events:
        if e.kind == OBSERVATION and e.call_id and e.cause is not None and e.call_id not in obs:
            obs[e.call_id] = e
        elif e.model_usage is not None and e.response_id is not None:
            usage_of.setdefault(e.response_id, e)
    steps: list[Step] = []
    seen_resp: set[Any] = set()
    for e in s.events:
        if e.kind != ACTION or e.branch not in (None, BRANCH_ACTIVE) or e.extra.get("sidechain"):
            continue
        first_of_resp = e.response_id not in seen_resp
        seen_resp.add(e.response_id)
        for k, tc in enumerate(e.tool_calls):
            o = obs.get(tc.call_id) if tc.call_id else None
            # the response's usage rides on its first step
            usage_ev = usage_of.get(e.response_id) if first_of_resp and k == 0 else None
            extra: dict[str, Any] = {"call_id": tc.call_id}
            if o is None:
                extra["unanswered"] = True
            elif o.extra.get("is_error"):
                extra["is_error"] = True
            steps.append(Step(
                step_id=len(steps) + 1,
                action=render_action(tc.name, tc.arguments, SINGLE_ARGUMENT),
                tool_type=tc.name,
                observation=(o.text or "") if o is not None else "",
                thinking=(e.reasoning or e.text) if k == 0 else None,
                action_ref=e.ref,
                observation_ref=o.ref if o is not None else None,
                action_event_id=e.id,
                observation_event_id=o.id if o is not None else None,
                parallel_group=e.response_id,
                usage=usage_ev.usage if usage_ev is not None else None,
                model_usage=usage_ev.model_usage if usage_ev is not None else None,
                extra=extra,
            ))
    return steps


# ---------------------------------------------------------------- one session


def read_rows(b: SessionBuilder, path: Path, role: str = "events") -> _Rows:
    lines, sf = b.jsonl(path, role)
    return _Rows(str(path), lines or [], sf if lines is not None else None)


def build_session(s: Session, files: list[_Rows], kind: str, agent_file: bool = False) -> _Reader:
    if not agent_file:
        # a file whose every conversation row is a sidechain row is a
        # sub-agent's own file under another name
        conv = [jl.value for f in files for jl in f.rows
                if isinstance(jl.value, dict) and jl.value.get("type") in ("user", "assistant")]
        agent_file = bool(conv) and all(v.get("isSidechain") is True for v in conv)
        if agent_file:
            s.metadata["sidechain_file"] = True
    r = _Reader(s, kind, agent_file)
    for f in files:
        for jl in f.rows:
            if jl.value is MISSING:
                continue
            r.row(jl.value, f.path, jl.line, f.sf)
    # fix the event of each call (set after the call was made)
    for native, lst in r.calls.items():
        r.calls[native] = [(r.call_event.get(c.call_id), c) for _e, c in lst]
    if kind == layout.STREAM:
        r.regroup()
    r.finish_usage()
    if kind == layout.TRANSCRIPT:
        apply_tree(s)
    # compaction: the summary row that follows a boundary is its text
    for e in s.events:
        if e.kind == CONDENSATION:
            summ = next((x for x in s.events if x.type == "compact_summary" and x.parent_id == e.id), None)
            if summ is not None:
                e.extra["summary_event_id"] = summ.id
                e.text = summ.text
                idx = s.events.index(e)
                e.extra["forgotten_event_ids"] = [x.id for x in s.events[:idx] if x.branch in (None, BRANCH_ACTIVE)
                                                  and x.kind in (MESSAGE, ACTION, OBSERVATION, REASONING)]
    unanswered = [tc.call_id for e in s.events if e.kind == ACTION for tc in e.tool_calls if tc.call_id not in r.answered]
    s.metadata["actions_without_observation"] = unanswered
    return r


def fill_run(s: Session, r: _Reader) -> None:
    run = s.run
    run.harness = NAME
    run.harness_version = r.versions[-1] if r.versions else None
    run.models = list(r.models)
    run.workspace = r.cwd
    if r.stamps:
        run.started_at, run.ended_at = min(r.stamps), max(r.stamps)
    if r.versions:
        s.metadata["versions"] = r.versions
    if r.titles:
        s.metadata["title"] = r.titles[-1]
    if s.task is None and r.task is not None:
        s.task, s.task_source = r.task, "first user prompt"
    if r.init_row is not None:
        init = r.init_row
        s.metadata["init"] = {k: init.get(k) for k in ("session_id", "model", "cwd", "permissionMode", "claude_code_version", "tools", "apiKeySource") if k in init}
        if isinstance(init.get("session_id"), str) and s.id is None:
            s.id = init["session_id"]
    if r.result_row is not None:
        e, row = r.result_row
        cost = row.get("total_cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            run.cost_usd = float(cost)
        mu = row.get("modelUsage")
        if isinstance(mu, dict):
            s.metadata["model_usage_totals"] = mu
        for k in ("num_turns", "duration_ms", "duration_api_ms", "subtype", "stop_reason", "is_error"):
            if k in row:
                s.metadata.setdefault("result", {})[k] = row[k]
        if isinstance(row.get("session_id"), str) and s.id is None:
            s.id = row["session_id"]


def outcome_of(s: Session, r: _Reader) -> Outcome | None:
    """The harness's end signal: a stream's ``result`` row; in a transcript,
    the last response of the active branch ending its turn."""
    if r.result_row is not None:
        e, row = r.result_row
        sub = _s(row.get("subtype")) or ""
        is_err = row.get("is_error") is True or sub.startswith("error")
        ev = [{"file": e.ref.path if e.ref else None, "line": e.ref.line_start if e.ref else None, "event_id": e.id}]
        if "max_turns" in sub or "max_budget" in sub:
            return Outcome(True, budget_exhausted=True, status=sub, signal=f"result {sub}", evidence=ev)
        if is_err:
            return Outcome(True, external_error=f"result {sub}: {str(row.get('result') or '')[:200]}".strip(), status=sub,
                           signal=f"result {sub}", evidence=ev)
        return Outcome(True, status=sub or "success", signal=f"result {sub or 'success'}", claimed_success=True, evidence=ev)
    last = next((e for e in reversed(s.events) if e.role == "assistant" and e.branch in (None, BRANCH_ACTIVE)
                 and not e.extra.get("sidechain")), None)
    if last is None:
        return None
    stop = last.extra.get("stop_reason")
    rid = last.response_id
    stops = [x.extra.get("stop_reason") for x in s.events if x.response_id == rid and x.extra.get("stop_reason")]
    stop = stops[-1] if stops else stop
    ev = [{"file": last.ref.path if last.ref else None, "line": last.ref.line_start if last.ref else None, "event_id": last.id}]
    if stop == "end_turn" and last.kind != ACTION:
        return Outcome(True, status="end_turn", signal="the last response ended its turn (stop_reason end_turn)",
                       claimed_success=True, evidence=ev)
    if stop == "max_tokens":
        return Outcome(False, budget_exhausted=True, status="max_tokens", signal="the last response hit max_tokens", evidence=ev)
    return None


# ---------------------------------------------------------------- sub-agents


def _agent_files(main: Path, b: SessionBuilder) -> list[tuple[Path, str | None]]:
    """Sub-agent files of the session ``main``: ``(path, workflow run id)``."""
    probe = b.probe
    out: list[tuple[Path, str | None]] = []
    comp = main.with_suffix("")
    sub = comp / "subagents"
    for n in sorted(probe.listdir(sub) or []):
        if layout.AGENT_FILE.match(n) and probe.is_file(sub / n):
            out.append((sub / n, None))
    wf = sub / "workflows"
    for run_id in sorted(probe.listdir(wf) or []):
        d = wf / run_id
        for n in sorted(probe.listdir(d) or []):
            if layout.AGENT_FILE.match(n) and probe.is_file(d / n):
                out.append((d / n, run_id))
    # 2.0.x: project-level agent-<id>.jsonl files whose rows name this session
    for n in sorted(probe.listdir(main.parent) or []):
        if layout.AGENT_FILE.match(n):
            p = main.parent / n
            if probe.is_file(p) and layout.session_of_agent_file(p, probe) == main:
                out.append((p, None))
    return out


def _meta(b: SessionBuilder, agent_file: Path) -> dict[str, Any]:
    mp = agent_file.with_name(agent_file.name[: -len(".jsonl")] + ".meta.json")
    if not b.probe.is_file(mp):
        return {}
    value, sf = b.read_json(mp, "subagent-meta")
    return value if isinstance(value, dict) else {}


def read_subagents(parent: Session, main: Path, b: SessionBuilder, options: ReadOptions, depth: int) -> None:
    files = _agent_files(main, b)
    if not files:
        return
    if depth >= MAX_DEPTH:
        parent.diag("claude-code.subagents-too-deep", f"sub-agents nest deeper than {MAX_DEPTH}; not read", WARNING, file=str(main))
        return
    children: dict[str, Session] = {}
    metas: dict[str, dict[str, Any]] = {}
    runs: dict[str, str | None] = {}
    for path, run_id in files:
        agent_id = layout.AGENT_FILE.match(path.name).group(1)  # type: ignore[union-attr]
        child = Session(format=NAME, source_path=str(path), view="transcript")
        rows = read_rows(b, path, "subagent")
        r = build_session(child, [rows], layout.TRANSCRIPT, agent_file=True)
        fill_run(child, r)
        child.id = agent_id
        child.metadata["agent_id"] = agent_id
        if run_id:
            child.metadata["workflow_run_id"] = run_id
        meta = _meta(b, path)
        if meta:
            child.metadata["meta"] = meta
        # the child's files are the child's (the loss report checks each session's own)
        for sf in list(b.session.files):
            if sf.path == str(path) or sf.path == str(path)[: -len(".jsonl")] + ".meta.json":
                b.session.files.remove(sf)
                child.files.append(sf)
        if options.steps:
            child.steps = build_steps(child)
        child.outcome = outcome_of(child, r)
        # the diagnostics of the child's files stay with the child
        for d in list(b.session.diagnostics):
            if d.file == str(path):
                b.session.diagnostics.remove(d)
                child.diagnostics.append(d)
        children[agent_id] = child
        metas[agent_id] = meta
        runs[agent_id] = run_id
    if run_id_present := any(runs.values()):
        journal_dirs = {p.parent for p, rid in files if rid}
        for d in sorted(journal_dirs):
            j = d / "journal.jsonl"
            if b.probe.is_file(j):
                lines, sf = b.jsonl(j, "workflow-journal")
                for jl in lines or []:
                    v = jl.value
                    if isinstance(v, dict) and v.get("type") == "result" and isinstance(v.get("agentId"), str) and v["agentId"] in children:
                        children[v["agentId"]].metadata["workflow_result"] = v.get("result")
    _ = run_id_present
    link_children(parent, children, metas, runs)


def _spawn_steps(s: Session) -> dict[str, Step]:
    return {st.extra.get("call_id"): st for st in s.steps if st.extra.get("call_id")}


def link_children(parent: Session, children: dict[str, Session], metas: dict[str, dict[str, Any]],
                  runs: dict[str, str | None]) -> None:
    """Tie each sub-agent to the call that spawned it: ``toolUseResult.agentId``
    on the spawning call's result, then the sidecar's ``toolUseId`` (and
    ``parentAgentId`` for nesting), then a workflow's ``runId``, then the
    spawning call's prompt."""
    # nesting first: a child whose sidecar names a parent agent hangs under it
    top: dict[str, Session] = {}
    for aid, c in children.items():
        pa = metas.get(aid, {}).get("parentAgentId")
        if isinstance(pa, str) and pa in children and pa != aid:
            host = children[pa]
            host.children.append(c)
            _link_one(host, c, aid, metas.get(aid, {}), runs.get(aid))
            continue
        top[aid] = c
    for aid, c in top.items():
        parent.children.append(c)
        _link_one(parent, c, aid, metas.get(aid, {}), runs.get(aid))
    unlinked = [c.id for c in parent.walk() if c is not parent and c.spawned_by is None]
    if unlinked:
        parent.diag("claude-code.subagent-unlinked",
                    f"{len(unlinked)} sub-agent(s) could not be tied to the call that spawned them: {', '.join(map(str, unlinked))}",
                    INFO)


def _link_one(host: Session, child: Session, aid: str, meta: dict[str, Any], run_id: str | None) -> None:
    steps = _spawn_steps(host)
    events = {e.id: e for e in host.events}
    found: tuple[Step, str, str] | None = None
    for st in host.steps:
        o = events.get(st.observation_event_id)
        tur = o.extra.get("tool_use_result") if o is not None else None
        if isinstance(tur, dict) and tur.get("agentId") == aid:
            found = (st, "toolUseResult.agentId", f"the result of call {st.extra.get('call_id')} names agent {aid}")
            break
        if run_id is not None and isinstance(tur, dict) and tur.get("runId") == run_id:
            found = (st, "workflow-runId", f"workflow run {run_id} was started by call {st.extra.get('call_id')}")
            break
    if found is None and isinstance(meta.get("toolUseId"), str) and meta["toolUseId"] in steps:
        st = steps[meta["toolUseId"]]
        found = (st, "meta.toolUseId", f"agent-{aid}.meta.json names call {meta['toolUseId']}")
    if found is None:
        first = next((e.text for e in child.events if e.role == "user" and e.text), None)
        if first:
            for st in host.steps:
                ev = events.get(st.action_event_id)
                if ev is None:
                    continue
                for tc in ev.tool_calls:
                    if tc.call_id == st.extra.get("call_id") and tc.op == "spawn":
                        prompt = (tc.input or {}).get("prompt")
                        if isinstance(prompt, str) and prompt.strip() and prompt.strip() in first:
                            found = (st, "prompt", f"call {tc.call_id}'s prompt opens agent {aid}")
                            break
                if found:
                    break
    if found is None:
        return
    st, method, detail = found
    st.children.append(child)
    child.spawned_by = SpawnLink(child.id, st.step_id, st.action_event_id, method, detail)
    child.metadata["spawned_by"] = {"step_id": st.step_id, "action_event_id": st.action_event_id, "call_id": st.extra.get("call_id"),
                                    "method": method}


def split_stream_children(s: Session) -> dict[str, Session]:
    """stream-json: rows with a ``parent_tool_use_id`` ran inside the sub-agent
    that call spawned; they move to that sub-agent's session (keyed by the call id)."""
    groups: dict[str, list[Event]] = {}
    for e in s.events:
        raw = e.raw if isinstance(e.raw, dict) else None
        pt = raw.get("parent_tool_use_id") if raw is not None else None
        if isinstance(pt, str):
            groups.setdefault(pt, []).append(e)
    out: dict[str, Session] = {}
    for pt, evs in groups.items():
        child = Session(format=NAME, source_path=s.source_path, id=f"{s.id}/{pt}", view="stream-json")
        ids = {id(e) for e in evs}
        child.events = evs
        s.events = [e for e in s.events if id(e) not in ids]
        child.run.harness = NAME
        child.run.harness_version = s.run.harness_version
        out[pt] = child
    return out


def link_stream_children(s: Session, children: dict[str, Session], options: ReadOptions) -> None:
    steps = _spawn_steps(s)
    for pt, child in children.items():
        if options.steps:
            child.steps = build_steps(child)
        s.children.append(child)
        st = steps.get(pt)
        if st is not None:
            st.children.append(child)
            child.spawned_by = SpawnLink(child.id, st.step_id, st.action_event_id, "parent_tool_use_id",
                                         f"its rows name parent_tool_use_id {pt}")
        else:
            s.diag("claude-code.subagent-unlinked", f"rows name parent_tool_use_id {pt!r}, a call not in this log", INFO)
