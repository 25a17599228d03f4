"""OpenHands' tools: V0 actions (trial event streams) and the SDK's tools and
action kinds (conversations), as :class:`~trajkit.vocab.ToolTable` s.

V0 calls are described by their ``action`` name (``run``, ``edit`` ...) and
``args``; SDK calls by their parsed ``action.kind`` (``TerminalAction`` ...)
when the event holds an executable action, else by the tool name
(``terminal`` ...) and the call's arguments. The ``single`` argument is the
CodeTraceBench step rendering (``run`` renders as its command).
"""

from __future__ import annotations

from . import (
    CODE_OP, CONTROL_OP, FETCH_OP, FINISH_OP, MESSAGE_OP, READ_OP, SHELL_OP, SPAWN_OP, THINK_OP, WRITE_OP,
    ToolSpec, ToolTable,
)

#: OpenHands V0 actions (``action`` member of an event).
V0_TOOLS = ToolTable.of(
    "openhands",
    ToolSpec("run", SHELL_OP, single="command"),
    ToolSpec("CmdRunAction", SHELL_OP),
    ToolSpec("run_ipython", CODE_OP, single="code"),
    ToolSpec("read", READ_OP),
    ToolSpec("write", WRITE_OP),
    ToolSpec("edit", None),  # str_replace_editor: view / create / str_replace ... decide
    ToolSpec("browse", FETCH_OP),
    ToolSpec("browse_interactive", FETCH_OP),
    ToolSpec("call_tool_mcp", None, mcp="action"),
    ToolSpec("finish", FINISH_OP),
    ToolSpec("think", THINK_OP, single="thought"),
    ToolSpec("message", MESSAGE_OP),
    ToolSpec("delegate", SPAWN_OP),
    *(ToolSpec(n, CONTROL_OP) for n in ("system", "recall", "change_agent_state", "condensation", "condensation_request",
                                         "task_tracking", "null", "pause", "resume", "stop", "reject", "start", "loop_recovery")),
)

#: OpenHands SDK tools (``tool_name``) and action kinds (``action.kind``).
SDK_TOOLS = ToolTable.of(
    "openhands",
    # tool names: the step rendering, and calls without an executable action
    ToolSpec("terminal", SHELL_OP, single="command"),
    ToolSpec("think", THINK_OP, single="thought"),
    ToolSpec("finish", FINISH_OP),
    ToolSpec("file_editor", None),
    # action kinds
    ToolSpec("TerminalAction", SHELL_OP),
    ToolSpec("ExecuteBashAction", SHELL_OP),
    ToolSpec("FileEditorAction", None),
    ToolSpec("PlanningFileEditorAction", None),
    ToolSpec("MCPToolAction", None, mcp="call"),
    ToolSpec("FinishAction", FINISH_OP),
    ToolSpec("ThinkAction", THINK_OP),
    ToolSpec("MessageAction", MESSAGE_OP),
    ToolSpec("TaskTrackerAction", CONTROL_OP),
)


# ---------------------------------------------------------------- end signals
# OpenHands' stop vocabulary, shared by the V0 and SDK readers when they set
# Session.outcome (see formats/certification.md §6.1-6.3 for the mapping tables).

import re  # noqa: E402

#: Error codes / event kinds / classification causes that mean a cap was hit.
BUDGET_CODES = frozenset({"MaxIterationsReached", "MaxBudgetReached", "ConversationIterationLimit", "IterationLimitReached",
                          "LLMContextWindowExceedError", "ContextWindowExceeded", "MaxTokensReached"})
BUDGET_KINDS = frozenset({"ConversationIterationLimitEvent", "IterationLimitEvent", "MaxIterationsReachedEvent"})
BUDGET_CAUSES = frozenset({"run_limit", "quota", "budget", "iteration_limit"})
#: Classification causes that mean the run was blocked from outside.
BLOCKED_CAUSES = frozenset({"authentication", "configuration", "provider_unavailable", "network", "rate_limit", "auth", "config",
                            "transient", "internal", "cancelled"})
#: Error text that says a cap was hit.
BUDGET_TEXT = re.compile(r"maximum iteration|max(?:imum)?[ _-]?iterations|maximum budget|budget (?:has been )?(?:exceeded|reached)|iteration limit|context (?:window|length) (?:exceeded|limit)", re.I)

#: terminal-bench ``failure_mode`` values: a cap hit / an external block / nothing.
TB_BUDGET = frozenset({"agent_timeout", "context_length_exceeded", "output_length_exceeded"})
TB_BLOCKED = frozenset({"agent_installation_failed", "test_timeout", "parse_error", "unknown_agent_error", "fatal_llm_parse_error"})
