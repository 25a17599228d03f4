"""The ``trajkit`` command line: one verb per library function.

The verbs live in one module per area, listed in
:data:`trajkit.cli.app.LAZY_COMMANDS`; each module is imported only when one
of its verbs is used, so ``trajkit --help`` stays fast and ``trajkit steps``
never loads the export, certify or RL code:

- :mod:`.read` — ``detect``, ``show``, ``normalize``, ``ls``, ``context``;
- :mod:`.steps` — ``steps`` (its click declaration: :mod:`.steps_cmd`);
- :mod:`.export` — ``convert``, ``verify``;
- :mod:`.certify` — ``certify``, ``fcr``;
- :mod:`.rl` — ``turns``, ``proxy``;
- :mod:`.view` — ``view`` (HTML pages);
- :mod:`.corpus` — ``index`` (Parquet tables), ``query`` (SQL over them).

The click group is :data:`trajkit.cli.app.main`. The console entry,
:func:`run` (``trajkit`` and ``python -m trajkit``), hands it every command
line but one: a ``trajkit steps`` line that the verb's own small parser
(:func:`trajkit.cli.steps.parse`) reads exactly as click would runs without
importing click, whose import costs about as much as reading a small run.
Anything that parser is not sure of (``--help``, an unknown or repeated
option, a value click would refuse) goes to click, so usage, help and error
messages are click's own.

What the verbs share (JSON output, :func:`~._common.fail`, rich consoles and
progress bars) is in :mod:`._common`, their shared click options in
:mod:`._options`; no verb module imports from this package's ``__init__``.

Exit codes, for every verb (:data:`EXIT_OK`, :data:`EXIT_CHECK_FAILED`,
:data:`EXIT_CANNOT_RUN`): 0 done; 1 done but a check failed (a step-count
gate, a verification); 2 could not run (bad usage, nothing readable at the
path, ambiguous format).
"""

from __future__ import annotations

import sys

from ._common import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, EXIT_OK

__all__ = ["EXIT_CANNOT_RUN", "EXIT_CHECK_FAILED", "EXIT_OK", "run"]


def run(argv: list[str] | None = None) -> None:
    """The ``trajkit`` process: ``argv`` (default ``sys.argv[1:]``) through
    the click group, or a ``steps`` line through the verb's own parser when
    it is sure to read it as click does. Exits like click's standalone mode."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["steps"]:
        from .steps import run_parsed

        run_parsed(args[1:])  # returns only when click must parse this line
    from .app import main

    main(argv)
