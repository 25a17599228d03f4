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
CLI's ``steps`` verb and the gate use the rest (CodeTraceBench labels live in
:mod:`trajkit.bench.ctb`, the CodeTracer writer in :mod:`trajkit.export.codetracer`).
"""

from __future__ import annotations

from typing import Any, Iterable

from .jsonio import dumps_python
from .model import Session, StepCountMismatch
from .vocab.openhands import V0_TOOLS

#: ``json.dumps(obj, ensure_ascii=False)``, byte for byte (one C encoder, built once).
_dumps = dumps_python

#: Action names whose rendering is a single argument rather than ``name(args)``.
#: Maps the action name to the argument that is the rendering. The default is
#: OpenHands V0's (the convention CodeTraceBench was written against); other
#: harnesses pass their tool table's (:meth:`trajkit.vocab.ToolTable.single_argument`).
SINGLE_ARGUMENT_ACTIONS = V0_TOOLS.single_argument()


def blank_safe(text: str) -> str:
    """``text``, or its JSON string literal when it is blank after stripping."""
    if text.strip():
        return text
    return _dumps(text)


def render_call(name: str, args: Any) -> str:
    """``<name>(<args JSON without thought>)``, JSON as ``json.dumps(..., ensure_ascii=False)``."""
    try:
        body = _dumps(args, "thought")
    except (TypeError, ValueError):
        if isinstance(args, dict) and "thought" in args:
            args = {k: v for k, v in args.items() if k != "thought"}
        body = _dumps(str(args))
    return f"{name}({body})"


def render_action(name: str, args: Any, single: dict[str, str] | None = None) -> str:
    """The step text for action ``name`` with ``args`` (see module docstring).

    ``single`` overrides which actions render as one argument (the SDK's
    ``terminal`` tool renders as its ``command``, for instance).
    """
    key = (SINGLE_ARGUMENT_ACTIONS if single is None else single).get(name)
    if key is not None and isinstance(args, dict):
        value = args.get(key)
        if isinstance(value, str):
            return value if value.strip() else _dumps(value)
        if value is None:
            return '""'  # blank_safe("")
        return blank_safe(_dumps(value))
    # never blank: the text holds "("
    return render_call(name, args if args is not None else {})


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
