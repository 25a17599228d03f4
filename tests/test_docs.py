"""Every verb has help, every option says what it does, every verb is
documented, and ``--format`` names the formats (sqlite-utils' test_docs)."""

from __future__ import annotations

import re

import click
import pytest

from trajkit import registry
from trajkit.cli.app import main

from conftest import REPO

CTX = click.Context(main)
VERBS = main.list_commands(CTX)


def _command(name: str) -> click.Command:
    cmd = main.get_command(CTX, name)
    assert cmd is not None, name
    return cmd


def _docs() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))])


def test_the_verbs_are_all_here():
    assert {"detect", "steps", "show", "normalize", "ls", "context", "convert", "verify", "certify", "fcr", "turns", "proxy"} <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_verb_has_help(verb):
    cmd = _command(verb)
    assert (cmd.help or "").strip(), f"`trajkit {verb}` has no help text"


@pytest.mark.parametrize("verb", VERBS)
def test_every_option_has_help(verb):
    cmd = _command(verb)
    with click.Context(cmd, info_name=verb, parent=CTX) as ctx:
        for p in cmd.get_params(ctx):
            if isinstance(p, click.Option) and p.name != "help":
                # the option's own words, not just the "[default: ...]" click adds
                assert (p.help or "").strip(), f"`trajkit {verb}` option {'/'.join(p.opts)} has no help text"


@pytest.mark.parametrize("verb", VERBS)
def test_verb_is_documented(verb):
    assert re.search(rf"trajkit {re.escape(verb)}\b", _docs()), f"`trajkit {verb}` appears in neither README.md nor docs/*.md"


@pytest.mark.parametrize("verb", [v for v in VERBS if any(getattr(p, "name", None) == "format_name" for p in _command(v).params)])
def test_format_help_lists_the_known_formats(verb, cli):
    p = cli(verb, "--help", check=True)
    # click wraps long lists at hyphens too (`mini-` / `swe-agent`): undo that before looking
    text = " ".join(re.sub(r"(?<=\w)-\n\s+", "-", p.stdout).split())
    for name in registry.format_names():
        assert name in text, f"`trajkit {verb} --help` does not name the format {name}"


def test_adding_a_format_shows_the_real_plugin():
    """Every code block of docs/adding-a-format.md (but the console ones) is a
    verbatim part of examples/format-plugin, so the walk-through cannot drift
    from the plugin that tests/test_format_plugin.py installs and runs."""
    doc = (REPO / "docs" / "adding-a-format.md").read_text(encoding="utf-8")
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "examples" / "format-plugin").rglob("*")
                        if p.is_file() and p.suffix in (".py", ".toml", ".jsonl"))
    blocks = re.findall(r"```(python|toml|json)\n(.*?)```", doc, re.S)
    assert len(blocks) >= 8
    for lang, block in blocks:
        assert block in sources, f"a {lang} block of adding-a-format.md is not in the plugin:\n{block}"
    for verb in ("detect", "steps", "convert", "verify", "certify"):
        assert f"$ trajkit {verb} " in doc
