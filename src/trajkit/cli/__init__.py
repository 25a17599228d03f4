"""The ``trajkit`` command line: one verb per library function.

The verbs live in one module per area and are listed in
:data:`LAZY_COMMANDS`; each module is imported only when one of its verbs is
used, so ``trajkit --help`` stays fast and ``trajkit steps`` never loads the
export, certify or RL code:

- :mod:`.read` — ``detect``, ``show``, ``normalize``, ``ls``, ``context``;
- :mod:`.steps` — ``steps``;
- :mod:`.export` — ``convert``, ``verify``;
- :mod:`.certify` — ``certify``, ``fcr``;
- :mod:`.rl` — ``turns``, ``proxy``;
- :mod:`.view` — ``view`` (HTML pages);
- :mod:`.corpus` — ``index`` (Parquet tables), ``query`` (SQL over them).

What they share (options, JSON output, :func:`~._common.fail`, rich consoles
and progress bars) is in :mod:`._common`; no verb module imports from this
package's ``__init__``.

Exit codes, for every verb (:data:`EXIT_OK`, :data:`EXIT_CHECK_FAILED`,
:data:`EXIT_CANNOT_RUN`): 0 done; 1 done but a check failed (a step-count
gate, a verification); 2 could not run (bad usage, nothing readable at the
path, ambiguous format).
"""

from __future__ import annotations

import importlib

import click

from .. import __version__
from ._common import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, EXIT_OK

#: verb -> "module:attribute" of a click command, imported on first use.
LAZY_COMMANDS: dict[str, str] = {
    "detect": "trajkit.cli.read:detect_cmd",
    "steps": "trajkit.cli.steps:steps_cmd",
    "show": "trajkit.cli.read:show_cmd",
    "normalize": "trajkit.cli.read:normalize_cmd",
    "ls": "trajkit.cli.read:ls_cmd",
    "context": "trajkit.cli.read:context_cmd",
    "verify": "trajkit.cli.export:verify_cmd",
    "convert": "trajkit.cli.export:convert_cmd",
    "certify": "trajkit.cli.certify:certify_cmd",
    "fcr": "trajkit.cli.certify:fcr_cmd",
    "turns": "trajkit.cli.rl:turns_cmd",
    "proxy": "trajkit.cli.rl:proxy_cmd",
    "view": "trajkit.cli.view:view_cmd",
    "index": "trajkit.cli.corpus:index_cmd",
    "query": "trajkit.cli.corpus:query_cmd",
}

__all__ = ["EXIT_CANNOT_RUN", "EXIT_CHECK_FAILED", "EXIT_OK", "LAZY_COMMANDS", "main"]


class LazyGroup(click.Group):
    """A click group whose verbs are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in LAZY_COMMANDS:
            return cmd
        mod, _, attr = LAZY_COMMANDS[name].partition(":")
        return getattr(importlib.import_module(mod), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="trajkit")
def main() -> None:
    """Read, step through, export, certify and train from coding-agent runs."""


def run() -> None:  # pragma: no cover - console entry
    main()
