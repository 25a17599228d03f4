"""The interchange specifications trajkit reads and writes, direction-neutral:
both ``formats/`` (input) and ``export/`` (output) build on them.

- :mod:`trajkit.spec.asf` — the Agent Session Format (ids, files, context, verification).
"""
