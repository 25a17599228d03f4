"""Diagnostics: located, coded facts about bad or odd input.

A leaf module (it imports nothing from trajkit), so every layer, from the JSON
helpers up to the CLI, can report problems without import cycles. Every code
a module emits is documented in ``docs/diagnostics.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Severity of a :class:`Diagnostic`. ``error``: part of the input could not be
#: used (a file skipped, a view unusable). ``warning``: the input is odd but was
#: used (a gap, a cut-off action). ``info``: a fact worth knowing (which view).
ERROR = "error"
WARNING = "warning"
INFO = "info"


@dataclass(slots=True)
class Diagnostic:
    """A fact about bad or odd input: where it is, a stable code, and a message.

    ``code`` is stable and documented in ``docs/diagnostics.md``; the message
    is for people and may change. ``file`` is the path the problem is in;
    ``event_id`` the native event id when there is one; ``offset`` a byte
    offset and ``line`` a 1-based line number when the problem is inside a
    file.
    """

    code: str
    message: str
    severity: str = WARNING
    file: str | None = None
    event_id: Any = None
    offset: int | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"severity": self.severity, "code": self.code, "message": self.message}
        if self.file is not None:
            d["file"] = self.file
        if self.event_id is not None:
            d["event_id"] = self.event_id
        if self.offset is not None:
            d["offset"] = self.offset
        if self.line is not None:
            d["line"] = self.line
        return d

    def __str__(self) -> str:
        where = self.file or ""
        if self.event_id is not None:
            where += f"#{self.event_id}"
        if self.line is not None:
            where += f":{self.line}"
        elif self.offset is not None:
            where += f"@{self.offset}"
        return f"{self.severity}[{self.code}] {where + ': ' if where else ''}{self.message}"
