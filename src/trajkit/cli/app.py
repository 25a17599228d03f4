"""The click group of the ``trajkit`` command line (:data:`main`), whose
verbs are imported on first use (:data:`LAZY_COMMANDS`).

The console entry is :func:`trajkit.cli.run`: it hands every command line to
this group except a ``trajkit steps`` one it can parse by hand."""

from __future__ import annotations

import importlib

import click

from .. import __version__

#: verb -> "module:attribute" of a click command, imported on first use.
LAZY_COMMANDS: dict[str, str] = {
    "detect": "trajkit.cli.read:detect_cmd",
    "steps": "trajkit.cli.steps_cmd:steps_cmd",
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
