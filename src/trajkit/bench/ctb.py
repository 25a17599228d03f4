"""CodeTraceBench: manifest rows (load one row for a trial and check it) and
the labels a row attaches to a session's steps.

A manifest is JSON (a row object or a list of rows), JSON Lines, or Parquet
(``bench_manifest.*.parquet``; needs the ``tables`` extra). A row carries
``step_count`` (the gate) and ``incorrect_stages`` (the labels); see
``shared/formats/openhands-v0.md`` §4.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import jsonio
from ..model import Session, TrajkitError
from ..reading import io as read_io


def load_manifest_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a manifest file (JSON, JSONL or Parquet)."""
    p = Path(path)
    if p.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as e:  # pragma: no cover - depends on the install
            raise TrajkitError("reading Parquet manifests needs pyarrow: pip install 'trajkit[tables]'") from e
        try:
            return pq.read_table(p).to_pylist()
        except Exception as e:
            raise TrajkitError(f"{p}: not a readable Parquet file: {e}") from e
    data, d = read_io.read_bytes(p)
    if data is None:
        raise TrajkitError(d.message if d else f"{p}: unreadable")
    value, d = jsonio.loads(data, str(p))
    if value is not jsonio.MISSING:
        rows = value if isinstance(value, list) else [value]
    else:
        diags: list = []
        rows = [ln.value for ln in read_io.iter_jsonl(data, str(p), diags) if ln.value is not jsonio.MISSING]
        if not rows:
            raise TrajkitError(f"{p}: neither JSON nor JSON Lines ({d.message if d else ''})")
    bad = [i for i, r in enumerate(rows) if not isinstance(r, dict)]
    if bad:
        raise TrajkitError(f"{p}: row {bad[0]} is not an object")
    return rows


def _matches(row: dict[str, Any], key: str) -> bool:
    for k in ("traj_id", "trial_name", "task_name", "task_slug"):
        if row.get(k) == key:
            return True
    rel = row.get("source_relpath")
    return isinstance(rel, str) and (rel == key or rel.rstrip("/").endswith("/" + key))


def load_manifest_row(path: str | Path, key: str | None = None, session: Session | None = None) -> dict[str, Any]:
    """The one manifest row for a run.

    With several rows, ``key`` (a traj_id, trial_name, task name or
    source_relpath) picks one; without it, the row whose ``trial_name`` or
    ``source_relpath`` ends in the session's trial directory name (or, for a
    session inside a container file, that names its instance).
    """
    rows = load_manifest_rows(path)
    if len(rows) == 1 and key is None:
        return _checked(rows[0], path)
    if key is None and session is not None:
        trial = Path(session.metadata.get("trial_root") or session.source_path).name
        key = trial
        # a session inside a container file (an evaluation output.jsonl#<instance>): its instance names the row
        for alt in (session.run.instance_id, session.id):
            if isinstance(alt, str) and not any(_matches(r, key) for r in rows) and any(_matches(r, alt) for r in rows):
                key = alt
    if key is None:
        raise TrajkitError(f"{path}: {len(rows)} rows; name one with --ctb-id")
    found = [r for r in rows if _matches(r, key)]
    if not found:
        raise TrajkitError(f"{path}: no row matches {key!r} ({len(rows)} rows); name one with --ctb-id")
    if len(found) > 1:
        raise TrajkitError(f"{path}: {len(found)} rows match {key!r}; name one with --ctb-id (a traj_id)")
    return _checked(found[0], path)


def _checked(row: dict[str, Any], path: Any) -> dict[str, Any]:
    sc = row.get("step_count")
    if not isinstance(sc, int) or isinstance(sc, bool) or sc < 0:
        raise TrajkitError(f"{path}: row {row.get('traj_id')!r} has no valid step_count ({sc!r})")
    return row


def apply_ctb_labels(session: Session, row: dict[str, Any]) -> None:
    """Attach a CodeTraceBench manifest row's ``incorrect``/``unuseful``
    labels to the session's steps (by step id)."""
    labels: dict[int, list[str]] = {}
    stages = row.get("incorrect_stages") or []
    if isinstance(stages, str):  # a flattened table may keep nested columns as JSON text
        try:
            stages = json.loads(stages)
        except ValueError:
            session.diag("ctb.bad-row", "incorrect_stages is text that is not JSON; no labels attached")
            stages = []
    for stage in stages if isinstance(stages, list) else []:
        if not isinstance(stage, dict):
            continue
        for key, label in (("incorrect_step_ids", "incorrect"), ("unuseful_step_ids", "unuseful")):
            for sid in stage.get(key) or []:
                if isinstance(sid, int):
                    labels.setdefault(sid, [])
                    if label not in labels[sid]:
                        labels[sid].append(label)
        for st in stage.get("steps") or []:
            if isinstance(st, dict) and isinstance(st.get("step_id"), int):
                for lab in st.get("labels") or []:
                    if isinstance(lab, str):
                        labels.setdefault(st["step_id"], [])
                        if lab not in labels[st["step_id"]]:
                            labels[st["step_id"]].append(lab)
    by_id = {s.step_id: s for s in session.steps}
    for sid, labs in sorted(labels.items()):
        step = by_id.get(sid)
        if step is None:
            session.diag(
                "ctb.label-out-of-range",
                f"manifest labels step {sid} ({', '.join(labs)}) but the run has {len(session.steps)} steps",
            )
            continue
        for lab in labs:
            if lab not in step.labels:
                step.labels.append(lab)
    session.metadata["ctb"] = {
        k: row.get(k) for k in ("traj_id", "agent", "model", "task_name", "solved", "step_count", "stage_count") if k in row
    }
    if row.get("stages") is not None:
        session.metadata["ctb"]["stages"] = row.get("stages")
