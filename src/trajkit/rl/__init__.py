"""Reinforcement-learning data from agent runs.

- :mod:`trajkit.rl.proxy`: the capture proxy that records rollout traces
  (``trajkit proxy``; needs the ``proxy`` extra);
- :mod:`trajkit.rl.calls`: captured model calls, normalized (``ModelCall``,
  ``parse_call``), what turns are made from;
- :mod:`trajkit.rl.turns`: training turns derived from a rollout trace
  (``trajkit turns``), with TRL ``rollout_func`` output and ``datasets`` rows;
- :mod:`trajkit.rl.tokenize`: tokenizers from local files and prompt
  rendering (needs the ``rl`` extra, imported lazily).

The trace format itself is :mod:`trajkit.formats.rollout_trace`; nothing in
``rl`` imports ``trajkit.formats`` (turns read a session through the registry).
"""
