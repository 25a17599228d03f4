"""The aider format's name and tool table, shared by detection and the reader."""

from __future__ import annotations

from ...model import EDIT_OP
from ...vocab import ToolSpec, ToolTable

NAME = "aider"
AIDER_TOOLS = ToolTable.of(NAME, ToolSpec("search_replace", EDIT_OP), ToolSpec("udiff", EDIT_OP))
