"""Steps at benchmark granularity: which actions count, and how they render.

The convention is CodeTraceBench's (see ``shared/formats/openhands-v0.md``
§4.2-4.3): one step per action event that some observation answers (the first
answer wins), every action type counted, and each action rendered so that the
text is byte-identical to the CodeTraceBench-normalized corpus:

- a shell command renders as the command, IPython as the code, a think action
  as the thought;
- any other action renders as ``<name>(<args JSON>)`` with ``thought`` left
  out of the args and the JSON written exactly as Python's
  ``json.dumps(args, ensure_ascii=False)`` writes it;
- text that is blank after stripping renders as its JSON string literal
  (``""``, ``"\\n"``), so no step has a blank action.

Readers build :class:`~trajkit.model.Step` lists with these functions; the
CLI's ``steps``/``normalize`` verbs and the gate use the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from .jsonio import dumps_python
from .model import ReadOptions, Ref, Session, StepCountMismatch

#: ``json.dumps(obj, ensure_ascii=False)``, byte for byte (one C encoder, built once).
_dumps = dumps_python

#: Action names whose rendering is a single argument rather than ``name(args)``.
#: Maps the action name to the argument that is the rendering.
SINGLE_ARGUMENT_ACTIONS = {
    "run": "command",
    "run_ipython": "code",
    "think": "thought",
}


def blank_safe(text: str) -> str:
    """``text``, or its JSON string literal when it is blank after stripping."""
    if text.strip():
        return text
    return _dumps(text)


def render_call(name: str, args: Any) -> str:
    """``<name>(<args JSON without thought>)``, JSON as ``json.dumps(..., ensure_ascii=False)``."""
    if isinstance(args, dict) and "thought" in args:
        args = {k: v for k, v in args.items() if k != "thought"}
    try:
        body = _dumps(args)
    except (TypeError, ValueError):
        body = _dumps(str(args))
    return f"{name}({body})"


def render_action(name: str, args: Any, single: dict[str, str] | None = None) -> str:
    """The step text for action ``name`` with ``args`` (see module docstring).

    ``single`` overrides which actions render as one argument (the SDK's
    ``terminal`` tool renders as its ``command``, for instance).
    """
    table = SINGLE_ARGUMENT_ACTIONS if single is None else single
    key = table.get(name)
    if key is not None and isinstance(args, dict):
        value = args.get(key)
        if isinstance(value, str):
            return blank_safe(value)
        if value is None:
            return blank_safe("")
        return blank_safe(_dumps(value))
    return blank_safe(render_call(name, args if args is not None else {}))


def thinking_of(name: str, args: Any, think_actions: Iterable[str] = ("think",)) -> str | None:
    """The action's thought when non-blank, except on think actions (whose
    thought is already the action text)."""
    if name in think_actions or not isinstance(args, dict):
        return None
    t = args.get("thought")
    if isinstance(t, str) and t.strip():
        return t
    return None


def check_step_count(session: Session, expected: int) -> None:
    """Raise :class:`StepCountMismatch` unless the session has ``expected`` steps."""
    if len(session.steps) != expected:
        raise StepCountMismatch(expected, len(session.steps), session.view, session.source_path)


def steps_per_view(root: str, format_name: str, options: ReadOptions | None = None) -> dict[str, Any]:
    """The step count under every on-disk view the run has.

    Formats with several views expose ``views_present(root)``; each present
    view is read on its own. Formats with one view report just it.
    """
    from .registry import get_format
    import importlib

    fmt = get_format(format_name)
    options = options or ReadOptions()
    mod = importlib.import_module(fmt.read.__module__)
    views_present = getattr(mod, "views_present", None)
    out: dict[str, Any] = {}
    names = views_present(Path(root)) if views_present else [None]
    for name in names:
        opts = ReadOptions(max_file_bytes=options.max_file_bytes, view=name, tz=options.tz)
        s = fmt.read(Path(root), opts)
        out[s.view or name or "default"] = {
            "step_count": len(s.steps),
            "event_count": len(s.events),
            "path": s.metadata.get("view_path"),
            "actions_without_observation": s.metadata.get("actions_without_observation", []),
        }
    return out


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
            "action_ref": _ref_dict(s.action_ref, json.dumps(a.raw, ensure_ascii=False) if a else None),
            "observation_ref": _ref_dict(s.observation_ref, json.dumps(o.raw, ensure_ascii=False) if o else None),
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
