"""What the agent really did: every agent action of a session normalized to
``read`` / ``write`` / ``exec`` tokens, with paths resolved against the
workspace.

Only agent-sourced action events are looked at (and those of sub-agent
sessions); user messages, system prompts, tool declarations and chat text are
never turned into actions, so prose cannot raise a finding. The normalizer
works only on the reader's normalized facts: ``Event.kind``, the
``tool_calls`` described by the harness's tool table (``ToolCall.op``,
``action``, ``input`` and the normalized ``command`` / ``path`` / ``content``
/ ``url``), ``Event.cwd`` and ``Session.run``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..model import (
    ACTION, CODE_OP, FETCH_OP, FINISH_OP, NO_EFFECT_OPS, OBSERVATION, PATCH_OP, READ_OP, SEARCH_OP, SHELL_OP, SPAWN_OP,
    Event, Session, ToolCall,
)
from ..vocab import UNDECLARED
from .shell import INTERPRETERS, READERS, SHELLS, TEXT_ARGS, WRITERS, base_name, path_mentions, split_commands, strip_heredocs

READ = "read"
WRITE = "write"
EXEC = "exec"
REF = "ref"  # a path named inside a command or code that is neither read nor written by a known rule
FETCH = "fetch"
CLAIM = "claim"  # the agent declared the task done (finish)

#: Call ops that are no environment effect (a sub-agent's effects are its own session's).
_NOT_EFFECTS = NO_EFFECT_OPS | {SPAWN_OP}


@dataclass(slots=True)
class Action:
    """One normalized effect the agent asked for.

    ``op`` is read / write / exec / ref / fetch / claim; ``path`` the path as
    resolved (absolute when it could be resolved, else as written); ``rel``
    the path relative to the workspace when it lies inside it (None when
    outside or unknown); ``command`` the exec text; ``content`` the text
    written when the record says (editor writes); ``via`` says how it was
    derived (``editor``, ``shell``, ``tool``, ``code``); ``session`` names the
    (sub-)session; ``event_id`` / ``step_id`` / ``index`` locate it.
    """

    index: int
    op: str
    tool: str
    event_id: Any = None
    step_id: int | None = None
    path: str | None = None
    rel: str | None = None
    command: str | None = None
    content: str | None = None
    via: str = "tool"
    session: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    record_file: str | None = None
    record_line: int | None = None

    @property
    def target(self) -> str:
        return self.rel if self.rel is not None else (self.path or self.command or "")

    @property
    def token(self) -> str:
        return f"{self.op} {self.target}"

    def where(self) -> dict[str, Any]:
        """Where the action is in the record: step, event, and the native file and line it was read from."""
        d: dict[str, Any] = {"event_id": self.event_id, "step_id": self.step_id}
        if self.session:
            d["session"] = self.session
        if self.record_file:
            d["file"] = self.record_file
            if self.record_line is not None:
                d["line"] = self.record_line
        return d

    def to_dict(self) -> dict[str, Any]:
        d = {"index": self.index, "op": self.op, "tool": self.tool, "token": self.token, "via": self.via, **self.where()}
        if self.path is not None:
            d["path"] = self.path
        if self.command is not None:
            d["command"] = self.command[:2000]
        return d


def _calls_of(e: Event) -> list[ToolCall]:
    """Every tool call an action event carries (parallel calls in one event
    included), described by the reader's tool table; an action event with no
    call is one call named by its native type, without arguments."""
    if e.tool_calls:
        return e.tool_calls
    return [UNDECLARED_CALL(e.type)]


def UNDECLARED_CALL(name: str) -> ToolCall:
    return ToolCall.described(UNDECLARED, name, {}, None)


def _pairs(session: Session) -> dict[Any, Event]:
    """Action event id -> the first observation answering it."""
    by_cause: dict[Any, Event] = {}
    by_call: dict[str, Event] = {}
    for e in session.events:
        if e.kind != OBSERVATION:
            continue
        if e.cause is not None and e.cause not in by_cause:
            by_cause[e.cause] = e
        if e.call_id and e.call_id not in by_call:
            by_call[e.call_id] = e
    out = dict(by_cause)
    for e in session.events:
        if e.kind == ACTION and e.id not in out:
            cid = e.call_id or (e.tool_calls[0].call_id if e.tool_calls else None)
            if cid and cid in by_call:
                out[e.id] = by_call[cid]
    return out


class Resolver:
    """Resolves paths as the agent wrote them to absolute paths and to
    workspace-relative paths."""

    def __init__(self, roots: Iterable[str]):
        self.roots = [posixpath.normpath(r) for r in roots if r]
        self.cwd: str | None = self.roots[0] if self.roots else None

    def absolute(self, p: str, cwd: str | None = None) -> str:
        p = p.strip()
        if p.startswith("~"):
            return posixpath.normpath(p)
        base = cwd or self.cwd
        if p.startswith("/"):
            return posixpath.normpath(p)
        if base:
            return posixpath.normpath(posixpath.join(base, p))
        return posixpath.normpath(p)

    def relative(self, absolute: str) -> str | None:
        if not absolute.startswith("/"):
            return None if absolute.startswith("..") else absolute
        for r in self.roots:
            if absolute == r:
                return "."
            if absolute.startswith(r.rstrip("/") + "/"):
                return absolute[len(r.rstrip("/")) + 1 :]
        return None

    def cd(self, target: str) -> None:
        if target in ("~", "-") or target.startswith("$"):
            return
        self.cwd = self.absolute(target)


def workspace_roots(session: Session, workspace: str | None = None, agent_workspace: str | None = None) -> list[str]:
    """The directories the agent's paths are relative to: the one named by
    the operator, the recorded workspace, and the local workspace directory."""
    roots: list[str] = []
    if agent_workspace:
        roots.append(agent_workspace)
    recorded = session.run.workspace
    if isinstance(recorded, str) and recorded.startswith("/"):
        roots.append(recorded)
    # the first working directory a terminal observation reports
    for e in session.events:
        if e.kind == OBSERVATION and e.cwd:
            roots.append(e.cwd)
            break
    default = session.run.default_workspace
    if default and default not in roots:
        roots.append(default)  # the harness's sandbox workspace when the record names none
    if workspace:
        import os

        roots.append(os.path.abspath(workspace).replace("\\", "/"))
    seen = []
    for r in roots:
        if r not in seen:
            seen.append(r)
    return seen


def _step_index(session: Session) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for s in session.steps:
        if s.action_event_id is not None:
            out.setdefault(s.action_event_id, s.step_id)
    return out


def _is_agent_action(e: Event) -> bool:
    if e.kind != ACTION:
        return False
    src = (e.source or "").lower()
    return src in ("agent", "") or src == "assistant"


def normalize(session: Session, workspace: str | None = None, agent_workspace: str | None = None) -> list[Action]:
    """Every agent action of ``session`` and its sub-agents, as normalized tokens, in order."""
    out: list[Action] = []
    for sess in session.walk():
        _normalize_one(sess, out, workspace, agent_workspace, None if sess is session else (sess.id or sess.source_path))
    return out


def _normalize_one(session: Session, out: list[Action], workspace: str | None, agent_workspace: str | None, label: str | None) -> None:
    res = Resolver(workspace_roots(session, workspace, agent_workspace))
    pairs = _pairs(session)
    steps = _step_index(session)

    def add(op: str, tool: str, e: Event, **kw: Any) -> Action:
        path = kw.pop("path", None)
        rel = None
        if path is not None:
            path = res.absolute(path, kw.pop("cwd", None))
            rel = res.relative(path)
        else:
            kw.pop("cwd", None)
        a = Action(len(out), op, tool, e.id, steps.get(e.id), path, rel, session=label, **kw)
        if e.ref is not None:
            a.record_file, a.record_line = e.ref.path, e.ref.line_start
        out.append(a)
        return a

    for e in session.events:
        if not _is_agent_action(e):
            continue
        obs = pairs.get(e.id)
        for call in _calls_of(e):
            op = call.op
            if op in _NOT_EFFECTS:
                continue
            if op == FINISH_OP:
                add(CLAIM, call.action, e, command=(call.content or "")[:500])
                continue
            _normalize_action(e, call, obs, res, add)
        wd = obs.cwd if obs is not None else None
        if wd:
            res.cwd = wd


def _normalize_action(e: Event, call: ToolCall, obs: Event | None, res: Resolver, add) -> None:
    op, name, args = call.op, call.action, call.input
    # --- shell commands
    if op == SHELL_OP:
        text = call.command
        if not text:
            return
        left = _shell(e, name, text, res, add)
        if left:
            res.cwd = left  # a `cd` persists in the agent's shell session (an observation's working_dir overrides it)
        return
    # --- file tools (editors, reads, writes, listings)
    if call.path is not None:
        is_write = op not in (READ_OP, SEARCH_OP)
        listing = not is_write and obs is not None and isinstance(obs.text, str) and "files and directories up to" in obs.text[:200]
        if op == SEARCH_OP:
            listing = True
        add(WRITE if is_write else READ, name, e, path=call.path, content=call.content, via="editor",
            detail={"listing": True} if listing else {})
        return
    # --- code execution (V0 run_ipython, tools taking code)
    if op == CODE_OP:
        code = call.command or ""
        add(EXEC, name, e, command=code, via="code")
        for m in path_mentions(code):
            add(REF, name, e, path=m, via="code")
        _code_writes(e, name, code, add)
        for m in re.finditer(r"(?:subprocess\.\w+|os\.system|os\.popen|!)\s*\(?\s*\[?\s*['\"]([^'\"]+)['\"]", code):
            _shell(e, name, m.group(1), res, add)
        for line in code.splitlines():
            if line.lstrip().startswith("!"):
                _shell(e, name, line.lstrip()[1:], res, add)
        return
    # --- patches
    if op == PATCH_OP:
        patch = call.content or ""
        for p in re.findall(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\+\+\+ (?:b/)?(\S+)", patch, re.M):
            target = p[0] or p[1]
            if target and target != "/dev/null":
                add(WRITE, name, e, path=target.strip(), content=patch, via="editor")
        return
    # --- fetches (browse / web fetch; browser action scripts name their URLs)
    if op == FETCH_OP:
        if call.url:
            add(FETCH, name, e, command=call.url, via="tool")
            return
        for u in re.findall(r"https?://[^\s'\")]+|file://[^\s'\")]+", call.content or ""):
            add(FETCH, name, e, command=u, via="tool")
            if u.startswith("file://"):
                add(READ, name, e, path=u[len("file://"):], via="tool")
        return
    # --- anything else: name + arguments as an exec token; path-shaped argument values as refs
    import orjson

    if call.content is not None:
        text = call.content
    else:
        try:
            text = orjson.dumps(args).decode()
        except TypeError:
            text = str(args)
    add(EXEC, name, e, command=f"{name} {text}", via="tool")
    for v in _strings(args):
        for m in path_mentions(v):
            add(REF, name, e, path=m, via="tool")


_PY_OPEN_W = re.compile(r"""open\(\s*(?:r|f)?(['"])([^'"]+)\1\s*,\s*(?:mode\s*=\s*)?(['"])[^'"]*[wax+][^'"]*\3""")
_PY_WRITES = re.compile(r"\.write_(?:text|bytes)\(|\bshutil\.(?:copy\w*|move|rmtree)\(|\bos\.(?:remove|unlink|rename|replace|rmdir)\(|\bPath\([^)]*\)\.(?:unlink|rename|replace|touch)\(|\bopen\([^)]*,\s*(?:mode\s*=\s*)?['\"][^'\"]*[wax+]")


def _code_writes(e: Event, name: str, code: str, add, cwd: str | None = None) -> None:
    """Files a program text writes: each literal path opened for writing, and a
    marker when it writes somewhere the text does not name (never reconstructable)."""
    named = False
    for m in _PY_OPEN_W.finditer(code):
        add(WRITE, name, e, path=m.group(2), cwd=cwd, via="code", command=code[:500])
        named = True
    if not named and _PY_WRITES.search(code):
        add(WRITE, name, e, command=code[:500], via="code", detail={"target": "<files written by code>"})


def _strings(v: Any, depth: int = 0) -> Iterable[str]:
    if depth > 6:
        return
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x, depth + 1)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x, depth + 1)


def _shell(e: Event, name: str, text: str, res: Resolver, add, depth: int = 0) -> str | None:
    """Normalize one shell line; returns the working directory it leaves behind."""
    mine: list[Action] = []
    outer_add = add

    def add(*args: Any, **kw: Any) -> Action:  # noqa: F811 - record what this line added
        a = outer_add(*args, **kw)
        mine.append(a)
        return a

    if depth == 0:
        add(EXEC, name, e, command=text, via="shell")
    cwd = res.cwd
    for sc in split_commands(text):
        if sc.cd is not None:
            if sc.cd not in ("~", "-") and not sc.cd.startswith("$"):
                cwd = res.absolute(sc.cd, cwd)
            continue
        named: set[str] = set()
        for r in sc.reads:
            if r and not r.startswith("$") and r != sc.code:
                named.add(r)
                add(READ, sc.name or name, e, path=r, cwd=cwd, via="shell", command=sc.text[:500])
        for w in sc.writes:
            if w.startswith("<"):
                add(WRITE, sc.name or name, e, command=sc.text[:500], via="shell", detail={"target": w})
            elif w and not w.startswith("$"):
                named.add(w)
                add(WRITE, sc.name or name, e, path=w, cwd=cwd, via="shell", command=sc.text[:500])
        cmd = base_name(sc.name)
        if sc.code is not None:
            if cmd in SHELLS and depth < 4:
                _shell(e, name, sc.code, res, add, depth + 1)  # bash -c '...': a shell line of its own
            else:
                for m in path_mentions(sc.code):
                    add(REF, sc.name or name, e, path=m, cwd=cwd, via="code", command=sc.code[:500])
                _code_writes(e, sc.name or name, sc.code, add, cwd)
        elif cmd not in TEXT_ARGS and cmd not in READERS and cmd not in WRITERS and cmd not in ("cp", "mv", "tee", "dd", "ln", "install", "rsync", "scp", "patch", "cd"):
            # an unknown program: path-shaped operands may be files it opens
            for w in sc.words[1:]:
                if w.startswith("-") and "=" not in w:
                    continue
                for m in path_mentions(w.split("=", 1)[-1]):
                    if m not in named:
                        add(REF, sc.name or name, e, path=m, cwd=cwd, via="shell", command=sc.text[:500])
    # heredoc bodies: a program when an interpreter reads them, file content otherwise
    _, bodies = strip_heredocs(text)
    for line, body in bodies:
        head = [base_name(w) for w in re.findall(r"[^\s;&|<>()]+", line)[:3]]
        interp = next((h for h in head if h in INTERPRETERS), None)
        if interp in SHELLS and depth < 4:
            _shell(e, name, body, res, add, depth + 1)
        elif interp:
            for m in path_mentions(body):
                add(REF, interp, e, path=m, cwd=cwd, via="code", command=body[:500])
            _code_writes(e, interp, body, add, cwd)
        else:
            # file content: attach it to the write it feeds (cat > f <<EOF, tee f <<EOF)
            m = re.search(r"(?:>>?|\btee\s+(?:-a\s+)?)\s*['\"]?([^\s'\";&|<>]+)", line)
            if m:
                target = res.absolute(m.group(1), cwd)
                for a in reversed(mine):
                    if a.op == WRITE and a.path == target:
                        a.content = body
                        break
    return cwd


def observations(session: Session) -> list[tuple[Event, str, str | None]]:
    """Every observation text the agent got, with its sub-session label:
    ``(event, text, session label)``. User and system messages are not included."""
    out = []
    for sess in session.walk():
        label = None if sess is session else (sess.id or sess.source_path)
        for e in sess.events:
            if e.kind == OBSERVATION or (e.kind == "error" and (e.source or "") != "user"):
                text = e.text
                if text:
                    out.append((e, text, label))
                # the whole file an editor / write left behind is also something the agent saw
                new = e.edit.new if e.edit is not None else None
                if isinstance(new, str) and new and new != text:
                    out.append((e, new, label))
    return out
