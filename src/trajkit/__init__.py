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

# The reader toolkit package ``trajkit.read`` shares its name with the
# library's ``read()`` below. Importing the package binds ``trajkit.read`` to
# it, so it is imported first (it is light: its ``__init__`` imports nothing)
# and the function then takes the name; later ``trajkit.read.*`` imports find
# the package in ``sys.modules`` and leave the function alone.
from . import read as _read_toolkit  # noqa: E402,F401


def read(path, format=None, options=None):
    """The run at ``path`` as a :class:`Session` (format detected unless named)."""
    from .registry import read as _read

    return _read(path, format=format, options=options)


def detect(path):
    """Which format the run at ``path`` holds, and why (a :class:`~trajkit.registry.Detection`)."""
    from .registry import detect as _detect

    return _detect(path)


__all__ = [
    "Diagnostic", "Event", "ReadOptions", "Ref", "Session", "SourceFile", "Step", "StepCountMismatch",
    "ToolCall", "TrajkitError", "DetectionError", "Turn", "read", "detect", "__version__",
]
