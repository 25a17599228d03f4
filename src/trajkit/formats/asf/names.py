"""The asf format's name and tool table, shared by detection and the reader."""

from __future__ import annotations

from ...vocab import ToolTable

NAME = "asf"
ASF_TOOLS = ToolTable.of(NAME)
