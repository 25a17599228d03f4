"""``python -m trajkit``: the trajkit command line."""

from .cli import run

run()
