"""The CodeTracer writer: a session's steps as CodeTracer-compatible
``steps.json`` and ``task.md`` (``trajkit normalize``).

Each step keeps its rendered action and observation, the native events it came
from (path, line range and the event's JSON), thinking, parallel group, tool
type and any CodeTraceBench labels; a manifest row's stages go to
``stage_ranges.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..model import Ref, Session, native_record


def _ref_dict(ref: Ref | None, content: Any) -> dict[str, Any] | None:
    if ref is None:
        return None
    return {"path": ref.path, "line_start": ref.line_start, "line_end": ref.line_end, "content": content}


def write_normalized(session: Session, out_dir: Path) -> list[Path]:
    """Write CodeTracer-compatible ``steps.json`` and ``task.md`` (plus
    ``stage_ranges.json`` when a manifest row gave stages) into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
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
    written = []
    p = out_dir / "steps.json"
    p.write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    written.append(p)
    p = out_dir / "task.md"
    p.write_text((session.task or "") + ("\n" if session.task and not session.task.endswith("\n") else ""), encoding="utf-8")
    written.append(p)
    stages = (session.metadata.get("ctb") or {}).get("stages")
    if stages:
        p = out_dir / "stage_ranges.json"
        p.write_text(json.dumps(stages, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        written.append(p)
    return written
