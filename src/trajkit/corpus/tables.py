"""The index tables: their columns (one definition, used by the writer, the
query views and ``docs/index.md``) and the rows a read Session gives.

Rows come from the typed facts of the :class:`~trajkit.model.Session`
(steps, tool calls and their ``op``, ``Usage``, ``Outcome``, ``RunInfo``,
diagnostics, sub-sessions), never from native records, so every format that
reads into a Session indexes the same way.

Rules every table keeps:

- every row has the run's ``run_id`` (:func:`run_id`: a hash of the run's
  portable ``source``, so it is the same on every machine and every re-index);
- paths are relative to the run's root (a directory run) or to the folder
  holding it (a one-file run), so an index stays portable;
- a value the record does not give is NULL, never 0 or "" (a sum over
  model calls is NULL when no call recorded that figure).

pyarrow is imported lazily (:func:`schema`), only by the writer.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime
from typing import Any

from ..model import Session

# (column, type, description). Types: string, int64, float64, bool, timestamp, list<string>.
STR, INT, FLOAT, BOOL, STRLIST = "string", "int64", "float64", "bool", "list<string>"

_RUN_KEY = [
    ("run_id", STR, "Stable id of the run: the first 32 hex digits of SHA-256 of `source`."),
]
_SESSION_KEY = [
    ("session_key", STR, "The session inside the run's sub-agent tree: `0` for the top session, `0.1` for its first child, `0.1.2` ..."),
]

TABLES: dict[str, list[tuple[str, str, str]]] = {
    "runs": _RUN_KEY + [
        ("source", STR, "The run's portable address: the name of the ROOT it was found under, then its path relative to that ROOT (`/`-separated; `#ID` for a session of a container file, `!/member` for a run inside an archive)."),
        ("root", STR, "The ROOT argument the run was found under, as given."),
        ("path", STR, "The run's path relative to ROOT (`.` when ROOT is the run)."),
        ("format", STR, "The format it was read as; NULL when no format could read it."),
        ("read_ok", BOOL, "Whether the run could be read at all (false: see its `diagnostics` rows)."),
        ("session_id", STR, "The native session / conversation id."),
        ("task", STR, "The task text, as the reader found it."),
        ("harness", STR, "The harness that ran the agent."),
        ("harness_version", STR, "Its version."),
        ("agent", STR, "The agent (class / kind) inside the harness."),
        ("model", STR, "The first LLM model the run called."),
        ("models", STRLIST, "Every LLM model the run called, first one first."),
        ("benchmark", STR, "The benchmark the run belongs to, when recorded."),
        ("instance_id", STR, "The benchmark instance (task) id."),
        ("trial_id", STR, "The trial id."),
        ("started_at", STR, "Start time, ISO 8601 as recorded."),
        ("ended_at", STR, "End time, ISO 8601 as recorded."),
        ("duration_s", FLOAT, "`ended_at - started_at` in seconds; NULL when either is missing or unparseable."),
        ("sessions", INT, "Sessions in the run: the top session and every sub-agent session."),
        ("events", INT, "Native events read, over all sessions."),
        ("steps", INT, "Steps of the top session at benchmark granularity (the benchmark's `step_count` rule)."),
        ("steps_total", INT, "Steps over all sessions (sub-agents included)."),
        ("tool_calls", INT, "Tool calls over all sessions."),
        ("tool_errors", INT, "Tool calls whose answer is an error (see `tool_calls.error`); NULL when no call was answered."),
        ("model_calls", INT, "Model calls with recorded usage, over all sessions."),
        ("input_tokens", INT, "Prompt tokens summed over model calls; NULL when no call recorded them."),
        ("output_tokens", INT, "Completion tokens summed over model calls; NULL when none recorded."),
        ("cache_read_tokens", INT, "Prompt tokens read from the provider cache, summed; NULL when none recorded."),
        ("cache_write_tokens", INT, "Prompt tokens written to the provider cache, summed; NULL when none recorded."),
        ("reasoning_tokens", INT, "Output tokens spent reasoning, summed; NULL when none recorded."),
        ("cost_usd", FLOAT, "The run's LLM cost in USD as the record states it, else the sum of per-call costs (a call's cost the record lacks is estimated from trajkit's price table); NULL when neither is known."),
        ("cost_estimated", BOOL, "`cost_usd` includes a price-table estimate (the record states no cost for some call); NULL when `cost_usd` is."),
        ("reached_end", BOOL, "The harness emitted its own end signal; NULL when the format records no end signal."),
        ("claimed_success", BOOL, "The agent / harness declared the task done; NULL when no end signal is recorded."),
        ("end_status", STR, "The native end status as recorded (`finished`, `error`, `agent_timeout` ...)."),
        ("budget_exhausted", BOOL, "A step, token, time or cost cap was hit; NULL without an end signal."),
        ("external_error", STR, "An unrecoverable external block, in words."),
        ("human_abort", BOOL, "An operator stopped the run; NULL without an end signal."),
        ("resolved", BOOL, "The benchmark's verdict from the harness's results file (terminal-bench `is_resolved`, harbor verifier reward > 0); NULL without one."),
        ("failure_mode", STR, "The harness's failure mode (terminal-bench `failure_mode`, harbor exception type); NULL when none is recorded."),
        ("diagnostics", INT, "Diagnostics over all sessions (rows in `diagnostics`)."),
        ("errors", INT, "Of those, severity `error`."),
        ("size_bytes", INT, "Bytes of the run's files on disk (the archive member sizes for a run in an archive)."),
        ("mtime", FLOAT, "Newest modification time of the run's files (Unix seconds)."),
        ("trajkit_version", STR, "The trajkit version that wrote the row."),
    ],
    "sessions": _RUN_KEY + _SESSION_KEY + [
        ("parent_key", STR, "`session_key` of the session that spawned this one; NULL for the top session."),
        ("depth", INT, "0 for the top session, 1 for its sub-agents ..."),
        ("session_id", STR, "The native session id."),
        ("format", STR, "The format it was read as."),
        ("spawned_by_step", INT, "The parent's `step_id` that spawned it; NULL when not tied to a step."),
        ("spawn_method", STR, "How that tie was worked out (the format's rule word)."),
        ("model", STR, "The first model this session called."),
        ("events", INT, "Native events of this session."),
        ("steps", INT, "Its steps."),
        ("tool_calls", INT, "Its tool calls."),
        ("model_calls", INT, "Its model calls with recorded usage."),
        ("input_tokens", INT, "Prompt tokens summed over its model calls; NULL when none recorded."),
        ("output_tokens", INT, "Completion tokens summed; NULL when none recorded."),
        ("cost_usd", FLOAT, "Cost summed over its model calls; NULL when none recorded."),
        ("reached_end", BOOL, "Its harness end signal was reached; NULL without an end signal."),
        ("end_status", STR, "Its native end status."),
        ("diagnostics", INT, "Its diagnostics."),
    ],
    "steps": _RUN_KEY + _SESSION_KEY + [
        ("step_id", INT, "The step's number in its session (as the benchmark numbers them)."),
        ("tool_type", STR, "The native action / tool name."),
        ("op", STR, "What the step's first tool call does (`shell`, `read`, `edit`, `finish` ...; see docs/facts.md); NULL when no tool table describes it."),
        ("action", STR, "The rendered action text, as the benchmark writes it."),
        ("observation_chars", INT, "Length of the answer's text."),
        ("has_thinking", BOOL, "Whether a thought is attached to the action."),
        ("action_event_id", STR, "The native action event id (as text)."),
        ("observation_event_id", STR, "The native answer event id (as text); NULL when unanswered."),
        ("action_file", STR, "The file the action was read from, relative to the run root."),
        ("action_line", INT, "Its first line in that file; NULL when not a line-oriented file."),
        ("timestamp", STR, "The action event's timestamp as recorded."),
        ("input_tokens", INT, "Prompt tokens of the model call that made the step; NULL when not recorded."),
        ("output_tokens", INT, "Completion tokens of that call; NULL when not recorded."),
        ("cost_usd", FLOAT, "Cost of that call; NULL when not recorded."),
        ("labels", STRLIST, "Labels attached to the step (e.g. from a benchmark manifest)."),
    ],
    "tool_calls": _RUN_KEY + _SESSION_KEY + [
        ("step_id", INT, "The step the call belongs to; NULL for a call outside any step."),
        ("call_index", INT, "0-based position of the call among its event's calls."),
        ("event_id", STR, "The native event holding the call (as text)."),
        ("call_id", STR, "The tool call id."),
        ("name", STR, "The tool name."),
        ("op", STR, "What it does (docs/facts.md); NULL when no tool table describes it."),
        ("command", STR, "The shell command or program text (`shell`, `code`)."),
        ("target_path", STR, "The file or directory the call names."),
        ("url", STR, "The URL fetched."),
        ("answered", BOOL, "Whether an answer (observation) was recorded for it."),
        ("error", BOOL, "The answer is an error event (kind `error`, or a native type naming an error); NULL when unanswered."),
        ("output_chars", INT, "Length of the answer's text; NULL when unanswered."),
    ],
    "diagnostics": _RUN_KEY + _SESSION_KEY + [
        ("code", STR, "The stable diagnostic code (docs/diagnostics.md)."),
        ("severity", STR, "`info`, `warning` or `error`."),
        ("message", STR, "What was odd, in words."),
        ("file", STR, "The file it is about, relative to the run root."),
        ("line", INT, "Line in that file."),
        ("offset", INT, "Byte offset in that file."),
        ("event_id", STR, "The native event it is about (as text)."),
    ],
    "certificates": _RUN_KEY + [
        ("state", STR, "The certified terminal state (docs/certify.md)."),
        ("reason", STR, "Why, in words."),
        ("claimed_success", BOOL, "The engine claimed success."),
        ("claim_check", STR, "`verified-true`, `verified-false` or `unverifiable` for a claimed success; NULL without a claim."),
        ("false_completion", BOOL, "The gate found a false completion."),
        ("findings", INT, "Anticheat and diff findings."),
        ("high_findings", INT, "Of those, severity `high` or `critical`."),
        ("cost_usd", FLOAT, "The run's cost as the certificate states it; NULL when unknown."),
    ],
    "turns": _RUN_KEY + [
        ("turn", INT, "The turn's index in its rollout."),
        ("prompt_tokens", INT, "Context tokens."),
        ("output_tokens", INT, "Generated tokens."),
        ("trained", BOOL, "Whether the turn made a tool call (kept for training)."),
        ("prompt_source", STR, "`captured` or `retokenized`."),
        ("finish_reason", STR, "The model's finish reason."),
        ("tool_calls", INT, "Tool calls the turn made."),
        ("reward", FLOAT, "The rollout's reward; NULL when none recorded."),
    ],
}

#: Tables written only when asked for (``--certify``, ``--turns``); their views exist (empty) otherwise.
OPTIONAL_TABLES = ("certificates", "turns")


def schema(table: str) -> Any:
    """The Arrow schema of ``table``."""
    import pyarrow as pa

    types = {STR: pa.string(), INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), STRLIST: pa.list_(pa.string())}
    return pa.schema([pa.field(name, types[t]) for name, t, _ in TABLES[table]])


def arrow_table(table: str, rows: list[dict[str, Any]]) -> Any:
    """``rows`` (dicts keyed by column name; a missing key is NULL) as an
    Arrow table of ``table``'s schema: ``Encoded(table, rows).to_arrow()``."""
    return Encoded(table, rows).to_arrow()


class Encoded:
    """Rows of one table as Arrow column buffers (plain bytes: built and
    pickled without pyarrow, so a worker hands the driver a few buffers per
    table instead of a dict per row, and the driver's heap does not churn).

    The buffers are assembled into arrays by ``Array.from_buffers``
    (:meth:`to_arrow`), not through ``pa.array`` / ``Table.from_pylist``:
    those ask pyarrow's pandas shim whether the input is "array-like", which
    imports pandas (50 MB and half a second of CPU) wherever pandas is
    installed. The values are the ones ``from_pylist`` gives: NULL for None,
    int64, float64 (an int is widened), bool, UTF-8 text (a lone surrogate,
    which UTF-8 cannot hold, is written as its escape, ``\\ud83d``, as
    trajkit's other outputs do), list of text. A value of another type
    raises ``TypeError``.
    """

    __slots__ = ("table", "n", "columns")

    def __init__(self, table: str, rows: list[dict[str, Any]]) -> None:
        self.table = table
        self.n = len(rows)
        self.columns = [_encode(kind, [r.get(name) for r in rows], name) for name, kind, _ in TABLES[table]]

    def __getstate__(self) -> tuple[Any, ...]:
        return self.table, self.n, self.columns

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.table, self.n, self.columns = state

    def to_arrow(self) -> Any:
        import pyarrow as pa

        sch = schema(self.table)
        kinds = [kind for _, kind, _ in TABLES[self.table]]
        return pa.Table.from_arrays([_assemble(k, self.n, c) for k, c in zip(kinds, self.columns)], schema=sch)


def _validity(values: list[Any]) -> tuple[bytes | None, int]:
    """The validity bitmap of ``values`` (None: no bitmap, nothing is NULL) and the NULL count."""
    bits = 0
    nulls = 0
    for i, v in enumerate(values):
        if v is None:
            nulls += 1
        else:
            bits |= 1 << i
    if not nulls:
        return None, 0
    return bits.to_bytes((len(values) + 7) // 8, "little"), nulls


def _utf8(v: Any, column: str) -> bytes:
    if not isinstance(v, str):
        raise TypeError(f"column {column!r}: expected text, got {type(v).__name__}")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: written as its escape
        return v.encode("utf-8", "backslashreplace")


def _strings(values: list[Any], column: str) -> tuple[Any, ...]:
    import array

    valid, nulls = _validity(values)
    offsets = array.array("i", [0])
    data = []
    end = 0
    for v in values:
        if v is not None:
            b = _utf8(v, column)
            data.append(b)
            end += len(b)
        offsets.append(end)
    return valid, nulls, offsets.tobytes(), b"".join(data)


def _encode(kind: str, values: list[Any], column: str) -> tuple[Any, ...]:
    """One column's buffers: (validity, null count, buffers of the kind ...)."""
    import array

    if kind == STR:
        return _strings(values, column)
    valid, nulls = _validity(values)
    if kind == INT:
        for v in values:
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise TypeError(f"column {column!r}: expected an integer, got {type(v).__name__}")
        try:
            return valid, nulls, array.array("q", [0 if v is None else v for v in values]).tobytes()
        except OverflowError:
            raise TypeError(f"column {column!r}: an integer beyond 64 bits") from None
    if kind == FLOAT:
        for v in values:
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                raise TypeError(f"column {column!r}: expected a number, got {type(v).__name__}")
        return valid, nulls, array.array("d", [0.0 if v is None else float(v) for v in values]).tobytes()
    if kind == BOOL:
        bits = 0
        for i, v in enumerate(values):
            if v is None:
                continue
            if not isinstance(v, bool):
                raise TypeError(f"column {column!r}: expected true or false, got {type(v).__name__}")
            if v:
                bits |= 1 << i
        return valid, nulls, bits.to_bytes((len(values) + 7) // 8, "little")
    if kind == STRLIST:
        offsets = array.array("i", [0])
        items: list[Any] = []
        for v in values:
            if v is not None:
                if not isinstance(v, (list, tuple)):
                    raise TypeError(f"column {column!r}: expected a list of text, got {type(v).__name__}")
                items.extend(v)
            offsets.append(len(items))
        return valid, nulls, offsets.tobytes(), len(items), _strings(items, column)
    raise ValueError(f"column {column!r}: unknown kind {kind!r}")  # pragma: no cover - TABLES names only these


def _buf(b: bytes | None) -> Any:
    import pyarrow as pa

    return None if b is None else pa.py_buffer(b)


def _assemble(kind: str, n: int, col: tuple[Any, ...]) -> Any:
    import pyarrow as pa

    valid, nulls = _buf(col[0]), col[1]
    if kind == STR:
        return pa.Array.from_buffers(pa.string(), n, [valid, _buf(col[2]), _buf(col[3])], null_count=nulls)
    if kind == STRLIST:
        child = _assemble(STR, col[3], col[4])
        return pa.Array.from_buffers(pa.list_(pa.string()), n, [valid, _buf(col[2])], null_count=nulls, children=[child])
    typ = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_()}[kind]
    return pa.Array.from_buffers(typ, n, [valid, _buf(col[2])], null_count=nulls)


def run_id(source: str) -> str:
    """The stable id of the run at portable address ``source``."""
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def _ts(s: str | None) -> float | None:
    if not s or not isinstance(s, str):
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _duration(a: str | None, b: str | None) -> float | None:
    x, y = _ts(a), _ts(b)
    if x is None or y is None:
        return None
    return round(y - x, 6)


class Relativizer:
    """Paths a reader recorded, made relative to the run's base (the run root
    for a directory run, its folder for a one-file run). A path outside the
    base keeps its form (it names something the run points at, such as a
    workspace file)."""

    def __init__(self, root: str, is_dir: bool) -> None:
        base = root if is_dir else os.path.dirname(root)
        self.base = os.path.abspath(base) if base else ""
        self.root = os.path.abspath(root)

    def __call__(self, p: Any) -> str | None:
        if p is None:
            return None
        s = str(p)
        if not os.path.isabs(s) or not self.base:
            return s.replace(os.sep, "/")
        if s == self.base:
            return "."
        if s.startswith(self.base + os.sep):
            return s[len(self.base) + 1:].replace(os.sep, "/")
        return s


def _sum(values: list[Any]) -> Any:
    got = [v for v in values if v is not None]
    return sum(got) if got else None


def _usages(s: Session) -> list[Any]:
    return [e.model_usage for e in s.events if e.model_usage is not None]


def _is_error_answer(ev: Any) -> bool:
    if ev.kind == "error":
        return True
    return "error" in (ev.type or "").lower()


def _results(session: Session) -> tuple[bool | None, str | None]:
    """(resolved, failure_mode) from the harness's results files (typed :class:`TrialResult`)."""
    resolved: bool | None = None
    mode: str | None = None
    for r in session.run.results:
        d = r.data if isinstance(r.data, dict) else {}
        if r.kind == "terminal-bench":
            if isinstance(d.get("is_resolved"), bool):
                resolved = d["is_resolved"]
            fm = d.get("failure_mode")
            if isinstance(fm, str) and fm and fm.lower() not in ("unset", "none"):
                mode = fm
        elif r.kind == "harbor":
            vr = d.get("verifier_result")
            rewards = vr.get("rewards") if isinstance(vr, dict) else None
            reward = rewards.get("reward") if isinstance(rewards, dict) else None
            if isinstance(reward, (int, float)) and not isinstance(reward, bool) and resolved is None:
                resolved = reward > 0
            ex = d.get("exception_info")
            if isinstance(ex, dict) and isinstance(ex.get("exception_type"), str) and mode is None:
                mode = ex["exception_type"]
    return resolved, mode


def session_rows(session: Session, rid: str, rel: Relativizer, out: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Rows of every session of ``session``'s tree into ``out`` (sessions,
    steps, tool_calls, diagnostics); returns the totals the runs row needs."""
    totals: dict[str, Any] = {"sessions": 0, "events": 0, "steps_total": 0, "tool_calls": 0, "tool_errors": [],
                              "usages": [], "diagnostics": 0, "errors": 0}

    def visit(s: Session, key: str, parent: str | None, depth: int) -> None:
        usages = _usages(s)
        answers: dict[Any, Any] = {}
        by_id: dict[Any, Any] = {}
        by_cause: dict[Any, Any] = {}
        for e in s.events:
            if e.id is not None:
                by_id.setdefault(e.id, e)
            if e.call_id is not None:
                answers.setdefault(e.call_id, e)
            if e.cause is not None:
                try:
                    by_cause.setdefault(e.cause, e)
                except TypeError:  # an unhashable cause names nothing
                    pass
        step_of: dict[Any, int] = {}
        for st in s.steps:
            if st.action_event_id is not None:
                step_of.setdefault(st.action_event_id, st.step_id)
        ncalls = 0
        for e in s.events:
            if not e.tool_calls:
                continue
            for i, c in enumerate(e.tool_calls):
                ncalls += 1
                ans = answers.get(c.call_id) if c.call_id is not None else None
                if ans is None:
                    ans = by_cause.get(e.id) if e.id is not None and len(e.tool_calls) == 1 else None
                err = None if ans is None else _is_error_answer(ans)
                totals["tool_errors"].append(err)
                out["tool_calls"].append({
                    "run_id": rid, "session_key": key, "step_id": step_of.get(e.id), "call_index": i,
                    "event_id": _text(e.id), "call_id": c.call_id, "name": c.name, "op": c.op,
                    "command": c.command, "target_path": c.path, "url": c.url,
                    "answered": ans is not None, "error": err,
                    "output_chars": None if ans is None else len(ans.text or ""),
                })
        for st in s.steps:
            u = st.model_usage
            ev = by_id.get(st.action_event_id) if st.action_event_id is not None else None
            op = ev.tool_calls[0].op if ev is not None and ev.tool_calls else None
            ref = st.action_ref
            out["steps"].append({
                "run_id": rid, "session_key": key, "step_id": st.step_id, "tool_type": st.tool_type, "op": op,
                "action": st.action, "observation_chars": len(st.observation or ""),
                "has_thinking": bool(st.thinking), "action_event_id": _text(st.action_event_id),
                "observation_event_id": _text(st.observation_event_id),
                "action_file": rel(ref.path) if ref is not None else None,
                "action_line": ref.line_start if ref is not None else None,
                "timestamp": ev.timestamp if ev is not None else None,
                "input_tokens": u.input if u is not None else None,
                "output_tokens": u.output if u is not None else None,
                "cost_usd": (u.cost if u is not None else None) if st.cost is None else st.cost,
                "labels": list(st.labels),
            })
        for d in s.diagnostics:
            out["diagnostics"].append({
                "run_id": rid, "session_key": key, "code": d.code, "severity": d.severity, "message": d.message,
                "file": rel(d.file), "line": d.line, "offset": d.offset, "event_id": _text(d.event_id),
            })
        o = s.outcome
        link = s.spawned_by
        out["sessions"].append({
            "run_id": rid, "session_key": key, "parent_key": parent, "depth": depth, "session_id": _text(s.id),
            "format": s.format, "spawned_by_step": link.step_id if link is not None else None,
            "spawn_method": link.method if link is not None else None,
            "model": s.run.models[0] if s.run.models else None,
            "events": len(s.events), "steps": len(s.steps), "tool_calls": ncalls, "model_calls": len(usages),
            "input_tokens": _sum([u.input for u in usages]), "output_tokens": _sum([u.output for u in usages]),
            "cost_usd": _sum([u.cost for u in usages]),
            "reached_end": o.reached_end if o is not None else None, "end_status": o.status if o is not None else None,
            "diagnostics": len(s.diagnostics),
        })
        totals["sessions"] += 1
        totals["events"] += len(s.events)
        totals["steps_total"] += len(s.steps)
        totals["tool_calls"] += ncalls
        totals["usages"].extend(usages)
        totals["diagnostics"] += len(s.diagnostics)
        totals["errors"] += sum(1 for d in s.diagnostics if d.severity == "error")
        for i, c in enumerate(s.children):
            visit(c, f"{key}.{i + 1}", key, depth + 1)

    visit(session, "0", None, 0)
    return totals


def run_row(session: Session | None, rid: str, unit: Any, totals: dict[str, Any] | None, version: str) -> dict[str, Any]:
    """The ``runs`` row of one run (``session`` None: it could not be read)."""
    row: dict[str, Any] = {name: None for name, _, _ in TABLES["runs"]}
    row.update({"run_id": rid, "source": unit.source, "root": unit.root, "path": unit.rel,
                "size_bytes": unit.size, "mtime": unit.mtime, "trajkit_version": version,
                "read_ok": session is not None, "models": []})
    if session is None or totals is None:
        row["diagnostics"] = row["errors"] = 1
        return row
    r = session.run
    usages = totals["usages"]
    o = session.outcome
    resolved, mode = _results(session)
    errs = totals["tool_errors"]
    row.update({
        "format": session.format, "session_id": _text(session.id), "task": session.task,
        "harness": r.harness, "harness_version": r.harness_version, "agent": r.agent,
        "model": r.models[0] if r.models else None, "models": list(r.models),
        "benchmark": r.benchmark, "instance_id": r.instance_id, "trial_id": r.trial_id,
        "started_at": r.started_at, "ended_at": r.ended_at, "duration_s": _duration(r.started_at, r.ended_at),
        "sessions": totals["sessions"], "events": totals["events"], "steps": len(session.steps),
        "steps_total": totals["steps_total"], "tool_calls": totals["tool_calls"],
        "tool_errors": None if all(e is None for e in errs) else sum(1 for e in errs if e),
        "model_calls": len(usages),
        "input_tokens": _sum([u.input for u in usages]), "output_tokens": _sum([u.output for u in usages]),
        "cache_read_tokens": _sum([u.cache_read for u in usages]), "cache_write_tokens": _sum([u.cache_write for u in usages]),
        "reasoning_tokens": _sum([u.reasoning for u in usages]),
        "cost_usd": r.cost_usd if r.cost_usd is not None else _sum([u.cost for u in usages]),
        "cost_estimated": (False if r.cost_usd is not None
                           else None if _sum([u.cost for u in usages]) is None
                           else any(u.cost_estimated for u in usages if u.cost is not None)),
        "reached_end": o.reached_end if o is not None else None,
        "claimed_success": o.claimed_success if o is not None else None,
        "end_status": o.status if o is not None else None,
        "budget_exhausted": o.budget_exhausted if o is not None else None,
        "external_error": o.external_error if o is not None else None,
        "human_abort": o.human_abort if o is not None else None,
        "resolved": resolved, "failure_mode": mode,
        "diagnostics": totals["diagnostics"], "errors": totals["errors"],
    })
    if not row["models"]:
        first = next((u.model for u in usages if u.model), None)
        if first is not None:
            row["model"], row["models"] = first, sorted({u.model for u in usages if u.model})
    return row
