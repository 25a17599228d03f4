"""SWE-agent trajectories: one ``<instance id>.traj`` JSON document per run
(format name ``swe-agent``; see ``shared/formats/swe-agent.md``).

The document holds ``trajectory[]`` (the steps: ``action``, ``observation``,
``response``, ``thought``, ``state``, and in 1.x ``execution_time``,
``query``, ``extra_info``), ``history[]`` (the chat messages the model saw,
system prompt and demonstrations included), ``info`` (``exit_status``,
``submission``, ``model_stats``, ...), ``environment`` and, in 1.x,
``replay_config``. A RetryAgent file holds ``attempts[]`` as well; the chosen
attempt (``info.best_attempt_idx``) is read, the others ride along.

Events: the history items before the first assistant message (system prompt,
demonstrations, the task) as system / message events; per ``trajectory[]``
entry an action event (``raw``: the entry; the thought as reasoning, the raw
response as text, one tool call) and an observation event (``raw``: the
entry's ``observation`` member); the later history items as events of kind
``other`` (they repeat the trajectory in the model's wording, and
:func:`context` reads them); ``info`` as a state event carrying the
submission patch as the run's :class:`~trajkit.model.FileEdit`.

Steps follow agent-eval's ``sweagent_traj`` rule (the CodeTraceBench
convention): one step per ``trajectory[]`` entry, blank entries included;
the action is the entry's raw ``action`` (its JSON literal when blank), the
observation passed through, the thought as thinking. A file holding only
``history`` (a demonstration) has no trajectory: its steps are rebuilt from
the assistant ``tool_calls`` and their ``tool`` results, and
``metadata["steps_source"]`` says so (the reference rule refuses such files).

Diagnostic codes (see ``docs/diagnostics.md``): ``swe-agent.not-an-object``,
``swe-agent.no-traj``, ``swe-agent.several-trajs``, ``swe-agent.bad-trajectory``,
``swe-agent.bad-history``, ``swe-agent.bad-record``,
``swe-agent.bad-observation``, ``swe-agent.history-only``,
``swe-agent.retry-attempt``, ``swe-agent.bad-info``, ``swe-agent.no-exit-status``,
plus the file and JSON codes of :mod:`trajkit.reading.io`.

Detection imports this module for every command, so it holds only the
:class:`~trajkit.registry.Format`; its sniff and the run-file walk
(:func:`.detect.files_ending`, shared with mini-swe-agent) are in the light
:mod:`.detect`, and the reader (:mod:`.reader`) is imported on the first
read (``registry.lazy``; ``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.swe_agent import SWE_AGENT_TOOLS
from .detect import HARBOR_COPY, NAME, SUFFIX, files_ending, find_sessions, sniff

FIXTURES = Path(__file__).parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="SWE-agent trajectories (.traj: classic text commands, function calling, history-only demonstrations, RetryAgent)",
    fingerprints=("*.traj", HARBOR_COPY, "agent/" + HARBOR_COPY),
    priority=40,
    sniff=sniff,
    read=lazy("trajkit.formats.swe_agent.reader:read"),
    find_sessions=find_sessions,
    summarize=lazy("trajkit.formats.swe_agent.reader:summarize"),
    context=lazy("trajkit.formats.swe_agent.reader:context"),
    tools=SWE_AGENT_TOOLS,
    examples=tuple(str(FIXTURES / n) for n in (
        "swe-agent__test-repo-i1.traj",
        "6e44b9__sweagenttestrepo-1c2844.traj",
        "function_calling_simple.traj",
        "networking_1.traj",
    )),
)


__all__ = ["FORMAT", "NAME", "SUFFIX", "HARBOR_COPY", "files_ending", "find_sessions", "sniff"]
