"""The OpenHands evaluation output and Cloud export readers (see the package docstring: :mod:`trajkit.formats.openhands_eval`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

from ... import jsonio
from ...diagnostics import ERROR, INFO, WARNING
from ...model import Event, Outcome, ReadOptions, Ref, Session, SourceFile, TrialResult
from ...reading import io as read_io
from ...vocab.openhands import BUDGET_TEXT
from ...vocab.trials import EVAL_TEST_RESULT
from ..openhands_v0 import HISTORY
from .detect import CLOUD_NAME, NAME
from .index import Index, Record, _stat_key, index

#: The :class:`~trajkit.model.TrialResult` kind holding a record's ``test_result``.
RESULT_KIND = EVAL_TEST_RESULT

V0, V0_PAIRS, SDK = "v0", "v0-pairs", "sdk"

#: Members an EvalOutput record may hold besides ``instance_id`` (V0 and SDK harnesses).
RECORD_KEYS = ("instruction", "history", "test_result", "metrics", "error", "metadata", "instance", "attempt",
               "max_attempts", "runtime_runs", "status", "resolved", "llm_completions")


# ---------------------------------------------------------------- history


def history_family(history: list) -> tuple[str | None, bool]:
    """Which event family a ``history`` list holds (``v0``, ``v0-pairs``,
    ``sdk``, or None when nothing in it says), and whether it mixes them."""
    seen: set[str] = set()
    for item in history:
        if isinstance(item, dict):
            if isinstance(item.get("kind"), str) and "action" not in item and "observation" not in item:
                seen.add(SDK)
            elif "action" in item or "observation" in item or isinstance(item.get("id"), int):
                seen.add(V0)
        elif isinstance(item, list) and item and all(isinstance(x, dict) for x in item):
            seen.add(V0_PAIRS)
        if len(seen) > 1:
            break
    if not seen:
        return None, False
    for fam in (SDK, V0, V0_PAIRS):
        if fam in seen:
            return fam, len(seen) > 1
    return None, False


class _ListEvents:
    """SDK events held in a list inside a record, as
    :func:`~trajkit.formats.openhands_sdk.reader.ingest_events` takes them."""

    def __init__(self, items: list, path: str, line: int | None, where: str, ids: list) -> None:
        self.list = items
        self.path = path
        self.line = line
        self.where = where
        self.ids = ids

    def items(self, s: Session) -> Iterator[tuple[dict, str, int, Any, Any, Any]]:
        for k, raw in enumerate(self.list):
            if type(raw) is not dict:
                s.diag("eval.history-item-not-object", f"{self.where}[{k}] is a JSON {type(raw).__name__}, not an event object; skipped",
                       ERROR, file=self.path, line=self.line)
                continue
            yield raw, self.path, k, None, None, self.line

    def read(self, s: Session, path: str, size: Any, eid: Any) -> None:
        self.ids.append(eid)

    def finish(self, s: Session) -> None:
        pass

    def unreadable(self, seen_ids: dict, n_events: int) -> None:
        return None

    def task_source(self, ev: Event) -> str:
        return self.where


def read_history(s: Session, history: Any, path: str, line: int | None, where: str, options: ReadOptions,
                 metrics: Any = None) -> list:
    """Read a list of V0 or SDK events held in a record into ``s`` (events,
    steps, usage, outcome) through the V0 or SDK reader's own pipeline; the
    native ids read, for the file accounting. ``where`` names the list
    (``history``, ``events``) in diagnostics."""
    # the V0 and SDK readers, imported on first use: detection imports this module
    from ..openhands_sdk import outcome as sdk_outcome
    from ..openhands_sdk.reader import StateView, ingest_events
    from ..openhands_v0 import reader as v0

    ids: list = []
    if history is None:
        s.diag("eval.history-missing", f"no {where}: the record holds no events, so there are no steps", WARNING, file=path, line=line)
        s.outcome = Outcome(False, signal=f"no {where} recorded")
        return ids
    if not isinstance(history, list):
        s.diag("eval.history-not-list", f"{where} is a JSON {type(history).__name__}, not a list of events; not read", ERROR,
               file=path, line=line)
        s.outcome = Outcome(False, signal=f"{where} unreadable")
        return ids
    fam, mixed = history_family(history)
    if not history:
        s.diag("eval.history-empty", f"{where} is an empty list: there are no events", WARNING, file=path, line=line)
    if mixed:
        s.diag("eval.history-mixed", f"{where} mixes V0 and SDK events; read as {fam} events, the others kept as events of kind other",
               WARNING, file=path, line=line)
    s.metadata["history_format"] = fam
    if fam == SDK:
        state = StateView({})
        stats = StateView({"stats": {"usage_to_metrics": {"agent": metrics}}}) if isinstance(metrics, dict) else None
        conv = ingest_events(s, _ListEvents(history, path, line, where, ids), state, jsonio.MISSING, jsonio.MISSING, options,
                             None, True, state_file=path, fallback_id=s.id, metrics=stats, usage_source=f"{where} record metrics")
        if options.steps:
            conv.build_steps(s)
        s.outcome = sdk_outcome.outcome(s)
        return ids
    items = history
    if fam == V0_PAIRS:
        s.diag("eval.history-pairs", f"{where} holds [action, observation] pairs (the pre-2025 shape); read as the flat list of their events",
               INFO, file=path, line=line)
        items = [x for pair in history for x in (pair if isinstance(pair, list) else [pair])]
    events: list[Event] = []
    for k, raw in enumerate(items):
        if type(raw) is not dict:
            s.diag("eval.history-item-not-object", f"{where}[{k}] is a JSON {type(raw).__name__}, not an event object; kept as an event of kind other",
                   WARNING, file=path, line=line)
        eid = v0._id_of(raw)
        events.append(v0.to_event(raw, Ref(path, eid, line, line), eid))
        ids.append(eid)
    s.metadata["view_path"] = f"{os.path.basename(path)}:{line}" if line else os.path.basename(path)
    v0.from_events(s, events, HISTORY, options.steps)
    s.outcome = v0.stream_outcome(s)
    return ids


# ---------------------------------------------------------------- facts


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _money(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v >= 0 and v != float("inf"):
        return float(v)
    return None


def _record_model(rec: dict[str, Any]) -> str | None:
    md = _d(rec.get("metadata"))
    for llm in (md.get("llm_config"), md.get("llm")):
        m = _str(_d(llm).get("model"))
        if m:
            return m
    return _str(_d(rec.get("metrics")).get("model_name")) if _str(_d(rec.get("metrics")).get("model_name")) not in (None, "default") else None


def _run_facts(s: Session, rec: dict[str, Any], path: str) -> None:
    """``Session.run`` from the record and the events."""
    md = s.metadata
    run = s.run
    emd = _d(rec.get("metadata"))
    run.harness = NAME
    hv = md.get("harness_version") or emd.get("git_commit")
    run.harness_version = str(hv) if hv else None
    agent = md.get("agent_class") or md.get("agent_kind") or emd.get("agent_class")
    run.agent = str(agent) if agent else None
    model = md.get("model") if isinstance(md.get("model"), str) else _record_model(rec)
    if model:
        md["model"] = model
        run.models = [model]
    ds = _str(emd.get("dataset"))
    run.benchmark = ds
    iid = rec.get("instance_id")
    run.instance_id = str(iid) if isinstance(iid, (str, int)) and not isinstance(iid, bool) else None
    run.trial_id = s.id
    run.default_workspace = "/workspace"
    cost = _money(_d(rec.get("metrics")).get("accumulated_cost"))
    if cost is None:
        cost = _money(md.get("accumulated_cost"))
    run.cost_usd = cost
    stamps = [_d(e.raw).get("timestamp") for e in (s.events[:1] + s.events[-1:])]
    stamps = [t for t in stamps if isinstance(t, str)]
    if stamps:
        run.started_at, run.ended_at = stamps[0], stamps[-1]
    tr = rec.get("test_result")
    if isinstance(tr, dict) or isinstance(rec.get("resolved"), bool):
        data = {"test_result": tr if isinstance(tr, dict) else {}}
        if isinstance(rec.get("resolved"), bool):
            data["resolved"] = rec["resolved"]
        run.results.append(TrialResult(RESULT_KIND, path, data))


#: ``error`` texts that mean a cap was hit (the harness's per-instance
#: timeout, the agent's iteration or budget limit, the stuck detector).
_ERROR_BUDGET = re.compile(r"^timeout after|timed? ?out|stuck in a loop|agent got stuck|" + BUDGET_TEXT.pattern, re.I)


def error_outcome(error: str, stream: Outcome | None) -> Outcome:
    """The harness's ``error`` as the run's end signal (it outranks what the
    stream says: the harness saw the run die)."""
    claimed = bool(stream and stream.claimed_success)
    ev = [{"source": "record error", "error": error[:300]}] + (list(stream.evidence) if stream else [])
    if _ERROR_BUDGET.search(error):
        return Outcome(False, budget_exhausted=True, status="error", signal=f"harness error: {error[:200]}", claimed_success=claimed, evidence=ev)
    return Outcome(False, external_error=f"harness error: {error[:300]}", status="error", signal=f"harness error: {error[:200]}",
                   claimed_success=claimed, evidence=ev)


# ---------------------------------------------------------------- output.jsonl


def _record_session(path: str, rec_info: Record | None, member: str | None, options: ReadOptions, idx: Index) -> Session:
    s = Session(format=NAME, source_path=path, id=member, view=HISTORY)
    md = s.metadata
    md["member"] = member
    if idx.problem is not None:
        s.diagnostics.append(idx.problem)
        s.files.append(SourceFile(path, "eval-output", "skipped", note=idx.problem.code))
        s.outcome = Outcome(False, signal="the evaluation output could not be read")
        return s
    if rec_info is None:
        s.diag("eval.no-member", f"no record {member!r} in the evaluation output; it holds {len(idx.records)}", ERROR, file=path)
        s.outcome = Outcome(False, signal="no such record")
        return s
    line = rec_info.line
    md["line"] = line
    data, why = read_io.read_range(path, rec_info.offset, rec_info.length, options.max_file_bytes)
    src = SourceFile(path, "eval-record", "read", rec_info.length, note=f"line {line}")
    s.files.append(src)
    if data is None:
        s.diagnostics.append(why.diagnostic(path, options.max_file_bytes))  # type: ignore[union-attr]
        src.status = "skipped"
        s.outcome = Outcome(False, signal="the record could not be read")
        return s
    if _stat_key(path) != idx.key:
        s.diag("eval.changed", "the file changed since it was indexed; this record may be read from the wrong place", WARNING, file=path, line=line)
    try:
        value, d = jsonio.fast_loads(data), None
    except ValueError:  # not JSON, or suspicious: the careful decode says what
        value, d = jsonio.loads(data, path)
    if d is not None:
        d.line = line
        d.offset = rec_info.offset if d.offset is None else rec_info.offset + d.offset
    if value is jsonio.MISSING:
        if rec_info.problem == "truncated-line":
            s.diag("eval.truncated-line", "the final line is cut off (no newline, not valid JSON): the record cannot be read", ERROR,
                   file=path, line=line, offset=rec_info.offset)
        else:
            s.diag("eval.bad-line", f"line is not valid JSON ({d.message if d else 'undecodable'}): the record cannot be read", ERROR,
                   file=path, line=line, offset=rec_info.offset)
        src.status, src.note = "skipped", f"line {line}: not JSON"
        s.outcome = Outcome(False, signal="the record is unreadable")
        return s
    if d is not None:
        s.diagnostics.append(d)
    if not isinstance(value, dict):
        s.diag("eval.not-object", f"the line holds a JSON {type(value).__name__}, not an evaluation record; nothing to read", ERROR,
               file=path, line=line, offset=rec_info.offset)
        src.status, src.note = "skipped", f"line {line}: not an object"
        s.outcome = Outcome(False, signal="the record is unreadable")
        return s
    rec = value
    if rec_info.instance_id is None:
        s.diag("eval.no-instance-id", f"record has no usable instance_id ({rec.get('instance_id')!r}); addressed as {member}", WARNING,
               file=path, line=line)
    if rec_info.duplicate_of is not None:
        attempt = f" (attempt {rec_info.attempt})" if rec_info.attempt is not None else ""
        s.diag("eval.duplicate-instance", f"instance {rec_info.instance_id!r} also has a record at line {rec_info.duplicate_of}{attempt}; "
               f"this one is addressed as {member}", INFO if rec_info.attempt is not None else WARNING, file=path, line=line)
    for k in ("test_result", "metrics", "metadata", "instance"):
        if rec.get(k) is not None and not isinstance(rec.get(k), dict):
            s.diag("eval.bad-field", f"{k} is a JSON {type(rec[k]).__name__}, not an object; ignored", WARNING, file=path, line=line)
    if rec.get("error") is not None and not isinstance(rec.get("error"), str):
        s.diag("eval.bad-field", f"error is a JSON {type(rec['error']).__name__}, not a string; ignored", WARNING, file=path, line=line)
    md["eval"] = {k: v for k, v in rec.items() if k != "history"}
    ids = read_history(s, rec.get("history"), path, line, "history", options, _d(rec.get("metrics")) or None)
    src.event_ids = ids
    s.id = member
    md["member"] = member
    if s.task is None and isinstance(rec.get("instruction"), str) and rec["instruction"].strip():
        s.task, s.task_source = rec["instruction"], "record instruction"
    _run_facts(s, rec, path)
    err = rec.get("error")
    if isinstance(err, str) and err.strip():
        s.outcome = error_outcome(err, s.outcome)
    return s


def read(root: Path, options: ReadOptions | None = None) -> Session:
    """Read one record of the output.jsonl at ``root`` (``options.member``;
    the file's only record when it holds one)."""
    options = options or ReadOptions()
    path = os.path.abspath(os.fspath(root))
    idx = index(path, options.max_file_bytes)
    member = options.member
    if member is None and len(idx.records) == 1:
        member = idx.records[0].member
    if member is None and idx.problem is None:
        s = Session(format=NAME, source_path=path, view=HISTORY)
        if not idx.records:
            s.diag("eval.empty", "the evaluation output holds no records", WARNING, file=path)
            s.files.append(SourceFile(path, "eval-output", "read", note="no records"))
            s.outcome = Outcome(False, signal="no records")
            return s
        s.diag("eval.no-member", f"an evaluation output of {len(idx.records)} records: name one as PATH#ID", ERROR, file=path)
        s.files.append(SourceFile(path, "eval-output", "unused", note="no record named"))
        s.outcome = Outcome(False, signal="no record named")
        return s
    return _record_session(path, idx.by_member.get(member) if member is not None else None, member, options, idx)


def summarize(root: Any, max_file_bytes: int = jsonio.DEFAULT_MAX_FILE_BYTES) -> dict[str, Any]:
    """One ``trajkit ls`` row for ``FILE#MEMBER`` (a full read of that record)."""
    from ...registry import split_member

    path, member = split_member(os.fspath(root))  # ids may hold '#': the longest existing part is the file
    s = read(Path(path), ReadOptions(max_file_bytes=max_file_bytes, member=member))
    o = s.outcome
    rep = _d(_d(_d(s.metadata.get("eval")).get("test_result")).get("report"))
    status = "resolved" if rep.get("resolved") is True else "unresolved" if rep.get("resolved") is False else (
        "error" if o is not None and (o.external_error or o.budget_exhausted) else (o.status if o is not None else None))
    return {
        "id": s.id,
        "path": f"{path}#{s.id}" if s.id else path,
        "title": (s.task or "").strip().splitlines()[0][:80] if s.task and s.task.strip() else None,
        "status": status,
        "events": len(s.events),
        "model": s.run.models[0] if s.run.models else None,
        "cost": s.run.cost_usd,
        "updated": s.run.ended_at,
        "subagents": 0,
        "diagnostics": [d.to_dict() for d in s.diagnostics],
    }


def read_cloud(root: Path, options: ReadOptions | None = None) -> Session:
    """Read an OpenHands Cloud conversation export."""
    options = options or ReadOptions()
    path = os.path.abspath(os.fspath(root))
    s = Session(format=CLOUD_NAME, source_path=path, view=HISTORY)
    data, why = read_io.read_capped(path, options.max_file_bytes)
    src = SourceFile(path, "cloud-export", "read", None)
    s.files.append(src)
    if data is None:
        s.diagnostics.append(why.diagnostic(path, options.max_file_bytes))  # type: ignore[union-attr]
        src.status = "skipped"
        s.outcome = Outcome(False, signal="the export could not be read")
        return s
    src.size = len(data)
    value, d = jsonio.loads(data, path)
    if d is not None:
        s.diagnostics.append(d)
    if not isinstance(value, dict):
        if value is not jsonio.MISSING:
            s.diag("cloud.not-object", f"the export is a JSON {type(value).__name__}, not an object", ERROR, file=path)
        src.status, src.note = "skipped", "not a JSON object"
        s.outcome = Outcome(False, signal="the export is unreadable")
        return s
    conv = value.get("conversation")
    conv = conv if isinstance(conv, dict) else {}
    cid = conv.get("conversation_id") or conv.get("id")
    s.id = str(cid) if isinstance(cid, (str, int)) and not isinstance(cid, bool) else Path(path).stem
    md = s.metadata
    md["cloud"] = {k: v for k, v in value.items() if k != "events"}
    events = value.get("events")
    if "events" not in value:
        s.diag("cloud.events-missing", "the export has no events member: there are no events", WARNING, file=path)
        events = None
    elif not isinstance(events, list):
        s.diag("cloud.events-not-list", f"events is a JSON {type(events).__name__}, not a list; not read", ERROR, file=path)
        events = None
    if events is None:
        s.outcome = Outcome(False, signal="no events recorded")
    else:
        metrics = conv.get("metrics") if isinstance(conv.get("metrics"), dict) else None
        src.event_ids = read_history(s, events, path, None, "events", options, metrics)
        s.id = str(cid) if isinstance(cid, (str, int)) and not isinstance(cid, bool) else (s.id or Path(path).stem)
    run = s.run
    run.harness = CLOUD_NAME
    model = md.get("model") if isinstance(md.get("model"), str) else _str(conv.get("llm_model"))
    if model:
        md["model"] = model
        run.models = [model]
    run.trial_id = s.id
    run.default_workspace = "/workspace"
    title = _str(conv.get("title"))
    if title:
        md["title"] = title
    cost = _money(_d(conv.get("metrics")).get("accumulated_cost"))
    if cost is not None:
        run.cost_usd = cost
    for attr, key in (("started_at", "created_at"), ("ended_at", "last_updated_at"), ("ended_at", "updated_at")):
        if isinstance(conv.get(key), str) and getattr(run, attr) is None:
            setattr(run, attr, conv[key])
    stamps = [e.timestamp for e in (s.events[:1] + s.events[-1:]) if isinstance(e.timestamp, str)]
    if stamps and run.started_at is None:
        run.started_at, run.ended_at = stamps[0], stamps[-1]
    if s.task is None and isinstance(conv.get("title"), str):
        pass  # a title is not the task
    return s


def context(session: Session, at: Any = None) -> list[dict[str, Any]]:
    """What the model saw on each agent call, where the record holds it: an
    SDK history is rebuilt as the SDK reader rebuilds a conversation's (the
    same function); a V0 history does not hold the prompts (V0 keeps them
    in its completion logs only)."""
    from ...model import TrajkitError
    from ..openhands_sdk import rebuild_context

    if session.metadata.get("history_format") != SDK:
        raise TrajkitError(f"{session.source_path}#{session.id}: a V0 history does not hold what the model saw "
                           "(OpenHands V0 logs prompts in llm_completions/ only)")
    return rebuild_context(session, at=at)
