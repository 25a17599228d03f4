"""Estimated model-call costs from the price table shipped with trajkit.

Many records carry token counts but no cost (Claude Code, Codex, Gemini CLI,
ATIF files without ``cost_usd``). :func:`estimate_session` fills the cost of
every model call whose :class:`~trajkit.model.Usage` has a ``model`` and token
counts but no ``cost``, and flags it ``cost_estimated``; it runs once, in
:func:`trajkit.registry.read`, after the reader, so every format benefits and
no reader prices anything itself. A recorded cost is never replaced.

The table (``pricing.json`` beside this module) records where its prices come
from (``source``) and when they were taken (``taken``); rates are USD per
million tokens. :func:`price_of` finds a model by its name as recorded: exact,
then lower-cased, then without a provider prefix (``openai/gpt-4o``,
``anthropic/claude-...``), then without a date suffix (``-20250929``,
``-2024-08-06``, ``@20250929``).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from .model import Session, Usage

TABLE = Path(__file__).resolve().parent / "pricing.json"
_DATE = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2})$")


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The price table: ``{"source", "taken", "unit", "note", "models": {name: rates}}``."""
    with open(TABLE, encoding="utf-8") as f:
        return json.load(f)


def _candidates(model: str) -> list[str]:
    out = [model, model.lower()]
    low = model.lower()
    while "/" in low:
        low = low.split("/", 1)[1]
        out.append(low)
    base = _DATE.sub("", low)
    if base != low:
        out.append(base)
    return out


@functools.lru_cache(maxsize=512)
def price_of(model: str) -> tuple[str, dict[str, float]] | None:
    """``(table name, rates)`` for a model as a record names it, or None."""
    models = table()["models"]
    for name in _candidates(model):
        if name in models:
            return name, models[name]
    return None


def estimate(u: Usage) -> float | None:
    """The cost of one model call in USD from the table, or None when the
    call's model is not in it or no token counts are known.

    ``u.input`` counts every prompt token (cached and cache-written ones
    included); the uncached rest is priced at the input rate, ``cache_read``
    at the cache-read rate and ``cache_write`` at the cache-write rate (each
    falling back to the input rate), ``output`` at the output rate.
    """
    if not u.model or (u.input is None and u.output is None):
        return None
    found = price_of(u.model)
    if found is None:
        return None
    rates = found[1]
    per = 1e-6
    cache_read = u.cache_read or 0
    cache_write = u.cache_write or 0
    fresh = max((u.input or 0) - cache_read - cache_write, 0)
    cost = fresh * rates["input"]
    cost += cache_read * rates.get("cache_read", rates["input"])
    cost += cache_write * rates.get("cache_write", rates["input"])
    cost += (u.output or 0) * rates["output"]
    return round(cost * per, 12)


def _fill(u: Usage | None) -> None:
    if u is None or u.cost is not None:
        return
    c = estimate(u)
    if c is not None:
        u.cost = c
        u.cost_estimated = True


def estimate_session(session: Session) -> None:
    """Fill ``cost`` (and set ``cost_estimated``) on every model call of the
    session and its sub-sessions that records none: each event's and each
    step's :class:`~trajkit.model.Usage`. One Usage object shared by an event
    and its step is priced once."""
    for s in session.walk():
        # only the calls that record no cost go to _fill (most events have no Usage: no call for them)
        for usages in ([e.model_usage for e in s.events], [st.model_usage for st in s.steps]):
            for u in usages:
                if u is not None and u.cost is None:
                    _fill(u)
