"""Terminus and Terminus-2 episode folders of terminal-bench trials (format
name ``terminus2``).

Format notes: ``shared/formats/terminus2.md``. Terminus-2 logs one folder
per LLM turn, ``agent-logs/episode-<N>/``, holding ``prompt.txt`` (the user
message of that turn), ``response.txt`` (the model's raw answer: JSON, often
with prose or a code fence around it, or the XML variant) and an optional
``debug.json`` (LiteLLM's logger dictionary for the call: the request, and
sometimes the response with its usage). Terminus (1) writes ``response.json``
(``state_analysis``, ``explanation``, ``commands[{keystrokes, is_blocking,
timeout_sec}]``, ``is_task_complete``) instead. Around the folders sits a
terminal-bench trial: ``results.json`` (the harness's verdict),
``commands.txt``, ``panes/`` and ``sessions/`` recordings.

Events, per episode in numeric order: the prompt (a user message for the
first episode; the observation of the previous episode's last command when
that episode had commands; else a harness message), the response (an
assistant action with one ``bash_command`` call per command, plus a
``mark_task_complete`` call when it says the task is complete; an assistant
message when it has no commands) and ``debug.json`` (an event of kind
``other``). Tool calls come from Terminus's own lenient reading of the
response (the outermost JSON object inside the text, or the XML variant), so
exports keep every command the harness executed.

Steps follow agent-eval's ``terminus2_commands`` rule (CodeTraceBench's
Terminus-2 rows): one step per ``commands[]`` entry of a response that
parses *strictly* as one JSON object, episodes in numeric order; blank
keystrokes count; the observation goes on the episode's last command (the
text after the first ``New Terminal Output:`` of the next episode's prompt,
else that whole prompt, stripped); ``analysis``/``plan`` become the first
step's thinking. Where the strict rule finds no commands but Terminus's
lenient reading does, a ``terminus2.commands-not-counted`` diagnostic (and
``metadata["uncounted_commands"]``) says so: they are not extra steps.

Diagnostic codes (see ``docs/diagnostics.md``): ``terminus2.not-a-trial``,
``terminus2.no-episodes``, ``terminus2.episode-gap``,
``terminus2.no-response``, ``terminus2.no-prompt``,
``terminus2.response-not-json``, ``terminus2.response-not-object``,
``terminus2.commands-not-list``, ``terminus2.commands-not-counted``,
``terminus2.bad-command``, ``terminus2.not-executed``,
``terminus2.output-length-error``, ``terminus2.not-utf8``,
``terminus2.unknown-file``.

Detection imports this module for every command, so it holds only the
:class:`~trajkit.registry.Format` (its tool table and sniff, with
:func:`.detect.locate`, are in the light :mod:`.detect`); the reader
(:mod:`.reader`) is imported on the first read (``registry.lazy``;
``tests/test_light_formats.py`` checks it).
"""

from __future__ import annotations

from pathlib import Path

from ...registry import Format, lazy
from .detect import NAME, TERMINUS_TOOLS, locate, sniff

FORMAT = Format(
    name=NAME,
    description="Terminus / Terminus-2 episode folders (agent-logs/episode-<N>/) of terminal-bench trials",
    fingerprints=(
        "agent-logs/episode-*/response.txt",
        "agent-logs/episode-*/response.json",
        "episode-*/response.txt",
        "episode-*/response.json",
        "response.txt",
        "response.json",
        "prompt.txt",
        "debug.json",
        "panes/*",
        "sessions/*",
    ),
    priority=45,
    sniff=sniff,
    read=lazy("trajkit.formats.terminus2.reader:read"),
    context=lazy("trajkit.formats.terminus2.reader:context"),
    tools=TERMINUS_TOOLS,
    examples=tuple(
        str(Path(__file__).resolve().parent.parent / "fixtures" / NAME / sub / trial)
        for sub, trial in (
            ("basic", "hello-world.1-of-1.2025-09-02__10-00-00"),
            ("mixed", "fix-permissions.1-of-1.2025-09-02__10-00-00"),
            ("terminus1", "count-lines.1-of-1.2025-09-02__10-00-00"),
        )
    ),
)


__all__ = ["FORMAT", "NAME", "TERMINUS_TOOLS", "locate", "sniff"]
