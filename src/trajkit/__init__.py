"""trajkit: read coding-agent runs from any harness, step through them at
benchmark granularity, export them to ASF and ATIF, certify their outcome and
derive training data.

The library mirrors the CLI: :func:`read` (``trajkit steps/show``),
:func:`detect` (``trajkit detect``).
"""

__version__ = "0.1.0"

from .diagnostics import Diagnostic  # noqa: E402
from .model import (  # noqa: E402
    Event,
    ReadOptions,
    Ref,
    Session,
    SourceFile,
    Step,
    StepCountMismatch,
    ToolCall,
    TrajkitError,
    DetectionError,
    Turn,
)


def read(path, format=None, options=None):
    """The run at ``path`` as a :class:`Session` (format detected unless named)."""
    from .registry import read as _read

    return _read(path, format=format, options=options)


def read_all(path, format=None, options=None):
    """Every session at ``path``: each one a container file holds
    (``output.jsonl``, ``opencode.db``), or the one run (an iterator)."""
    from .registry import read_all as _read_all

    return _read_all(path, format=format, options=options)


def detect(path):
    """Which format the run at ``path`` holds, and why (a :class:`~trajkit.registry.Detection`)."""
    from .registry import detect as _detect

    return _detect(path)


__all__ = [
    "Diagnostic", "Event", "ReadOptions", "Ref", "Session", "SourceFile", "Step", "StepCountMismatch",
    "ToolCall", "TrajkitError", "DetectionError", "Turn", "read", "read_all", "detect", "__version__",
]
