"""The Terminus / Terminus-2 reader (see the package docstring: :mod:`trajkit.formats.terminus2`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING, dumps_python, loads
from ...model import (
    ACTION,
    MESSAGE,
    OBSERVATION,
    OTHER,
    Event,
    Outcome,
    ReadOptions,
    Ref,
    Session,
    Step,
    TrajkitError,
    Usage,
)
from ...reading.builder import SessionBuilder
from ...reading.probe import Probe
from ...steps import blank_safe
from ...vocab.trials import TERMINAL_BENCH, find_results, find_verifier_dir, trial_outcome
from .detect import LOGS, NAME, TERMINUS_TOOLS, TRIAL_DIRS, _episodes, locate

#: The files an episode folder may hold, and their role.
EPISODE_FILES = {"prompt.txt": "prompt", "response.txt": "response", "response.json": "response", "debug.json": "debug"}

OUTPUT_MARKER = "New Terminal Output:"
SCREEN_MARKER = "Current Terminal Screen:"
_LENGTH_ERROR = "ERROR!! NONE of the actions you just requested were performed"


# ---------------------------------------------------------------- responses


def _text(data: bytes, b: SessionBuilder, path: Path | str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        b.diag("terminus2.not-utf8", f"not valid UTF-8 at byte {e.start}; undecodable bytes replaced", WARNING, file=path, offset=e.start)
        return data.decode("utf-8", errors="replace")


def strict_doc(text: str) -> tuple[Any, str | None]:
    """The response parsed as one JSON document (the benchmark rule), or
    MISSING and why not."""
    value, d = loads(text.encode("utf-8", errors="surrogatepass"))
    if value is MISSING:
        return MISSING, d.message if d is not None else "not JSON"
    return value, None


_XML_TAG = {k: re.compile(rf"<{k}>(.*?)</{k}>", re.S) for k in ("analysis", "plan", "task_complete")}
_XML_COMMANDS = re.compile(r"<commands>(.*?)</commands>", re.S)
_XML_KEYS = re.compile(r"<keystrokes(?P<attrs>[^>]*)>(?P<body>.*?)</keystrokes>", re.S)
_XML_DURATION = re.compile(r"""duration\s*=\s*["']([^"']*)["']""")


def lenient_doc(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """What Terminus itself takes from a response strict JSON parsing
    rejects: the outermost JSON object inside the text (prose or a code
    fence around it), or the XML variant. ``(document, how)``."""
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        value, _ = loads(text[start:end + 1].encode("utf-8", errors="surrogatepass"))
        if isinstance(value, dict):
            return value, "the outermost JSON object in the text"
    if "<response>" in text or "<commands>" in text:
        doc: dict[str, Any] = {}
        for k, rx in _XML_TAG.items():
            m = rx.search(text)
            if m:
                doc[k] = m.group(1).strip()
        block = _XML_COMMANDS.search(text)
        cmds = []
        if block:
            for m in _XML_KEYS.finditer(block.group(1)):
                c: dict[str, Any] = {"keystrokes": m.group("body")}
                dm = _XML_DURATION.search(m.group("attrs"))
                if dm:
                    try:
                        c["duration"] = float(dm.group(1))
                    except ValueError:
                        c["duration"] = dm.group(1)
                cmds.append(c)
        doc["commands"] = cmds
        if "task_complete" in doc:
            doc["task_complete"] = doc["task_complete"].lower() == "true"
        return doc, "the XML variant"
    return None, None


def command_text(entry: Any) -> str:
    """A command entry's action text by the benchmark rule: an object's
    ``keystrokes`` (its JSON when they are no string), a bare string as is,
    anything else as its JSON; blank text as its JSON literal."""
    if isinstance(entry, dict):
        ks = entry.get("keystrokes")
        return blank_safe(ks) if isinstance(ks, str) else dumps_python(entry)
    if isinstance(entry, str):
        return blank_safe(entry)
    return dumps_python(entry)


def _is_true(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def _thought(doc: dict[str, Any]) -> str | None:
    parts = []
    for keys in (("analysis", "state_analysis"), ("plan", "explanation")):
        for k in keys:
            v = doc.get(k)
            if isinstance(v, str) and v:
                parts.append(v)
                break
    return "\n".join(parts) if parts else None


def prompt_kind(text: str) -> str:
    """What a prompt is (terminus2.md §2.1): ``output`` (terminal output),
    ``warnings`` (output after parser warnings), ``parse_error``,
    ``completion_check``, ``timeout``, ``output_length_error`` or ``other``."""
    t = text.lstrip()
    if t.startswith("Previous response had parsing errors:"):
        return "parse_error"
    if "Are you sure you want to mark the task as complete?" in text:
        return "completion_check"
    if t.startswith("Previous command:") and "timed out after" in text:
        return "timeout"
    if t.startswith(_LENGTH_ERROR):
        return "output_length_error"
    if t.startswith("Previous response had warnings:"):
        return "warnings"
    if t.startswith(OUTPUT_MARKER) or t.startswith(SCREEN_MARKER):
        return "output"
    return "other"


def observation_text(prompt: str) -> str:
    """The benchmark rule's observation from the next episode's prompt: the
    text after the first ``New Terminal Output:``, else the whole prompt,
    stripped."""
    i = prompt.find(OUTPUT_MARKER)
    return (prompt[i + len(OUTPUT_MARKER):] if i >= 0 else prompt).strip()


# ---------------------------------------------------------------- usage in debug.json


def _debug_usage(value: Any) -> tuple[Usage | None, dict[str, Any] | None, str | None]:
    """``(usage, usage dict, model)`` from a LiteLLM ``debug.json`` when it
    holds the response (``original_response`` / ``response`` / ``usage``)."""
    if not isinstance(value, dict):
        return None, None, None
    model = value.get("model") if isinstance(value.get("model"), str) else None
    counts = None
    source = None
    if isinstance(value.get("usage"), dict):
        counts, source = value["usage"], "debug.json usage"
    else:
        for key in ("original_response", "response"):
            r = value.get(key)
            if isinstance(r, str):
                r, _ = loads(r.encode("utf-8", errors="surrogatepass"))
            if isinstance(r, dict) and isinstance(r.get("usage"), dict):
                counts, source = r["usage"], f"debug.json {key}.usage"
                if model is None and isinstance(r.get("model"), str):
                    model = r["model"]
                break
    if counts is None:
        return None, None, model
    u = Usage.from_counts(counts, source)
    cost = value.get("response_cost")
    if u is not None and isinstance(cost, (int, float)) and not isinstance(cost, bool):
        u.cost = float(cost)
    if u is not None:
        u.model = model
    d = dict(counts)
    if u is not None and u.cost is not None:
        d["cost"] = u.cost
    return u, d, model


# ---------------------------------------------------------------- reading


class _Episode:
    __slots__ = ("n", "dir", "prompt", "prompt_ev", "response_ev", "strict", "commands", "calls", "doc", "debug")

    def __init__(self, n: int, d: Path) -> None:
        self.n = n
        self.dir = d
        self.prompt: str | None = None
        self.prompt_ev: Event | None = None
        self.response_ev: Event | None = None
        self.strict: list[Any] | None = None  # commands[] of a strictly parsed response
        self.commands: list[Any] = []  # what Terminus executed (lenient)
        self.calls: list[Any] = []
        self.doc: dict[str, Any] | None = None
        self.debug: Event | None = None


def read(root: Path, options: ReadOptions) -> Session:
    """The Terminus trial at ``root`` as a Session (never raises on bad data)."""
    root = Path(root)
    probe = Probe()
    hint = options.hint
    found = hint if isinstance(hint, tuple) and len(hint) == 2 and hint[0] == root else locate(probe, root)
    if found is not None and found[0] != root and not probe.is_dir(root / LOGS):
        root = found[0]
    b = SessionBuilder(NAME, root, options, view="episodes", probe=probe)
    session = b.session
    if not probe.is_dir(root):
        b.diag("terminus2.not-a-trial", "not a directory: a Terminus run is a trial folder with agent-logs/episode-<N>/", ERROR, file=root)
        return session
    logs = root / LOGS if probe.is_dir(root / LOGS) else root
    session.metadata["logs_dir"] = str(logs)
    _read_trial_files(b, root)
    eps = _episodes(probe, logs)
    if not eps:
        b.diag("terminus2.no-episodes", f"no episode-<N>/ folders in {logs}", ERROR, file=logs)
        _finish_run(session, [], None)
        return b.finish()
    numbers = [n for n, _ in eps]
    missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
    if numbers[0] != 0 or missing:
        gaps = ([f"0-{numbers[0] - 1}"] if numbers[0] else []) + [str(m) for m in missing[:10]]
        b.diag("terminus2.episode-gap", f"episode numbers have gaps (missing {', '.join(gaps)}{' ...' if len(missing) > 10 else ''}); "
               "folders are read in numeric order", INFO, file=logs)
    if logs != root:
        known = {name for _, name in eps}
        for name in sorted(probe.listdir(logs) or ()):
            if name not in known:
                _unknown(b, logs / name)
    episodes = [_read_episode(b, n, logs / name) for n, name in eps]
    _link(b, episodes)
    agent = "terminus-1" if any(ep.response_ev is not None and ep.response_ev.type == "response.json" for ep in episodes) else "terminus-2"
    _finish_run(session, episodes, agent)
    if options.steps:
        session.steps = build_steps(session, episodes)
    return b.finish()


def _unknown(b: SessionBuilder, p: Path) -> None:
    st = b.probe.stat(p)
    b.unused(p, "other", note="not part of the Terminus layout", size=st.st_size if st is not None and not b.probe.is_dir(p) else None)
    b.diag("terminus2.unknown-file", f"{'folder' if b.probe.is_dir(p) else 'file'} not part of the Terminus layout; left alone", INFO, file=p)


def _read_trial_files(b: SessionBuilder, root: Path) -> None:
    probe = b.probe
    session = b.session
    names = probe.listdir(root) or ()
    if "results.json" in names and not probe.is_dir(root / "results.json"):
        value, _sf = b.read_json(root / "results.json", "results")
        if value is not MISSING:
            session.metadata["results"] = value
    if "commands.txt" in names and not probe.is_dir(root / "commands.txt"):
        st = probe.stat(root / "commands.txt")
        b.unused(root / "commands.txt", "keystrokes", note="the keystrokes tmux received (the episodes' commands again)",
                 size=st.st_size if st is not None else None)
    for d, role in TRIAL_DIRS.items():
        if d in names and probe.is_dir(root / d):
            for name in sorted(probe.listdir(root / d) or ()):
                p = root / d / name
                st = probe.stat(p)
                b.unused(p, role, note="terminal screens / recordings of the trial, not the agent's record",
                         size=st.st_size if st is not None and not probe.is_dir(p) else None)


def _read_episode(b: SessionBuilder, n: int, d: Path) -> _Episode:
    probe = b.probe
    session = b.session
    ep = _Episode(n, d)
    dirs, files = probe.scan(d)
    names = set(probe.listdir(d) or ())
    base = str(d) + os.sep
    for name in sorted(names - set(EPISODE_FILES)):
        _unknown(b, Path(base + name))
    eid = f"episode-{n}"
    # prompt: what the model was sent this turn
    if "prompt.txt" in names and "prompt.txt" not in dirs:
        data, sf = b.read_bytes(base + "prompt.txt", "prompt")
        if data is not None:
            ep.prompt = _text(data, b, base + "prompt.txt")
            ep.prompt_ev = Event(f"{eid}/prompt", MESSAGE, "prompt.txt", ep.prompt, source="user", role="user", text=ep.prompt,
                                 ref=Ref(sf.path, f"{eid}/prompt", 1, ep.prompt.count("\n") + 1),
                                 extra={"episode": n, "prompt_kind": prompt_kind(ep.prompt)})
            session.events.append(ep.prompt_ev)
            sf.event_ids.append(ep.prompt_ev.id)
    else:
        b.diag("terminus2.no-prompt", f"episode {n} has no prompt.txt: what the model saw this turn is not recorded", WARNING, file=d)
    # response: the model's raw answer
    rname = "response.txt" if "response.txt" in names else "response.json" if "response.json" in names else None
    if "response.txt" in names and "response.json" in names:
        st = probe.stat(base + "response.json")
        b.unused(base + "response.json", "response", note="response.txt read instead", size=st.st_size if st is not None else None)
    if rname is None or rname in dirs:
        b.diag("terminus2.no-response", f"episode {n} has no response.txt or response.json: the turn contributes no commands", WARNING, file=d)
    else:
        data, sf = b.read_bytes(base + rname, "response")
        if data is not None:
            _response(b, ep, rname, _text(data, b, base + rname), sf.path)
            if ep.response_ev is not None:
                sf.event_ids.append(ep.response_ev.id)
    # debug.json: LiteLLM's record of the call
    if "debug.json" in names and "debug.json" not in dirs:
        value, sf = b.read_json(base + "debug.json", "debug")
        if value is not MISSING:
            ep.debug = Event(f"{eid}/debug", OTHER, "debug.json", value, source="harness", ref=Ref(sf.path, f"{eid}/debug"),
                             extra={"episode": n})
            session.events.append(ep.debug)
            sf.event_ids.append(ep.debug.id)
            u, counts, model = _debug_usage(value)
            if model is not None:
                ep.debug.extra["model"] = model
            if ep.response_ev is not None and u is not None:
                ep.response_ev.usage = counts
                ep.response_ev.model_usage = u
            if ep.response_ev is not None and model is not None:
                ep.response_ev.extra["model"] = model
    return ep


def _response(b: SessionBuilder, ep: _Episode, rname: str, text: str, path: str) -> None:
    session = b.session
    n = ep.n
    eid = f"episode-{n}/response"
    where = {"file": path, "event_id": eid}
    value, why = strict_doc(text)
    doc: dict[str, Any] | None = None
    how = "JSON"
    if value is MISSING:
        doc, how = lenient_doc(text)
        if text.lstrip().startswith(_LENGTH_ERROR):
            b.diag("terminus2.output-length-error", f"episode {n}: response.txt holds Terminus's output-length error text "
                   "(the model's answer was too long and was overwritten)", INFO, **where)
        else:
            found = f"; Terminus's lenient reading takes {how}" if doc is not None else "; Terminus's lenient reading finds nothing either"
            b.diag("terminus2.response-not-json", f"episode {n}: the response is not one JSON document ({why}){found}", WARNING, **where)
    elif not isinstance(value, dict):
        b.diag("terminus2.response-not-object", f"episode {n}: the response is a JSON {type(value).__name__}, not an object: no commands", WARNING, **where)
    else:
        doc = value
        cmds = value.get("commands")
        if isinstance(cmds, list):
            ep.strict = cmds
        else:
            b.diag("terminus2.commands-not-list", f"episode {n}: commands is {'missing' if cmds is None else 'a JSON ' + type(cmds).__name__}, "
                   "not a list: no commands", WARNING, **where)
    ep.doc = doc
    cmds = doc.get("commands") if doc is not None else None
    ep.commands = cmds if isinstance(cmds, list) else []
    if ep.strict is None and ep.commands:
        session.metadata.setdefault("uncounted_commands", []).append({"episode": n, "commands": len(ep.commands), "how": how})
        b.diag("terminus2.commands-not-counted", f"episode {n}: strict JSON parsing finds no commands, Terminus's lenient reading "
               f"({how}) finds {len(ep.commands)}; they are kept as tool calls but are not steps (benchmark rule)", WARNING, **where)
    calls = []
    for i, entry in enumerate(ep.commands, 1):
        if isinstance(entry, dict):
            args = {k: v for k, v in entry.items()}
            if not isinstance(entry.get("keystrokes"), str):
                b.diag("terminus2.bad-command", f"episode {n}: command {i} has {'no' if 'keystrokes' not in entry else 'non-string'} "
                       "keystrokes; its action is the entry's JSON", INFO, **where)
        elif isinstance(entry, str):
            args = {"keystrokes": entry}
        else:
            args = {"keystrokes": dumps_python(entry)}
            b.diag("terminus2.bad-command", f"episode {n}: command {i} is a JSON {type(entry).__name__}, not an object or a string", INFO, **where)
        # what tmux was sent, as the shell line certify and the exports read
        ks = args.get("keystrokes")
        executed = {**args, "command": ks if isinstance(ks, str) else dumps_python(entry)}
        calls.append(TERMINUS_TOOLS.call("bash_command", args, f"call_{n}_{i}", input=executed))
    complete = doc is not None and (_is_true(doc.get("task_complete")) or _is_true(doc.get("is_task_complete")))
    if complete:
        calls.append(TERMINUS_TOOLS.call("mark_task_complete", {}, f"call_{n}_task_complete"))
    ep.calls = calls
    raw: Any = text
    if rname == "response.json" and value is not MISSING:
        raw = value  # Terminus-1 writes JSON: the native record is the document
    extra: dict[str, Any] = {"episode": n, "parsed": "strict" if ep.strict is not None else ("lenient" if doc is not None else "none")}
    if complete:
        extra["task_complete"] = True
    ev = Event(eid, ACTION if calls else MESSAGE, rname, raw, source="agent", role="assistant", text=text,
               tool_calls=calls, response_id=f"episode-{n}", reasoning=_thought(doc) if doc is not None else None,
               ref=Ref(path, eid, 1, text.count("\n") + 1), extra=extra)
    ep.response_ev = ev
    session.events.append(ev)


def _link(b: SessionBuilder, episodes: list[_Episode]) -> None:
    """Each prompt after the first: the answer to the previous episode's
    last command when that episode ran commands, else a harness message."""
    prev: _Episode | None = None
    for ep in episodes:
        pe = ep.prompt_ev
        if pe is not None and prev is not None:
            kind = pe.extra.get("prompt_kind")
            shell_calls = [c for c in prev.calls if c.name == "bash_command"]
            if kind == "parse_error" and prev.strict:
                b.diag("terminus2.not-executed", f"episode {prev.n}: the next prompt reports parsing errors, so Terminus ran none of "
                       f"its {len(prev.strict)} command(s); the benchmark rule still counts them", INFO,
                       file=pe.ref.path if pe.ref else None, event_id=pe.id)
            if shell_calls and prev.response_ev is not None:
                pe.kind, pe.role, pe.source = OBSERVATION, "tool", "environment"
                pe.call_id = shell_calls[-1].call_id
                pe.cause = prev.response_ev.id
            else:
                pe.source = "harness"
        prev = ep


def build_steps(session: Session, episodes: list[_Episode]) -> list[Step]:
    """agent-eval's ``terminus2_commands`` rule (see the module docstring)."""
    steps: list[Step] = []
    for k, ep in enumerate(episodes):
        if not ep.strict or ep.response_ev is None:
            continue
        nxt = episodes[k + 1] if k + 1 < len(episodes) else None
        obs_text = observation_text(nxt.prompt) if nxt is not None and nxt.prompt is not None else ""
        obs_ev = nxt.prompt_ev if nxt is not None else None
        thought = _thought(ep.doc) if ep.doc is not None else None
        last = len(ep.strict) - 1
        for i, entry in enumerate(ep.strict):
            first = i == 0
            steps.append(Step(
                step_id=len(steps) + 1,
                action=command_text(entry),
                tool_type="bash_command",
                observation=obs_text if i == last else "",
                thinking=thought if first else None,
                action_ref=ep.response_ev.ref,
                observation_ref=obs_ev.ref if i == last and obs_ev is not None else None,
                action_event_id=ep.response_ev.id,
                observation_event_id=obs_ev.id if i == last and obs_ev is not None else None,
                parallel_group=ep.n,
                usage=ep.response_ev.usage if first else None,
                model_usage=ep.response_ev.model_usage if first else None,
                extra={"call_id": f"call_{ep.n}_{i + 1}", "episode": ep.n},
            ))
    return steps


# ---------------------------------------------------------------- run facts and end signal


def _finish_run(session: Session, episodes: list[_Episode], agent: str | None) -> None:
    md = session.metadata
    run = session.run
    run.harness = TERMINAL_BENCH
    run.agent = agent
    paths = {f.role: f.path for f in session.files if f.role == "results" and f.status == "read"}
    run.results = find_results({"results": md["results"]} if isinstance(md.get("results"), dict) else {}, paths)
    res = md.get("results") if isinstance(md.get("results"), dict) else {}
    if run.results:
        run.benchmark = TERMINAL_BENCH
    g = res.get
    run.trial_id = g("trial_name") if isinstance(g("trial_name"), str) else None
    run.instance_id = g("task_id") if isinstance(g("task_id"), str) else None
    for a, b_ in (("started_at", "agent_started_at"), ("ended_at", "agent_ended_at")):
        v = g(b_) or g(f"trial_{a}")
        if isinstance(v, str):
            setattr(run, a, v)
    models = [e.extra["model"] for e in session.events if isinstance(e.extra.get("model"), str)]
    run.models = list(dict.fromkeys(models))
    costs = [e.model_usage.cost for e in session.events if e.model_usage is not None and e.model_usage.cost is not None]
    if costs:
        run.cost_usd = sum(costs)
    run.verifier_dir = find_verifier_dir(session.source_path)
    session.id = run.trial_id or Path(session.source_path).name
    if isinstance(g("instruction"), str):
        session.task, session.task_source = g("instruction"), "results.json instruction"
    elif episodes and episodes[0].prompt is not None:
        p = episodes[0].prompt
        m = re.search(r"(?:Task Description|Instruction):\n(.*?)\n\n", p, re.S)
        session.task, session.task_source = (m.group(1), "episode-0 prompt (task section)") if m else (p, "episode-0 prompt")
    for ev in session.events:
        if ev.kind == ACTION and "model" not in ev.extra and run.models:
            ev.extra["model"] = run.models[0]
    session.outcome = _outcome(session, episodes, agent)


def _outcome(session: Session, episodes: list[_Episode], agent: str | None) -> Outcome | None:
    """The harness's end signal: ``results.json``'s ``failure_mode`` first
    (a timeout or a parse failure the episodes cannot show), then Terminus's
    own completion: ``task_complete`` in two consecutive turns (Terminus-2
    asks for confirmation), ``is_task_complete`` once (Terminus 1)."""
    answered = [ep for ep in episodes if ep.response_ev is not None]
    flags = [bool(ep.response_ev.extra.get("task_complete")) for ep in answered]  # type: ignore[union-attr]
    claimed = any(flags)
    ev: list[dict[str, Any]] = [{"event_id": ep.response_ev.id, "what": "task_complete"} for ep, f in zip(answered, flags) if f]  # type: ignore[union-attr]
    decided = trial_outcome(session.run.results, claimed, ev)
    if decided is not None:
        return decided
    if not answered and not session.run.results:
        return None
    fm = session.run.results[0].data.get("failure_mode") if session.run.results else None
    status = fm if isinstance(fm, str) else None
    if agent == "terminus-1":
        if flags and flags[-1]:
            return Outcome(True, status=status or "is_task_complete", signal="is_task_complete in the last response", claimed_success=True, evidence=ev)
    elif len(flags) >= 2 and flags[-1] and flags[-2]:
        return Outcome(True, status=status or "task_complete", signal="task_complete confirmed in the last two responses", claimed_success=True, evidence=ev)
    last = "task_complete once, unconfirmed" if flags and flags[-1] else "no task_complete"
    return Outcome(False, status=status, signal=f"the episodes end without Terminus's completion ({last})", claimed_success=claimed, evidence=ev)


# ---------------------------------------------------------------- context


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw on each turn: Terminus's chat history (every
    earlier prompt and raw response, in episode order) and this turn's
    prompt. Where ``debug.json`` logged the request, ``logged`` compares it.
    Summarisation turns are not logged, so after one the rebuilt history
    differs from the logged request (``context --check`` says where)."""
    messages: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    by_ep: dict[Any, dict[str, Event]] = {}
    for e in session.events:
        by_ep.setdefault(e.extra.get("episode"), {})[e.type] = e
    for n in sorted(k for k in by_ep if isinstance(k, int)):
        evs = by_ep[n]
        prompt = evs.get("prompt.txt")
        resp = evs.get("response.txt") or evs.get("response.json")
        debug = evs.get("debug.json")
        if prompt is not None:
            messages.append({"role": "user", "content": prompt.text or ""})
        if resp is not None:
            entry: dict[str, Any] = {"llm_response_id": resp.response_id, "event_id": resp.id, "messages": list(messages)}
            logged = _logged_messages(debug)
            if logged is not None:
                entry["logged"] = {"event_id": debug.id, "differences": _differences(messages, logged)}  # type: ignore[union-attr]
            out.append(entry)
            messages.append({"role": "assistant", "content": resp.text or ""})
    if at is not None:
        for entry in out:
            if entry["event_id"] == at or (isinstance(at, str) and at.split("/", 1)[0] == str(entry["llm_response_id"])):
                return [entry]
        if session.event_by_id(at) is None:
            raise TrajkitError(f"no event {at!r} in {session.source_path}")
        return [{"llm_response_id": None, "event_id": at, "messages": list(messages)}]
    return out


def _logged_messages(debug: Event | None) -> list[Any] | None:
    if debug is None or not isinstance(debug.raw, dict):
        return None
    msgs = debug.raw.get("messages")
    return msgs if isinstance(msgs, list) else None


def _differences(rebuilt: list[dict[str, Any]], logged: list[Any]) -> list[str]:
    out = []
    if len(rebuilt) != len(logged):
        out.append(f"{len(rebuilt)} messages rebuilt, {len(logged)} logged")
    for i, (a, m) in enumerate(zip(rebuilt, logged)):
        if not isinstance(m, dict):
            out.append(f"message {i}: logged a JSON {type(m).__name__}")
        elif m.get("role") != a["role"] or m.get("content") != a["content"]:
            out.append(f"message {i}: {a['role']} differs from the logged {m.get('role')}")
    return out
