"""The CodeTracer writer: a session's steps as CodeTracer-compatible
``steps.json`` and ``task.md`` (``trajkit normalize``).

Each step keeps its rendered action and observation, the native events it came
from (path, line range and the event's JSON), thinking, parallel group, tool
type and any CodeTraceBench labels; a manifest row's stages go to
``stage_ranges.json``. Every file is written atomically, and searched for
secrets (``secret.detected``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import Ref, Session, native_record


def _ref_dict(ref: Ref | None, content: Any) -> dict[str, Any] | None:
    if ref is None:
        return None
    return {"path": ref.path, "line_start": ref.line_start, "line_end": ref.line_end, "content": content}


@dataclass
class Normalized:
    """What :func:`write_normalized` wrote, and the secrets found in it
    (``{code, kind, file, pointer/line, step}``, never the value)."""

    written: list[Path] = field(default_factory=list)
    secrets: list[dict[str, Any]] = field(default_factory=list)


def write_normalized(session: Session, out_dir: Path, redactor: Any = None) -> Normalized:
    """Write CodeTracer-compatible ``steps.json`` and ``task.md`` (plus
    ``stage_ranges.json`` when a manifest row gave stages) into ``out_dir``,
    each atomically (:mod:`trajkit.atomic`; :class:`~trajkit.atomic.OutputError`
    when it cannot be written). ``redactor`` (an
    :class:`~trajkit.export.to_asf.Redactor`) rewrites every string first;
    the outputs are then searched for secrets."""
    from ..atomic import ensure_dir, write_atomic
    from . import secrets as secret_scan

    ensure_dir(out_dir)
    events = {e.id: e for e in session.events}
    rows = []
    for s in session.steps:
        a = events.get(s.action_event_id)
        o = events.get(s.observation_event_id)
        d: dict[str, Any] = {
            "step_id": s.step_id,
            "action": s.action,
            "observation": s.observation,
            "action_ref": _ref_dict(s.action_ref, json.dumps(native_record(a), ensure_ascii=False) if a else None),
            "observation_ref": _ref_dict(s.observation_ref, json.dumps(native_record(o), ensure_ascii=False) if o else None),
        }
        if s.thinking is not None:
            d["thinking"] = s.thinking
        if s.parallel_group is not None:
            d["parallel_group"] = s.parallel_group
        d["tool_type"] = s.tool_type
        if s.labels:
            d["labels"] = s.labels
        rows.append(d)
    task = session.task or ""
    stages = (session.metadata.get("ctb") or {}).get("stages")
    if redactor is not None and redactor.active:
        rows = redactor.value(rows)
        task = redactor.text(task)
        stages = redactor.value(stages)
    out = Normalized()

    def found(p: Path, hits: list[dict[str, Any]], json_rows: list | None = None) -> None:
        for h in hits:
            rec = {"code": "secret.detected", "severity": "warning", "kind": h["kind"], "file": str(p)}
            rec.update({k: v for k, v in h.items() if k != "kind"})
            parts = str(h.get("pointer") or "").split("/")
            if json_rows is not None and len(parts) > 1 and parts[1].isdigit() and int(parts[1]) < len(json_rows):
                rec["step"] = json_rows[int(parts[1])].get("step_id")
            out.secrets.append(rec)

    # A lone surrogate (a cut emoji, a non-UTF-8 file name) is written as its
    # escape (\udcff): in JSON that decodes back to the same string.
    p = out_dir / "steps.json"
    data = (json.dumps(rows, ensure_ascii=False, indent=2) + "\n").encode("utf-8", "backslashreplace")
    write_atomic(p, data, make_parents=False)
    out.written.append(p)
    found(p, secret_scan.scan_json_bytes(data, rows), rows)
    p = out_dir / "task.md"
    data = (task + ("\n" if task and not task.endswith("\n") else "")).encode("utf-8", "backslashreplace")
    write_atomic(p, data, make_parents=False)
    out.written.append(p)
    found(p, secret_scan.scan_text_bytes(data))
    if stages:
        p = out_dir / "stage_ranges.json"
        data = (json.dumps(stages, ensure_ascii=False, indent=2) + "\n").encode("utf-8", "backslashreplace")
        write_atomic(p, data, make_parents=False)
        out.written.append(p)
        found(p, secret_scan.scan_json_bytes(data, stages))
    return out
