"""mini-swe-agent trajectories: one ``<name>.traj.json`` file per run
(format name ``mini-swe-agent``; see ``shared/formats/mini-swe-agent.md``).

Three shapes: the old bare list of chat messages; the ``mini-swe-agent-1``
dict (``{info: {exit_status, submission, model_stats, mini_version, config},
messages, trajectory_format, instance_id}``, assistant messages carrying the
raw provider response in ``extra.response``); and ``mini-swe-agent-1.1``
(v2: messages as the model returned them plus ``extra``: tool calling with
``role: "tool"`` results, text mode with ```` ```mswea_bash_command ````
fences, or Responses-API turns ``{object: "response", output: [...]}`` with
``function_call_output`` items; per-message ``extra.cost``; a final empty user
message whose ``extra`` holds ``exit_status`` and ``submission``). Unknown
``mini-swe-agent-1.x`` minors read as 1.1.

Every message is one event: the system prompt, the task, assistant messages
(actions when they run a command: a fenced block in text mode, native tool
calls in tool mode), observations (``<returncode>`` messages, tool results)
and the other user messages (format errors, the submission's output).
``info`` is a state event carrying the submission patch as the run's
:class:`~trajkit.model.FileEdit`.

Steps follow CodeTracer's ``miniswe`` rule (the CodeTraceBench convention),
extended to both fences: every assistant message whose string content
contains ```` ```bash ```` or ```` ```mswea_bash_command ```` is a step, in
message order; the action is the first such block's body, stripped (the
whole content, stripped, when no block parses); the observation is the
first later user message whose content contains ``<returncode>`` (none: the
submission turn, an empty observation). Tool-calling runs have no fences: one
step per native tool call, answered by the result with its call id.
``metadata["step_rule"]`` says which rule gave the steps.

A SWE-bench ``report.json`` beside the run (or in the experiment's
``logs/<instance id>/``) is the harness's test verdict
(``session.run.results``, kind ``swe-bench``).

Diagnostic codes (see ``docs/diagnostics.md``): ``mini-swe-agent.not-a-trajectory``,
``mini-swe-agent.no-traj``, ``mini-swe-agent.several-trajs``,
``mini-swe-agent.bad-messages``, ``mini-swe-agent.bad-record``,
``mini-swe-agent.bad-info``, ``mini-swe-agent.unknown-version``, plus the file
and JSON codes of :mod:`trajkit.reading.io`.

Detection imports this module for every command, so it holds only the
:class:`~trajkit.registry.Format` (its sniff is in the light :mod:`.detect`);
the reader (:mod:`.reader`) is imported on the first read
(``registry.lazy``; ``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from ...vocab.swe_agent import MINI_SWE_AGENT_TOOLS
from .detect import NAME, SUFFIX, find_sessions, sniff

FIXTURES = Path(__file__).parent.parent / "fixtures" / NAME

FORMAT = Format(
    name=NAME,
    description="mini-swe-agent trajectories (.traj.json: message list, mini-swe-agent-1 and -1.1 / v2 tool calling)",
    fingerprints=("*.traj.json", "agent-logs/mini.traj.json", "results.json", "sessions/*", "panes/*"),
    priority=40,
    sniff=sniff,
    read=lazy("trajkit.formats.mini_swe_agent.reader:read"),
    find_sessions=find_sessions,
    summarize=lazy("trajkit.formats.mini_swe_agent.reader:summarize"),
    context=lazy("trajkit.formats.mini_swe_agent.reader:context"),
    # ``mini`` saves its last run as last_mini_run.traj.json in its global config folder
    homes=("${MSWEA_GLOBAL_CONFIG_DIR:-~/.config/mini-swe-agent}",),
    tools=MINI_SWE_AGENT_TOOLS,
    examples=tuple(str(FIXTURES / n) for n in (
        "github_issue.traj.json",
        "local.traj.json",
        "swebench/trajs/django__django-11163/django__django-11163.traj.json",
    )),
)


__all__ = ["FORMAT", "NAME", "SUFFIX", "find_sessions", "sniff"]
