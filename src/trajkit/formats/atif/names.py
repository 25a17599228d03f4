"""The atif format's name and tool table, shared by detection and the reader."""

from __future__ import annotations

from ...vocab import ToolTable

NAME = "atif"
#: Tool names are the producer's: the generic table classifies them by name and arguments.
ATIF_TOOLS = ToolTable.of(NAME)
