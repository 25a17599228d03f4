"""The Codex reader (see the package docstring: :mod:`trajkit.formats.codex`)."""


from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING, loads
from ...model import (
    ACTION,
    CONDENSATION,
    ERROR_EVENT,
    MESSAGE,
    OBSERVATION,
    OTHER,
    PATCH_OP,
    REASONING,
    SHELL_OP,
    STATE,
    SYSTEM,
    Event,
    FileEdit,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    SpawnLink,
    Step,
    ToolCall,
    TrajkitError,
    Usage,
)
from ...reading.listing import session_row
from ...reading.builder import SessionBuilder
from ...reading.io import iter_jsonl
from ...steps import render_action
from ...vocab.codex import CODEX_TOOLS
from .finding import parent_of, parent_thread_of
from .detect import _OUTPUT_ITEMS, _MODEL_ITEMS, _CALL_ITEMS, _EXEC_ACTIONS, INJECTED_PREFIXES, MAX_SUBAGENT_DEPTH, NAME, ROLLOUT_TYPES, _DAY_DIR, _classify_line

# ---------------------------------------------------------------- helpers


def _text_of(content: Any) -> str | None:
    """The text of a message ``content`` (a string, or parts with ``text``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, dict):
                if isinstance(p.get("text"), str):
                    out.append(p["text"])
                elif p.get("type") in ("input_image", "output_image", "image"):
                    out.append("[image]")
            elif isinstance(p, str):
                out.append(p)
        return "\n".join(out)
    return None


def _output_text(out: Any) -> tuple[str, dict[str, Any]]:
    """An output's text, and facts from the older ``{"output", "metadata"}`` JSON string."""
    if isinstance(out, str):
        if out.startswith("{") and '"output"' in out:
            try:
                v = orjson.loads(out)
            except orjson.JSONDecodeError:
                return out, {}
            if isinstance(v, dict) and isinstance(v.get("output"), str):
                meta = v.get("metadata") if isinstance(v.get("metadata"), dict) else {}
                return v["output"], {k: meta[k] for k in ("exit_code", "duration_seconds") if k in meta}
        return out, {}
    if isinstance(out, list):
        return _text_of(out) or "", {}
    if isinstance(out, dict):
        t = out.get("content") if "content" in out else out.get("output")
        if isinstance(t, (str, list)):
            return _text_of(t) or "", {}
        return orjson.dumps(out).decode(), {}
    if out is None:
        return "", {}
    return orjson.dumps(out, default=str).decode(), {}


def _summary_text(p: dict[str, Any]) -> str | None:
    parts = []
    for s in p.get("summary") or []:
        if isinstance(s, dict) and isinstance(s.get("text"), str):
            parts.append(s["text"])
        elif isinstance(s, str):
            parts.append(s)
    if not parts and isinstance(p.get("content"), list):
        for c in p["content"]:
            if isinstance(c, dict) and isinstance(c.get("text"), str):
                parts.append(c["text"])
    return "\n\n".join(parts) if parts else None


_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


def patch_files(text: str) -> list[tuple[str, str]]:
    """``(kind, path)`` of every file an ``apply_patch`` text names."""
    return [(m.group(1).lower(), m.group(2).strip()) for m in _PATCH_FILE.finditer(text or "")]


def _int(v: Any) -> int | None:
    return v if type(v) is int else int(v) if isinstance(v, float) and v == v and abs(v) < 1e18 else None


def usage_of(counts: dict[str, Any], model: str | None, source: str) -> Usage:
    """A Codex usage object (``input_tokens`` includes the cached ones) as :class:`Usage`."""
    g = counts.get
    cached = g("cached_input_tokens")
    reasoning = g("reasoning_output_tokens")
    return Usage(input=_int(g("input_tokens")), output=_int(g("output_tokens")),
                 cache_read=_int(cached if cached is not None else g("cache_read_input_tokens")),
                 reasoning=_int(reasoning if reasoning is not None else g("reasoning_tokens")), total=_int(g("total_tokens")),
                 source=source, model=model)


_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _diff(total: dict[str, Any], prev: dict[str, Any] | None) -> dict[str, Any]:
    out = {}
    for k in _USAGE_KEYS:
        a = total.get(k)
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            b = (prev or {}).get(k)
            out[k] = a - (b if isinstance(b, (int, float)) and not isinstance(b, bool) else 0)
    return out


def _same_totals(a: Any, b: Any) -> bool:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    ga, gb = a.get, b.get
    return (ga("input_tokens") == gb("input_tokens") and ga("output_tokens") == gb("output_tokens")
            and ga("cached_input_tokens") == gb("cached_input_tokens") and ga("reasoning_output_tokens") == gb("reasoning_output_tokens")
            and ga("total_tokens") == gb("total_tokens"))


# ---------------------------------------------------------------- reading


class _Reader:
    """One rollout or exec stream being read into a Session."""

    def __init__(self, b: SessionBuilder, path: str):
        self.b = b
        self.s = b.session
        self.path = path
        self.model: str | None = None
        self.group: list[Event] = []  # model items of the open response
        self.groups = 0
        self.pending: dict[str, list[list[Any]]] = {}  # native call id -> [[minted, event, answered]]
        self.minted: set[str] = set()
        self.patches: set[str] = set()  # minted ids of calls whose tool is a patch
        self.calls_of: dict[Any, list[ToolCall]] = {}
        self.call_event: dict[str, Event] = {}  # minted id -> action event
        self.answer: dict[str, Event] = {}  # minted id -> output event
        self.order: list[tuple[Event, ToolCall]] = []
        self.texts: dict[str, set[str]] = {"user": set(), "assistant": set(), "reasoning": set()}
        self.has_token_count = False
        self.prev_total: dict[str, Any] | None = None
        self.task: str | None = None
        self.lifecycle: list[tuple[str, Event]] = []  # (kind, event) after the last user message

    # -------------------------------------------------------- common

    def diag(self, code: str, msg: str, severity: str = WARNING, **where: Any) -> None:
        self.b.diag(code, msg, severity, file=self.path, **where)

    def event(self, eid: str, kind: str, type_: str, raw: Any, line: int, timestamp: str | None = None, source: str | None = None,
              role: str | None = None, text: str | None = None, reasoning: str | None = None,
              extra: dict[str, Any] | None = None) -> Event:
        # positional: this runs once per line
        e = Event(eid, kind, type_, raw, source, role, timestamp, text, [], None, None, None, reasoning, None, None,
                  Ref(self.path, eid, line, line), {} if extra is None else extra)
        self.s.events.append(e)
        return e

    def open_group(self, e: Event, prefix: str = "resp") -> None:
        if not self.group:
            self.groups += 1
        e.response_id = f"{prefix}-{self.groups}"
        self.group.append(e)

    def close_group(self) -> None:
        self.group = []

    def attach_usage(self, carrier: Event, counts: dict[str, Any], source: str) -> None:
        u = usage_of(counts, self.model, source)
        target = self.group[0] if self.group else carrier
        if target.model_usage is not None:  # a second figure for one response: keep it on the carrier
            target = carrier
        target.model_usage = u
        target.usage = dict(counts)
        if target is not carrier:
            carrier.extra["usage_for"] = target.id

    def add_call(self, e: Event, name: str, arguments: Any, native: Any, *, lazy: bool = False) -> ToolCall:
        if isinstance(native, str) and native:
            if native in self.minted:
                n = 2
                while f"{native}__{n}" in self.minted:
                    n += 1
                minted = f"{native}__{n}"
                self.diag("codex.duplicate-call-id", f"call id {native!r} was already used; this call is {minted!r}",
                          INFO, line=e.ref.line_start, event_id=e.id)
            else:
                minted = native
            key = native
        else:
            minted = f"{e.id}/call"
            key = None
        self.minted.add(minted)
        spec = CODEX_TOOLS.spec(name)
        if spec.op == PATCH_OP:
            self.patches.add(minted)
        tc = ToolCall.described(spec, name, arguments, minted, lazy_json=lazy)
        e.tool_calls.append(tc)
        if key is not None:
            self.pending.setdefault(key, []).append([minted, e, False])
        self.call_event[minted] = e
        self.order.append((e, tc))
        return tc

    def answer_call(self, e: Event, native: Any) -> bool:
        """Pair output ``e`` with the oldest unanswered call of its id; False when there is none."""
        entries = self.pending.get(native) if isinstance(native, str) else None
        for ent in entries or ():
            if not ent[2]:
                ent[2] = True
                e.call_id = ent[0]
                e.cause = ent[1].id
                self.answer[ent[0]] = e
                return True
        where = {"line": e.ref.line_start, "event_id": e.id}
        e.kind = OTHER
        if entries:
            self.diag("codex.duplicate-output", f"a second output for call {native!r}; kept as an event of kind other", INFO, **where)
        else:
            self.diag("codex.orphan-output", f"an output for call {native!r}, which no earlier call made; kept as an event of kind other",
                      WARNING, **where)
        e.extra["native_call_id"] = native
        return False

    def set_edit(self, out: Event, tc: ToolCall) -> None:
        """The FileEdit an ``apply_patch`` output records."""
        if tc.call_id not in self.patches or tc.op != PATCH_OP or not tc.content:
            return
        files = patch_files(tc.content)
        text = (out.text or "").lower()
        if "error" in text[:80] or "failed" in text[:80] or "verification failed" in text:
            return
        if files:
            kind, path = files[0]
            out.edit = FileEdit(path, existed=kind != "add", patch=tc.content)
            if len(files) > 1:
                out.extra["patched_files"] = [p for _, p in files]

    # -------------------------------------------------------- rollout

    def prescan(self, lines: list[Any]) -> None:
        """The message and reasoning texts of the response items (to know an
        ``event_msg`` that repeats one), and whether usage is recorded."""
        texts = self.texts
        for jl in lines:
            v = jl.value
            if type(v) is not dict:
                continue
            t = v.get("type")
            if t == "response_item":
                p = v.get("payload")
                if type(p) is not dict:
                    continue
                pt = p.get("type")
                if pt == "message" or (pt is None and "role" in p):
                    role = p.get("role")
                    if role == "user" or role == "assistant":
                        text = _text_of(p.get("content"))
                        if text is not None:
                            texts[role].add(text.strip())
                elif pt == "reasoning":
                    text = _summary_text(p)
                    if text:
                        texts["reasoning"].add(text.strip())
                        for part in p.get("summary") or []:
                            if isinstance(part, dict) and isinstance(part.get("text"), str):
                                texts["reasoning"].add(part["text"].strip())
            elif t == "event_msg" and not self.has_token_count:
                p = v.get("payload")
                if type(p) is dict and p.get("type") == "token_count" and type(p.get("info")) is dict:
                    self.has_token_count = True

    def rollout_line(self, jl: Any, first_meta: list[bool]) -> None:
        # the common case first: an item or an event with an object payload
        v = jl.value
        if type(v) is dict:
            p = v.get("payload")
            if type(p) is dict:
                t = v.get("type")
                if t == "response_item" or t == "event_msg":
                    ts = v.get("timestamp")
                    line = jl.line
                    if t == "response_item":
                        self.response_item(f"L{line}", v, p, line, ts if type(ts) is str else None)
                    else:
                        self.event_msg(f"L{line}", v, p, line, ts if type(ts) is str else None)
                    return
        self.other_line(jl, first_meta)

    def other_line(self, jl: Any, first_meta: list[bool]) -> None:
        v = jl.value
        line = jl.line
        eid = f"L{line}"
        if not isinstance(v, dict):
            self.diag("codex.line-not-object", f"line is a JSON {type(v).__name__}, not an object; kept as an event of kind other", line=line)
            self.event(eid, OTHER, "line", v, line)
            return
        ts = v.get("timestamp") if isinstance(v.get("timestamp"), str) else None
        t = v.get("type")
        p = v.get("payload", MISSING)
        if p is MISSING:
            # early Rust rollouts: bare items, a bare meta line, record_type lines
            if v.get("record_type") == "state":
                self.event(eid, STATE, "record_type.state", v, line, timestamp=ts)
                return
            if isinstance(t, str) and (t in _MODEL_ITEMS or t in _OUTPUT_ITEMS or t == "message"):
                self.response_item(eid, v, v, line, ts)
                return
            if "id" in v and "instructions" in v or (line == 1 and "id" in v and "timestamp" in v and t is None):
                self.session_meta(eid, v, v, line, ts, first_meta)
                return
        if not isinstance(t, str) or (t not in ROLLOUT_TYPES):
            self.diag("codex.unknown-line-type", f"line type {t!r} is not a known rollout type; kept as an event of kind other", INFO, line=line)
            self.event(eid, OTHER, str(t), v, line, timestamp=ts)
            return
        if not isinstance(p, dict):
            self.diag("codex.payload-missing", f"a {t} line without an object payload; kept as an event of kind other", WARNING, line=line)
            self.event(eid, OTHER, t, v, line, timestamp=ts)
            return
        if t == "session_meta":
            self.session_meta(eid, v, p, line, ts, first_meta)
        elif t == "turn_context":
            if isinstance(p.get("model"), str):
                self.model = p["model"]
                if p["model"] not in self.s.run.models:
                    self.s.run.models.append(p["model"])
            eff = p.get("effort") or p.get("reasoning_effort")
            if isinstance(eff, str) and self.s.run.reasoning_effort is None:
                self.s.run.reasoning_effort = eff
            self.event(eid, STATE, "turn_context", v, line, timestamp=ts, extra={"model": self.model} if self.model else {})
        elif t == "response_item":
            self.response_item(eid, v, p, line, ts)
        elif t == "event_msg":
            self.event_msg(eid, v, p, line, ts)
        elif t == "compacted":
            self.close_group()
            msg = p.get("message") if isinstance(p.get("message"), str) else None
            extra = {}
            if isinstance(p.get("replacement_history"), list):
                extra["replacement_items"] = len(p["replacement_history"])
            self.event(eid, CONDENSATION, "compacted", v, line, timestamp=ts, text=msg, source="harness", extra=extra)
        else:  # newer line types: kept as they are
            self.event(eid, OTHER, t, v, line, timestamp=ts)

    def session_meta(self, eid: str, v: dict, p: dict, line: int, ts: str | None, first_meta: list[bool]) -> None:
        sid = p.get("id") if isinstance(p.get("id"), str) else p.get("session_id") if isinstance(p.get("session_id"), str) else None
        run = self.s.run
        if first_meta[0]:
            self.diag("codex.meta-repeated", "another session_meta line (a resumed or forked thread); the first one names the session",
                      INFO, line=line)
            self.event(eid, STATE, "session_meta", v, line, timestamp=ts)
            return
        first_meta[0] = True
        self.s.id = sid or self.s.id
        run.harness = NAME
        if isinstance(p.get("cli_version"), str):
            run.harness_version = p["cli_version"]
        if isinstance(p.get("originator"), str):
            run.agent = p["originator"]
        if isinstance(p.get("cwd"), str):
            run.workspace = p["cwd"]
        if isinstance(p.get("timestamp"), str):
            run.started_at = p["timestamp"]
        meta = {k: p[k] for k in ("originator", "source", "model_provider", "git", "thread_source", "agent_role",
                                   "agent_nickname", "forked_from_id") if k in p}
        parent = parent_thread_of(p)
        if parent:
            meta["parent_thread_id"] = parent
        self.s.metadata.update(meta)
        instr = p.get("instructions")
        if isinstance(p.get("base_instructions"), dict) and isinstance(p["base_instructions"].get("text"), str):
            instr = p["base_instructions"]["text"]
        if isinstance(instr, str) and instr.strip():
            self.event(eid, SYSTEM, "session_meta", v, line, timestamp=ts, text=instr, role="system", source="harness")
        else:
            self.event(eid, STATE, "session_meta", v, line, timestamp=ts)

    def response_item(self, eid: str, v: dict, p: dict, line: int, ts: str | None) -> None:
        pt = p.get("type")
        if pt is None and "role" in p and "content" in p:
            pt = "message"  # agentsview's fixtures omit the type of messages
        if pt == "message":
            role = p.get("role") if isinstance(p.get("role"), str) else None
            text = _text_of(p.get("content"))
            if role == "assistant":
                e = self.event(eid, MESSAGE, "message", v, line, timestamp=ts, role="assistant", source="agent", text=text)
                if isinstance(p.get("phase"), str):
                    e.extra["phase"] = p["phase"]
                self.open_group(e)
                if not self.has_token_count:
                    self.close_group()
                self.lifecycle.append(("assistant", e))
            elif role in ("developer", "system"):
                self.event(eid, SYSTEM, "message", v, line, timestamp=ts, role="system", source="harness", text=text,
                           extra={"native_role": role})
            else:
                self.close_group()
                injected = isinstance(text, str) and text.lstrip().startswith(INJECTED_PREFIXES)
                e = self.event(eid, MESSAGE, "message", v, line, timestamp=ts, role="user",
                               source="harness" if injected else "user", text=text)
                if injected:
                    e.extra["injected"] = True
                else:
                    self.lifecycle = []
                    if self.task is None and text and text.strip():
                        self.task = text
            return
        if pt == "reasoning":
            e = self.event(eid, REASONING, "reasoning", v, line, timestamp=ts, source="agent", role="assistant",
                           reasoning=_summary_text(p))
            if p.get("encrypted_content"):
                e.extra["encrypted"] = True
            self.open_group(e)
            return
        if pt in _CALL_ITEMS:
            e = self.event(eid, ACTION, pt, v, line, timestamp=ts, source="agent", role="assistant")
            self.open_group(e)
            if pt == "function_call":
                name = p.get("name") if isinstance(p.get("name"), str) else "function"
                args = p.get("arguments", MISSING)
                if args is MISSING or args is None:
                    self.diag("codex.arguments-missing", f"call {name!r} records no arguments", INFO, line=line, event_id=eid)
                    args = {}
                    if isinstance(p.get("summary"), str):
                        e.text = p["summary"]
                    self.add_call(e, name, args, p.get("call_id"))
                elif isinstance(args, str):
                    try:
                        value = orjson.loads(args)
                    except orjson.JSONDecodeError:
                        value, _ = loads(args)  # the careful decode: NaN, big integers, duplicate keys
                    if value is MISSING:
                        self.diag("codex.arguments-not-json", f"the arguments of call {name!r} are not JSON; kept as text", INFO,
                                  line=line, event_id=eid)
                        value = args
                    self.add_call(e, name, value, p.get("call_id"))
                else:
                    self.add_call(e, name, args, p.get("call_id"))
            elif pt == "custom_tool_call":
                name = p.get("name") if isinstance(p.get("name"), str) else "custom_tool"
                self.add_call(e, name, {"input": p.get("input") if isinstance(p.get("input"), str) else p.get("input")}, p.get("call_id"))
            elif pt == "local_shell_call":
                action = p.get("action") if isinstance(p.get("action"), dict) else {}
                self.add_call(e, "local_shell", action, p.get("call_id") or p.get("id"))
            elif pt == "web_search_call":
                action = p.get("action") if isinstance(p.get("action"), dict) else {}
                self.add_call(e, "web_search", action, p.get("call_id") or p.get("id"))
            else:  # tool_search_call
                args = p.get("arguments")
                self.add_call(e, "tool_search", args if args is not None else {}, p.get("call_id"))
            return
        if pt in _OUTPUT_ITEMS:
            if pt == "tool_search_output":
                text = orjson.dumps(p.get("tools"), default=str).decode() if "tools" in p else ""
                facts: dict[str, Any] = {}
            else:
                text, facts = _output_text(p.get("output"))
            e = self.event(eid, OBSERVATION, pt, v, line, timestamp=ts, source="environment", role="tool", text=text,
                           extra=facts)
            if not self.has_token_count:
                self.close_group()
            if self.answer_call(e, p.get("call_id")):
                tc = next((c for c in self.call_event[e.call_id].tool_calls if c.call_id == e.call_id), None)
                if tc is not None:
                    self.set_edit(e, tc)
            return
        if pt in _MODEL_ITEMS:  # image generation and other model items
            e = self.event(eid, OTHER, str(pt), v, line, timestamp=ts, source="agent")
            self.open_group(e)
            return
        self.diag("codex.unknown-line-type", f"response item type {pt!r} is not known; kept as an event of kind other", INFO, line=line)
        self.event(eid, OTHER, str(pt), v, line, timestamp=ts)

    def event_msg(self, eid: str, v: dict, p: dict, line: int, ts: str | None) -> None:
        pt = p.get("type")
        typ = f"event_msg.{pt}"
        if pt == "token_count":
            info = p.get("info")
            e = self.event(eid, STATE, typ, v, line, timestamp=ts, source="harness")
            if not isinstance(info, dict):
                e.extra["no_usage"] = True  # rate limits only
                return
            total = info.get("total_token_usage") if isinstance(info.get("total_token_usage"), dict) else None
            last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else None
            if total is not None and _same_totals(total, self.prev_total):
                e.extra["repeat"] = True
                self.diag("codex.token-count-repeat", "token_count repeats the running totals before it; not counted again", INFO,
                          line=line, event_id=eid)
                return
            if last is not None:
                counts, source = last, "token_count.last_token_usage"
            elif total is not None:
                counts, source = _diff(total, self.prev_total), "token_count total_token_usage difference"
            else:
                self.diag("codex.token-count-empty", "token_count info holds no usage object", INFO, line=line, event_id=eid)
                return
            if total is not None:
                self.prev_total = total
            self.attach_usage(e, counts, source)
            self.close_group()
            return
        if pt == "item_completed" and isinstance(p.get("item"), dict) and p["item"].get("type") in ("UserMessage", "AgentMessage"):
            # paginated history mode (0.154): messages as completed items
            item = p["item"]
            pt = "user_message" if item["type"] == "UserMessage" else "agent_message"
            text = _text_of(item.get("content")) if item.get("content") is not None else item.get("text") if isinstance(item.get("text"), str) else None
            p = {"type": pt, "message": text}
        if pt in ("user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"):
            text = p.get("message") if isinstance(p.get("message"), str) else p.get("text") if isinstance(p.get("text"), str) else None
            bucket = {"user_message": "user", "agent_message": "assistant"}.get(pt, "reasoning")
            if text is not None and text.strip() in self.texts[bucket]:
                self.event(eid, STATE, typ, v, line, timestamp=ts, source="harness", text=text, extra={"duplicate": True})
                return
            if pt == "user_message":
                self.close_group()
                e = self.event(eid, MESSAGE, typ, v, line, timestamp=ts, role="user", source="user", text=text)
                self.lifecycle = []
                if self.task is None and text and text.strip():
                    self.task = text
            elif pt == "agent_message":
                e = self.event(eid, MESSAGE, typ, v, line, timestamp=ts, role="assistant", source="agent", text=text)
                self.open_group(e)
                self.lifecycle.append(("assistant", e))
            else:
                e = self.event(eid, REASONING, typ, v, line, timestamp=ts, role="assistant", source="agent", reasoning=text)
                self.open_group(e)
            return
        if pt in ("task_started", "turn_started"):
            self.close_group()
            self.event(eid, STATE, typ, v, line, timestamp=ts, source="harness")
            return
        if pt in ("task_complete", "turn_complete", "turn_aborted"):
            self.close_group()
            e = self.event(eid, STATE, typ, v, line, timestamp=ts, source="harness")
            self.lifecycle.append((pt, e))
            return
        if pt == "error":
            msg = p.get("message") if isinstance(p.get("message"), str) else None
            e = self.event(eid, ERROR_EVENT, typ, v, line, timestamp=ts, source="harness", text=msg)
            self.lifecycle.append(("error", e))
            return
        self.event(eid, STATE, typ, v, line, timestamp=ts, source="harness")

    # -------------------------------------------------------- exec stream

    def exec_line(self, jl: Any, completed: set[str]) -> None:
        v = jl.value
        line = jl.line
        eid = f"L{line}"
        if not isinstance(v, dict):
            self.diag("codex.line-not-object", f"line is a JSON {type(v).__name__}, not an object; kept as an event of kind other", line=line)
            self.event(eid, OTHER, "line", v, line)
            return
        t = v.get("type")
        if isinstance(v.get("msg"), dict) and "type" not in v:
            self.exec_legacy(eid, v, v["msg"], line)
            return
        if t == "thread.started":
            if isinstance(v.get("thread_id"), str) and self.s.id is None:
                self.s.id = v["thread_id"]
            self.event(eid, STATE, t, v, line, source="harness")
        elif t == "turn.started":
            self.close_group()
            self.lifecycle = []
            self.event(eid, STATE, t, v, line, source="harness")
        elif t == "turn.completed":
            e = self.event(eid, STATE, t, v, line, source="harness")
            if isinstance(v.get("usage"), dict):
                self.attach_usage(e, v["usage"], "turn.completed usage")
            self.close_group()
            self.lifecycle.append(("turn.completed", e))
        elif t == "turn.failed":
            err = v.get("error")
            msg = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
            e = self.event(eid, ERROR_EVENT, t, v, line, source="harness", text=msg)
            self.close_group()
            self.lifecycle.append(("error", e))
        elif t == "error":
            e = self.event(eid, ERROR_EVENT, t, v, line, source="harness", text=v.get("message") if isinstance(v.get("message"), str) else None)
            self.lifecycle.append(("error", e))
        elif isinstance(t, str) and t.startswith("item."):
            item = v.get("item")
            if not isinstance(item, dict):
                self.diag("codex.payload-missing", f"an {t} line without an item object; kept as an event of kind other", line=line)
                self.event(eid, OTHER, t, v, line)
                return
            it = item.get("type") or item.get("item_type")
            iid = item.get("id") if isinstance(item.get("id"), str) else None
            if t != "item.completed" and not (t == "item.started" and it in _EXEC_ACTIONS and iid not in completed):
                self.event(eid, STATE, f"{t}.{it}", v, line, source="harness")  # superseded by item.completed
                return
            self.exec_item(eid, v, item, str(it), iid, line, done=t == "item.completed")
        else:
            self.diag("codex.unknown-line-type", f"exec event type {t!r} is not known; kept as an event of kind other", INFO, line=line)
            self.event(eid, OTHER, str(t), v, line)

    def exec_item(self, eid: str, v: dict, item: dict, it: str, iid: str | None, line: int, done: bool) -> None:
        typ = f"item.{it}"
        if it in ("agent_message", "assistant_message"):
            e = self.event(eid, MESSAGE, typ, v, line, role="assistant", source="agent", text=item.get("text") if isinstance(item.get("text"), str) else None)
            self.open_group(e, "turn")
            self.lifecycle.append(("assistant", e))
        elif it == "reasoning":
            e = self.event(eid, REASONING, typ, v, line, role="assistant", source="agent",
                           reasoning=item.get("text") if isinstance(item.get("text"), str) else None)
            self.open_group(e, "turn")
        elif it in _EXEC_ACTIONS:
            e = self.event(eid, ACTION, typ, v, line, role="assistant", source="agent")
            self.open_group(e, "turn")
            if it == "command_execution":
                name, args = "command_execution", {"command": item.get("command")}
                out = item.get("aggregated_output")
            elif it == "file_change":
                name, args = "file_change", {"changes": item.get("changes")}
                out = item.get("status")
            elif it == "mcp_tool_call":
                name = ".".join(str(x) for x in (item.get("server"), item.get("tool")) if x) or "mcp_tool_call"
                args = item.get("arguments") if item.get("arguments") is not None else {}
                out = item.get("result") if item.get("result") is not None else item.get("error")
            elif it == "web_search":
                name, args, out = "web_search", {"query": item.get("query")}, None
            else:
                name = item.get("tool") if isinstance(item.get("tool"), str) else "collab_tool_call"
                args = {k: item[k] for k in item if k not in ("id", "type", "tool", "status")}
                out = item.get("status")
            tc = self.add_call(e, name, args, iid or f"{eid}/item")
            if not done:
                return  # started, never completed: a step with no observation
            text, facts = _output_text(out)
            if isinstance(item.get("exit_code"), int):
                facts["exit_code"] = item["exit_code"]
            if isinstance(item.get("status"), str):
                facts["status"] = item["status"]
            o = self.event(f"{eid}/output", OBSERVATION, f"{typ}.output", v, line, role="tool", source="environment",
                           text=text, extra=facts)
            o.call_id, o.cause = tc.call_id, e.id
            self.answer[tc.call_id] = o  # type: ignore[index]
            for ent in self.pending.get(iid or f"{eid}/item", []):
                ent[2] = True
            if it == "file_change":
                changes = [c for c in item.get("changes") or [] if isinstance(c, dict) and isinstance(c.get("path"), str)]
                if changes and item.get("status") in (None, "completed"):
                    c = changes[0]
                    o.edit = FileEdit(c["path"], existed=c.get("kind") != "add")
                    if len(changes) > 1:
                        o.extra["patched_files"] = [c["path"] for c in changes]
        elif it == "error":
            self.event(eid, ERROR_EVENT, typ, v, line, source="harness", text=item.get("message") if isinstance(item.get("message"), str) else None)
        else:  # plan, todo_list and newer item types
            self.event(eid, STATE, typ, v, line, source="harness")

    def exec_legacy(self, eid: str, v: dict, msg: dict, line: int) -> None:
        """The pre-2025-09-30 ``{id, msg}`` form: the ``EventMsg`` protocol."""
        mt = msg.get("type")
        typ = f"msg.{mt}"
        if mt == "agent_message":
            e = self.event(eid, MESSAGE, typ, v, line, role="assistant", source="agent", text=msg.get("message") if isinstance(msg.get("message"), str) else None)
            self.open_group(e, "turn")
            self.lifecycle.append(("assistant", e))
        elif mt in ("agent_reasoning", "agent_reasoning_raw_content"):
            e = self.event(eid, REASONING, typ, v, line, role="assistant", source="agent", reasoning=msg.get("text") if isinstance(msg.get("text"), str) else None)
            self.open_group(e, "turn")
        elif mt == "exec_command_begin":
            e = self.event(eid, ACTION, typ, v, line, role="assistant", source="agent")
            self.open_group(e, "turn")
            self.add_call(e, "shell", {"command": msg.get("command"), "workdir": msg.get("cwd")}, msg.get("call_id"))
        elif mt == "exec_command_end":
            out = msg.get("aggregated_output") if "aggregated_output" in msg else msg.get("stdout")
            text, facts = _output_text(out)
            if isinstance(msg.get("exit_code"), int):
                facts["exit_code"] = msg["exit_code"]
            e = self.event(eid, OBSERVATION, typ, v, line, role="tool", source="environment", text=text, extra=facts)
            self.answer_call(e, msg.get("call_id"))
        elif mt == "token_count":
            e = self.event(eid, STATE, typ, v, line, source="harness")
            counts = msg.get("info", {}).get("last_token_usage") if isinstance(msg.get("info"), dict) else None
            if not isinstance(counts, dict) and "input_tokens" in msg:
                counts = {k: msg[k] for k in _USAGE_KEYS if k in msg}
            if isinstance(counts, dict):
                self.attach_usage(e, counts, "token_count")
        elif mt in ("task_started",):
            self.close_group()
            self.lifecycle = []
            self.event(eid, STATE, typ, v, line, source="harness")
        elif mt in ("task_complete", "turn_aborted"):
            self.close_group()
            e = self.event(eid, STATE, typ, v, line, source="harness")
            self.lifecycle.append((mt, e))
        elif mt in ("error", "stream_error"):
            e = self.event(eid, ERROR_EVENT, typ, v, line, source="harness", text=msg.get("message") if isinstance(msg.get("message"), str) else None)
            if mt == "error":
                self.lifecycle.append(("error", e))
        else:
            self.event(eid, STATE, typ, v, line, source="harness")

    # -------------------------------------------------------- end

    def outcome(self, shape: str) -> Outcome | None:
        """The harness's own end signal after the last user message."""
        ends = [x for x in self.lifecycle if x[0] != "assistant"]
        if not ends:
            return None
        kind, e = ends[-1]
        ev = [{"file": self.path, "event_id": e.id, "line": e.ref.line_start}]
        if kind in ("task_complete", "turn_complete", "turn.completed"):
            said = any(k == "assistant" for k, _ in self.lifecycle)
            return Outcome(True, status=kind, signal=f"{kind} after the last user message", claimed_success=said, evidence=ev)
        if kind == "turn_aborted":
            reason = None
            if isinstance(e.raw, dict):
                p = e.raw.get("payload") if isinstance(e.raw.get("payload"), dict) else e.raw.get("msg")
                reason = p.get("reason") if isinstance(p, dict) else None
            return Outcome(False, status=f"turn_aborted:{reason}" if reason else "turn_aborted", signal="turn_aborted",
                           human_abort=reason in (None, "interrupted", "user_interrupted"), evidence=ev)
        return Outcome(False, status="error", signal="error after the last user message", external_error=e.text or "error", evidence=ev)

    def steps(self) -> list[Step]:
        steps: list[Step] = []
        seen_group: set[Any] = set()
        thought: dict[Any, str] = {}
        for e in self.s.events:
            if e.kind == REASONING and e.response_id and e.reasoning and e.response_id not in thought:
                thought[e.response_id] = e.reasoning
        group_calls: dict[Any, int] = {}
        for e, _tc in self.order:
            group_calls[e.response_id or e.id] = group_calls.get(e.response_id or e.id, 0) + 1
        usage_of_group: dict[Any, Event] = {}
        for e in self.s.events:
            if e.model_usage is not None and e.response_id and e.response_id not in usage_of_group:
                usage_of_group[e.response_id] = e
        for e, tc in self.order:
            o = self.answer.get(tc.call_id)  # type: ignore[arg-type]
            g = e.response_id or e.id
            first = g not in seen_group
            seen_group.add(g)
            ue = usage_of_group.get(e.response_id) if first else None
            steps.append(Step(
                step_id=len(steps) + 1,
                action=render(tc),
                tool_type=tc.name,
                observation=(o.text or "") if o is not None else "",
                thinking=(thought.get(e.response_id) or e.text) if first else None,
                action_ref=e.ref,
                observation_ref=o.ref if o is not None else None,
                action_event_id=e.id,
                observation_event_id=o.id if o is not None else None,
                parallel_group=g if group_calls.get(g, 0) > 1 else None,
                usage=ue.usage if ue is not None else None,
                model_usage=ue.model_usage if ue is not None else None,
                extra={"call_id": tc.call_id, **({} if o is not None else {"unanswered": True})},
            ))
        return steps


def render(tc: ToolCall) -> str:
    """A Codex call's step text: a shell command as its command line, anything else as ``name(args)``."""
    spec = CODEX_TOOLS.spec(tc.name)
    if spec.op == SHELL_OP and spec.single is not None and isinstance(tc.arguments, dict):
        cmd = tc.arguments.get(spec.single)
        if isinstance(cmd, list):
            cmd = " ".join(map(str, cmd))
        if isinstance(cmd, str) and cmd:
            return render_action("command", {"command": cmd}, {"command": "command"})
    if tc.op == SHELL_OP and tc.command:
        return render_action("command", {"command": tc.command}, {"command": "command"})
    args = tc.arguments
    return render_action(tc.name, args if isinstance(args, dict) else {"_raw": args} if args is not None else {}, {})


def read(root: Path, options: ReadOptions) -> Session:
    """The Codex record at ``root`` (a rollout file or an exec event stream) as a Session."""
    return _read(Path(root), options, 0, frozenset())


def _read(root: Path, options: ReadOptions, depth: int, seen: frozenset[str]) -> Session:
    b = SessionBuilder(NAME, root, options)
    s = b.session
    path = str(root)
    s.run.harness = NAME
    if path.endswith(".zst"):
        data = _zst(b, root)
        if data is None:
            return s
        lines = list(iter_jsonl(data, path, s.diagnostics))
    elif path.endswith(".json") and root.name.startswith("rollout-"):
        return _read_ts_era(b, root)
    else:
        lines, _src = b.jsonl(root, "events")
        if lines is None:
            return s
    src = s.files[0] if s.files else b.account(root, "events")
    good = [jl for jl in lines if jl.value is not MISSING]
    if not good:
        b.diag("codex.no-records", "no decodable line in the file", ERROR, file=path)
    kinds = [_classify_line(jl.value) for jl in good[:200]]
    shape = "rollout"
    if "exec" in kinds or "exec-legacy" in kinds:
        if kinds.count("exec") + kinds.count("exec-legacy") >= kinds.count("rollout"):
            shape = "exec"
    s.view = shape
    r = _Reader(b, path)
    if shape == "rollout":
        r.prescan(good)
        first_meta = [False]
        for jl in good:
            r.rollout_line(jl, first_meta)
    else:
        completed = {jl.value["item"]["id"] for jl in good if isinstance(jl.value, dict) and jl.value.get("type") == "item.completed"
                     and isinstance(jl.value.get("item"), dict) and isinstance(jl.value["item"].get("id"), str)}
        for jl in good:
            r.exec_line(jl, completed)
        s.run.harness_version = s.run.harness_version
    src.event_ids = [e.id for e in s.events]
    if s.id is None:
        m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", root.name)
        s.id = m.group(1) if m else root.name.split(".")[0]
    if r.task is not None:
        s.task, s.task_source = r.task, "first user message"
    stamps = [e.timestamp for e in s.events if e.timestamp]
    if stamps:
        s.run.started_at = s.run.started_at or stamps[0]
        s.run.ended_at = stamps[-1]
    s.outcome = r.outcome(shape)
    s.metadata["model"] = s.run.models[0] if s.run.models else None
    s.metadata["shape"] = shape
    # the base prompt and the tool declarations are not in the record: an
    # ASF request_hash would claim a request trajkit cannot rebuild
    s.metadata["context_rebuildable"] = False
    s.metadata["model_calls"] = sum(1 for e in s.events if e.model_usage is not None)
    s.metadata["responses"] = r.groups
    if options.steps:
        s.steps = r.steps()
        s.metadata["actions_without_observation"] = [st.extra["call_id"] for st in s.steps if st.extra.get("unanswered")]
    if shape == "rollout" and s.id and s.id not in seen:
        _link_children(b, root, options, depth, seen | {s.id})
    return s


def _zst(b: SessionBuilder, root: Path) -> bytes | None:
    data, sf = b.read_bytes(root, "events")
    if data is None:
        return None
    try:
        import zstandard  # optional: Codex >= 0.137 compresses idle rollouts
    except ImportError:
        sf.status = "skipped"
        b.diag("codex.compressed", "a zstd-compressed rollout; install the zstandard package (pip install zstandard) to read it",
               ERROR, file=str(root))
        return None
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except zstandard.ZstdError as e:
        sf.status = "skipped"
        b.diag("codex.compressed", f"cannot decompress: {e}", ERROR, file=str(root))
        return None


def _read_ts_era(b: SessionBuilder, root: Path) -> Session:
    """A TypeScript-era ``{session, items}`` document: the items are Responses items."""
    s = b.session
    value, sf = b.read_json(root, "events")
    if not isinstance(value, dict):
        if value is not MISSING:
            b.diag("codex.no-records", "the document is not a {session, items} object", ERROR, file=str(root))
        return s
    s.view = "ts-session"
    r = _Reader(b, str(root))
    meta = value.get("session") if isinstance(value.get("session"), dict) else {}
    s.id = meta.get("id") if isinstance(meta.get("id"), str) else root.stem
    items = value.get("items") if isinstance(value.get("items"), list) else []
    s.metadata["session"] = meta
    for i, it in enumerate(items):
        eid = f"I{i}"
        if not isinstance(it, dict):
            r.event(eid, OTHER, "item", it, None)  # type: ignore[arg-type]
            continue
        r.response_item(eid, it, it, None, it.get("timestamp") if isinstance(it.get("timestamp"), str) else None)  # type: ignore[arg-type]
    sf.event_ids = [e.id for e in s.events]
    if r.task:
        s.task, s.task_source = r.task, "first user message"
    if b.options.steps:
        s.steps = r.steps()
    return s


# ---------------------------------------------------------------- sub-agents


def _day_dirs(folder: Path) -> list[Path]:
    """The folder, and the next day's folder when it is ``sessions/YYYY/MM/DD``."""
    out = [folder]
    parts = folder.parts
    if len(parts) >= 4 and all(_DAY_DIR.match(x) for x in parts[-3:]):
        import datetime as _dt

        try:
            d = _dt.date(int(parts[-3]), int(parts[-2]), int(parts[-1])) + _dt.timedelta(days=1)
        except ValueError:
            return out
        out.append(folder.parents[2] / f"{d.year:04d}" / f"{d.month:02d}" / f"{d.day:02d}")
    return out


def _link_children(b: SessionBuilder, root: Path, options: ReadOptions, depth: int, seen: frozenset[str]) -> None:
    s = b.session
    probe = b.probe
    found: list[tuple[str, Path]] = []
    for d in _day_dirs(root.parent):
        for name in sorted(probe.listdir(d) or ()):
            if not name.startswith("rollout-") or not name.endswith(".jsonl") or (d / name) == root:
                continue
            if parent_of(str(d / name), probe) == s.id:
                found.append((name[len("rollout-"):], d / name))  # the name starts with the start time
    if not found:
        return
    if depth >= MAX_SUBAGENT_DEPTH:
        b.diag("codex.subagent-depth", f"{len(found)} sub-agent thread(s) of this thread, {MAX_SUBAGENT_DEPTH} levels down, are not read",
               WARNING, file=str(root))
        return
    spawns = [st for st in s.steps if st.tool_type == "spawn_agent"]
    used: set[int] = set()
    for _, p in sorted(found):
        child = _read(p, options, depth + 1, seen)
        s.children.append(child)
        step = next((st for st in spawns if child.id and child.id in (st.observation or "") and st.step_id not in used), None)
        method = "output-names-thread"
        if step is None:
            step = next((st for st in spawns if st.step_id not in used), None)
            method = "spawn-order"
        if step is None:
            b.diag("codex.subagent-unlinked", f"sub-agent thread {child.id} names this thread as parent, but no spawn_agent call is left to tie it to",
                   INFO, file=str(p))
            continue
        used.add(step.step_id)
        step.children.append(child)
        child.spawned_by = SpawnLink(child.id, step.step_id, step.action_event_id, method,
                                     f"{p.name}: parent_thread_id names {s.id}")


# ---------------------------------------------------------------- listing


def summarize(root: str | os.PathLike, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """One ``trajkit ls`` row: id, first prompt, model, steps, tokens, cost, last update, path."""
    s = _read(Path(os.path.abspath(os.fspath(root))), ReadOptions(max_file_bytes=max_file_bytes), 0, frozenset())
    return session_row(s)


# ---------------------------------------------------------------- context

#: What a rollout does not record, so ``context`` cannot rebuild it.
NOT_REBUILT = (
    "the base system prompt (Codex sends its own instructions; the rollout keeps them only when session_meta records them)",
    "the tool declarations",
    "reasoning sent back to the model (encrypted_content is opaque)",
)


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw on each model response: the conversation items
    before it, as chat messages (compactions replayed)."""
    if session.format != NAME:
        raise TrajkitError(f"not a {NAME} session")
    msgs: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    open_rid = None
    assistant: dict[str, Any] | None = None
    for e in session.events:
        rid = e.response_id
        if rid is not None and rid != open_rid:
            out.append({"llm_response_id": rid, "event_id": e.id, "messages": [dict(m) for m in msgs],
                        "not_rebuilt": list(NOT_REBUILT)})
            open_rid = rid
            assistant = None
        if e.kind == SYSTEM and e.text:
            msgs.append({"role": "system" if e.type == "session_meta" else e.extra.get("native_role", "system"), "content": e.text})
        elif e.kind == MESSAGE and e.role == "user":
            msgs.append({"role": "user", "content": e.text or ""})
            open_rid, assistant = None, None
        elif e.kind in (MESSAGE, ACTION) and e.role == "assistant":
            if assistant is None or rid != open_rid:
                assistant = {"role": "assistant", "content": None}
                msgs.append(assistant)
            if e.kind == MESSAGE and e.text:
                assistant["content"] = (assistant["content"] + "\n" if assistant["content"] else "") + e.text
            for tc in e.tool_calls:
                args = tc.arguments
                assistant.setdefault("tool_calls", []).append({
                    "id": tc.call_id, "type": "function",
                    "function": {"name": tc.name, "arguments": args if isinstance(args, str) else orjson.dumps(args, default=str).decode()},
                })
        elif e.kind == OBSERVATION and e.call_id:
            msgs.append({"role": "tool", "tool_call_id": e.call_id, "content": e.text or ""})
            open_rid, assistant = None, None
        elif e.kind == CONDENSATION:
            hist = e.raw.get("payload", {}).get("replacement_history") if isinstance(e.raw, dict) else None
            keep = [m for m in msgs if m["role"] in ("system", "developer")]  # the initial context stays
            if isinstance(hist, list):
                msgs = keep + [m for m in (_item_message(x) for x in hist) if m is not None]
            else:
                msgs = keep + [{"role": "user", "content": e.text or ""}]
            open_rid, assistant = None, None
    if at is not None:
        ids = [e.id for e in session.events]
        if at not in ids:
            raise TrajkitError(f"no event {at!r} in this session")
        pos = ids.index(at)
        for entry in out:
            if ids.index(entry["event_id"]) >= pos:
                return [entry]
        return []
    return out


def _item_message(x: Any) -> dict[str, Any] | None:
    """A ``replacement_history`` item as a chat message (None for items that are none)."""
    if not isinstance(x, dict):
        return None
    t = x.get("type") or ("message" if "role" in x else None)
    if t == "message":
        role = x.get("role") if x.get("role") in ("user", "assistant", "system", "developer") else "user"
        return {"role": role, "content": _text_of(x.get("content")) or ""}
    if t in ("function_call", "custom_tool_call"):
        args = x.get("arguments") if "arguments" in x else orjson.dumps({"input": x.get("input")}).decode()
        return {"role": "assistant", "content": None, "tool_calls": [{"id": x.get("call_id"), "type": "function",
                "function": {"name": x.get("name"), "arguments": args if isinstance(args, str) else orjson.dumps(args, default=str).decode()}}]}
    if t in _OUTPUT_ITEMS:
        return {"role": "tool", "tool_call_id": x.get("call_id"), "content": _output_text(x.get("output"))[0]}
    return None


