"""Presenting a session to people.

- :mod:`trajkit.view.transcript`: the presentation tree of a session (header,
  steps, events, sub-agents, diagnostics); no I/O, no rendering library;
- :mod:`trajkit.view.terminal`: the rich back-end that draws it
  (``trajkit show``, the ``trajkit steps`` table);
- :mod:`trajkit.view.html`: the HTML back-end (``trajkit view``: one static,
  self-contained page per run, and an index over many).
"""
