"""The click options several verbs share (``--max-file-bytes``, ``--format``,
``--tz``, ``--member``, the redaction options).

Apart from :mod:`._common` so that the helpers there import no click: a
``trajkit steps`` process that the console entry parses by hand
(:func:`trajkit.cli.run`) never loads click.
"""

from __future__ import annotations

import click


def size_option(f):
    return click.option(
        "--max-file-bytes",
        type=int,
        default=1 << 30,
        show_default=True,
        help="Files larger than this are reported, not read.",
    )(f)


class FormatOption(click.Option):
    """``--format``, whose help lists the known formats (entry-point names,
    looked up only when the help is shown; no format module is imported)."""

    def get_help_record(self, ctx: click.Context):
        from ..registry import format_names

        self.help = f"Read as this format instead of detecting it: {', '.join(format_names())}."
        return super().get_help_record(ctx)


def format_option(f):
    return click.option("--format", "format_name", cls=FormatOption, default=None, metavar="NAME",
                        help="Read as this format instead of detecting it.")(f)


def tz_option(f):
    return click.option("--tz", default=None, help="IANA zone for formats that write naive local timestamps (e.g. Europe/Paris).")(f)


def view_option(f):
    return click.option("--view", default=None, help="Use this on-disk view instead of the first available.")(f)


def member_option(f):
    return click.option("--member", "--instance", "member", default=None, metavar="ID",
                        help="In a file holding many sessions (e.g. an evaluation output.jsonl): the one to use "
                             "(the same as PATH#ID). Without it, every session in turn.")(f)


def redaction_options(f):
    """--redact-secrets, --redact-secret VALUE, --redact-home."""
    f = click.option("--redact-home", is_flag=True, help="Replace home directories (/home/<user>, /Users/<user>, /root) with ~.")(f)
    f = click.option("--redact-secret", "secrets", multiple=True, help="Replace this value with [REDACTED] everywhere (repeatable).")(f)
    f = click.option("--redact-secrets", is_flag=True,
                     help="Replace credentials found by pattern (API keys, tokens, Bearer values, private keys) "
                          "with [REDACTED:<kind>]. Without it they are only reported (secret.detected).")(f)
    return f
