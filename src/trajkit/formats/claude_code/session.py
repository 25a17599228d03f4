"""Reading one Claude Code session (a transcript with its sub-agents, a
stream-json log, or a Harbor trial holding one), and its ``trajkit ls``
row. The rules are in :mod:`.reader`; where files are in :mod:`.layout`;
listing sessions in :mod:`.finding`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...diagnostics import ERROR, INFO, WARNING
from ...jsonio import MISSING
from ...model import ReadOptions, Session, SourceFile
from ...reading import fs
from ...reading import tree as read_tree
from ...reading.builder import SessionBuilder
from ...reading.listing import session_row
from ...reading.probe import Probe
from ...vocab.trials import find_results, find_verifier_dir, trial_cost, trial_outcome
from . import layout
from .reader import (
    NAME,
    build_session,
    build_steps,
    fill_run,
    link_stream_children,
    outcome_of,
    read_rows,
    read_subagents,
    split_stream_children,
)

#: Files of a Harbor trial folder around a stream-json log, and their roles.
TRIAL_FILES = {"result.json": "results", "config.json": "config"}


def _companion_files(main: Path, b: SessionBuilder) -> None:
    """Account for the companion folder's files no rule reads (workflow
    scripts and run records, tool-result spills...)."""
    comp = main.with_suffix("")
    if not b.probe.is_dir(comp):
        return
    for dirpath, dirnames, filenames in read_tree.walk(comp):
        dirnames.sort()
        for n in sorted(filenames):
            p = Path(dirpath) / n
            st = b.probe.stat(p)
            size = st.st_size if st is not None else None
            if str(p) in {sf.path for sf in b.session.files}:
                continue
            if p.parent.name == "scripts":
                b.ignored(p, "workflow-script", "the script Claude Code saved for a workflow run (recorded data, not run)", size)
            elif p.parent.name == "workflows" and n.endswith(".json"):
                b.ignored(p, "workflow-run", "the workflow run's record; its agents are read from subagents/workflows/", size)
            else:
                b.unused(p, "other", "a companion file this reader does not read", size)


def read(root: Path, options: ReadOptions) -> Session:
    """The session at ``root``: a transcript (with its sub-agents), a
    stream-json log, or a Harbor trial folder holding one."""
    root = Path(root)
    probe = Probe()
    trial: Path | None = None
    target = root
    if probe.is_dir(root):
        found, why = layout.session_root(root, probe)
        if found is None:
            b = SessionBuilder(NAME, root, options, probe=probe)
            b.diag("claude-code.no-session", f"no Claude Code session here: {why}", ERROR)
            return b.finish()
        if found == root:
            trial = root
            target = root / "agent" / layout.STREAM_NAME
        else:
            target = found
    b = SessionBuilder(NAME, trial or target, options, probe=probe)
    s = b.session
    if not probe.exists(target):
        b.diag("claude-code.no-session", "no such file", ERROR, file=target)
        return b.finish()
    kind, why = layout.file_kind(target, probe)
    if kind is None:
        kind = layout.STREAM if target.name == layout.STREAM_NAME else layout.TRANSCRIPT
        st = probe.stat(target)
        if st is not None and st.st_size > 0:
            b.diag("claude-code.not-recognised", f"the file does not look like a Claude Code record ({why}); read as a {kind}", WARNING, file=target)
    s.view = kind
    # the message history is kept, the system prompt and tool declarations are
    # not: ASF must not claim request hashes that could be checked
    s.metadata["context_rebuildable"] = False
    rows = read_rows(b, target)
    r = build_session(s, [rows], kind, agent_file=bool(layout.AGENT_FILE.match(target.name)))
    fill_run(s, r)
    if s.id is None:
        s.id = target.stem if kind == layout.TRANSCRIPT else (target.parent.parent.name if trial else target.stem)
    if kind == layout.TRANSCRIPT:
        sids = [e.raw.get("sessionId") for e in s.events[:50] if isinstance(e.raw, dict) and isinstance(e.raw.get("sessionId"), str)]
        if layout.AGENT_FILE.match(target.name):
            s.id = layout.AGENT_FILE.match(target.name).group(1)  # type: ignore[union-attr]
            s.metadata["agent_id"] = s.id
            if sids:
                s.metadata["parent_session_id"] = sids[0]
        elif sids and sids[0] != target.stem and not layout._UUID.match(target.stem):
            s.metadata["session_id_in_rows"] = sids[0]
    children = split_stream_children(s) if kind == layout.STREAM else {}
    if children and rows.sf is not None:
        # the log's rows of a sub-agent are that sub-agent's (the loss report checks each session's own)
        for c in children.values():
            ids = {e.id for e in c.events}
            rows.sf.event_ids[:] = [i for i in rows.sf.event_ids if i not in ids]
            c.files.append(SourceFile(rows.sf.path, "events", "read", rows.sf.size, [e.id for e in c.events],
                                      note="the rows this sub-agent wrote (parent_tool_use_id)"))
    if options.steps:
        s.steps = build_steps(s)
    if children:
        link_stream_children(s, children, options)
    if kind == layout.TRANSCRIPT and not layout.AGENT_FILE.match(target.name):
        read_subagents(s, target, b, options, 0)
        _companion_files(target, b)
    s.outcome = outcome_of(s, r)
    if trial is not None:
        _trial(trial, b, s)
    else:
        s.run.verifier_dir = find_verifier_dir(str(target.parent))
    if not rows.rows and rows.sf is not None:
        s.diag("claude-code.empty-session", "the session file holds no rows", INFO, file=target)
    return b.finish()


def _trial(trial: Path, b: SessionBuilder, s: Session) -> None:
    """A Harbor trial folder: its ``result.json`` speaks first on how the run ended."""
    probe = b.probe
    paths: dict[str, str] = {}
    for name, role in TRIAL_FILES.items():
        p = trial / name
        if probe.is_file(p):
            value, _sf = b.read_json(p, role)
            if value is not MISSING:
                s.metadata[role] = value
                paths[role] = str(p)
    results = find_results({k: s.metadata[k] for k in paths}, paths)
    s.run.results = results
    cost = trial_cost(results)
    if s.run.cost_usd is None and cost is not None:
        s.run.cost_usd = cost
    s.run.verifier_dir = find_verifier_dir(str(trial))
    s.run.trial_id = trial.name
    if s.run.verifier_dir:
        b.account(s.run.verifier_dir, "verifier", "unused", note="the verifier's output (certify reads it)")
    for name, role, note in (("exception.txt", "exception", "the harness's exception text (result.json holds it too)"),
                             ("trial.log", "log", "the harness's log")):
        if probe.is_file(trial / name):
            st = probe.stat(trial / name)
            b.ignored(trial / name, role, note, st.st_size if st is not None else None)
    traj = trial / "agent" / "trajectory.json"
    if probe.is_file(traj):
        st = probe.stat(traj)
        b.unused(traj, "derived", "Harbor's ATIF conversion of this log (one agent step per line)", st.st_size if st is not None else None)
    evidence: list[dict[str, Any]] = []
    claimed = bool(s.outcome and s.outcome.claimed_success)
    o = trial_outcome(results, claimed, evidence)
    if o is not None:
        s.outcome = o


# ---------------------------------------------------------------- ls


def summarize(root: str | os.PathLike, max_file_bytes: int = 1 << 30) -> dict[str, Any]:
    """One ``trajkit ls`` row: id, first prompt (or title), model, steps,
    tokens, cost, last update, path."""
    s = read(Path(root), ReadOptions(max_file_bytes=max_file_bytes))
    title = s.metadata.get("title") or (s.task or "").strip().splitlines()[0][:120] if (s.metadata.get("title") or s.task) else None
    updated = s.run.ended_at
    if updated is None:
        try:
            from datetime import datetime, timezone

            updated = datetime.fromtimestamp(fs.stat(root).st_mtime, tz=timezone.utc).isoformat().replace("+00:00", "Z")
        except OSError:
            updated = None
    return session_row(s, title=title, updated=updated)
