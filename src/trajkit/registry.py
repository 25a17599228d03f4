"""Formats and their detection: which native format a path holds, and why.

A :class:`Format` declares a name, fingerprints (globs relative to a candidate
directory, or a file-name pattern for a candidate file), a priority and a
``sniff`` check. :func:`detect` walks from the given path up through its
parents (a path anywhere inside a trial or conversation works), lets every
format whose fingerprint matches a candidate sniff it, and ranks the matches:
higher priority outranks lower, then strong outranks weak, then the nearer
candidate wins. Two different formats tied at the top are an ambiguity
(:class:`~trajkit.model.DetectionError` unless a format is named).

Formats register by listing ``module:attribute`` in :data:`BUILTIN_FORMATS`;
modules are imported on first use so the CLI starts fast.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import glob
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .diagnostics import INFO, Diagnostic
from .model import DetectionError, ReadOptions, Session

#: Built-in formats, as ``module:attribute`` of a :class:`Format`.
BUILTIN_FORMATS: list[str] = [
    "trajkit.formats.openhands_v0:FORMAT",
    "trajkit.formats.rollout_trace:FORMAT",
    "trajkit.formats.openhands_sdk:FORMAT",
]

#: How many parent directories above the given path detection looks at.
MAX_ANCESTORS = 6

STRONG = "strong"
WEAK = "weak"


@dataclass(frozen=True, slots=True)
class Match:
    """A format's claim on a path: the ``root`` it would read, the
    fingerprint that matched, how sure it is (``strong`` or ``weak``), and
    why; ``hint`` is handed to the format's reader as ``ReadOptions.hint``."""

    root: Path
    fingerprint: str
    strength: str = STRONG
    reason: str = ""
    hint: Any = None


@dataclass(frozen=True)
class Format:
    """A native format: how to recognise it and how to read it.

    ``sniff(candidate, fingerprint)`` gets a candidate path whose fingerprint
    matched and returns a :class:`Match` (whose root may be an ancestor, e.g.
    the trial directory around a session directory) or None.
    ``read(root, options)`` returns a :class:`Session` and never raises on
    bad data. ``find_sessions(root)``, when given, lists the session roots
    under a directory holding many.
    """

    name: str
    description: str
    fingerprints: tuple[str, ...]
    priority: int
    sniff: Callable[[Path, str], Match | None]
    read: Callable[[Path, ReadOptions], Session]
    find_sessions: Callable[[Path], list[Path]] | None = None


@dataclass(slots=True)
class Candidate:
    """One format considered during detection and what became of it."""

    format: str
    priority: int
    path: str
    fingerprint: str | None
    outcome: str  # "match", "sniff-rejected"
    strength: str | None = None
    root: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class Detection:
    """The outcome of :func:`detect`: the winning format and match, whether the
    decision was ambiguous, and every candidate considered."""

    path: str
    format: Format | None
    match: Match | None
    ambiguous: bool = False
    considered: list[Candidate] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format.name if self.format else None,
            "root": str(self.match.root) if self.match else None,
            "fingerprint": self.match.fingerprint if self.match else None,
            "strength": self.match.strength if self.match else None,
            "reason": self.match.reason if self.match else None,
            "ambiguous": self.ambiguous,
            "considered": [c.to_dict() for c in self.considered],
        }


_loaded: list[Format] | None = None


def formats() -> list[Format]:
    """Every registered format, highest priority first."""
    global _loaded
    if _loaded is None:
        out = []
        for spec in BUILTIN_FORMATS:
            mod, _, attr = spec.partition(":")
            out.append(getattr(importlib.import_module(mod), attr))
        out.sort(key=lambda f: -f.priority)
        _loaded = out
    return _loaded


def register(fmt: Format) -> None:
    """Add a format at run time (plugins, tests)."""
    fs = formats()
    fs[:] = [f for f in fs if f.name != fmt.name] + [fmt]
    fs.sort(key=lambda f: -f.priority)


def get_format(name: str) -> Format:
    """The registered format called ``name``."""
    for f in formats():
        if f.name == name:
            return f
    raise DetectionError(f"unknown format {name!r}; known: {', '.join(f.name for f in formats())}")


def _candidates(path: Path) -> list[Path]:
    out = [path]
    p = path
    for _ in range(MAX_ANCESTORS):
        parent = p.parent
        if parent == p:
            break
        out.append(parent)
        p = parent
    return out


class _Listings:
    """Directory listings cached for one detection (each directory listed once)."""

    __slots__ = ("cache",)

    def __init__(self) -> None:
        self.cache: dict[str, list[str] | None] = {}

    def __call__(self, d: str) -> list[str] | None:
        try:
            return self.cache[d]
        except KeyError:
            try:
                names = os.listdir(d)
            except OSError:
                names = None
            self.cache[d] = names
            return names


@functools.lru_cache(maxsize=None)
def _parse_glob(fp: str) -> tuple[tuple[str, bool], ...]:
    """A fingerprint's path parts, each with whether it holds a wildcard."""
    return tuple((part, glob.has_magic(part)) for part in fp.split("/"))


def _glob_hit(base: str, fp: str, ls: _Listings) -> bool:
    """Whether the glob ``fp`` (``/``-separated, relative) matches under ``base``.

    Same meaning as :func:`glob.glob` (``*`` skips names starting with a
    dot), computed from cached listings.
    """
    parts = _parse_glob(fp)
    dirs = [base]
    last = len(parts) - 1
    for i, (part, magic) in enumerate(parts):
        nxt = []
        for d in dirs:
            names = ls(d)
            if not names:
                continue
            if magic:
                hits = (n for n in names if n[0] != "." and fnmatch.fnmatchcase(n, part))
            else:
                hits = (n for n in (part,) if n in names)
            if i == last:
                if next(hits, None) is not None:
                    return True
                continue
            nxt.extend(os.path.join(d, n) for n in hits)
        if not nxt:
            return False
        dirs = nxt
    return False


def _fingerprint_hits(candidate: Path, fmt: Format, is_dir: bool, ls: _Listings) -> list[str]:
    hits = []
    base = str(candidate)
    for fp in fmt.fingerprints:
        if is_dir:
            if _glob_hit(base, fp, ls):
                hits.append(fp)
        elif "/" not in fp and fnmatch.fnmatchcase(candidate.name, fp):
            hits.append(fp)
    return hits


def detect(path: str | os.PathLike, only: list[str] | None = None, exhaustive: bool = False) -> Detection:
    """Which format ``path`` (or the run it is inside) holds, and why.

    Candidates are the path and up to :data:`MAX_ANCESTORS` parents, nearest
    first. Unless ``exhaustive``, the walk stops after the first candidate
    with a strong match (sniffs map inner paths to their run's root, so
    nothing farther up can be a better answer). Never raises on data; a path
    that does not exist or matches nothing gives a Detection with
    ``format=None``.
    """
    p = Path(os.path.abspath(os.fspath(path)))
    det = Detection(path=str(p), format=None, match=None)
    if not p.exists():
        return det
    fmts = [f for f in formats() if only is None or f.name in only]
    matches: list[tuple[int, int, int, Format, Match]] = []
    seen: set[tuple[str, str]] = set()
    ls = _Listings()
    for depth, cand in enumerate(_candidates(p)):
        try:
            is_dir = cand.is_dir()
        except OSError:
            continue
        for fmt in fmts:
            for fp in _fingerprint_hits(cand, fmt, is_dir, ls):
                try:
                    m = fmt.sniff(cand, fp)
                except Exception as e:  # a sniff must not take detection down
                    det.considered.append(Candidate(fmt.name, fmt.priority, str(cand), fp, "sniff-error", reason=repr(e)))
                    continue
                if m is None:
                    det.considered.append(Candidate(fmt.name, fmt.priority, str(cand), fp, "sniff-rejected"))
                    continue
                key = (fmt.name, str(m.root))
                if key in seen:
                    continue
                seen.add(key)
                det.considered.append(
                    Candidate(fmt.name, fmt.priority, str(cand), fp, "match", m.strength, str(m.root), m.reason)
                )
                matches.append((-fmt.priority, 0 if m.strength == STRONG else 1, depth, fmt, m))
                break
        if not exhaustive and any(t[1] == 0 for t in matches):
            break
    if not matches:
        return det
    matches.sort(key=lambda t: t[:3])
    best = matches[0]
    det.format, det.match = best[3], best[4]
    for other in matches[1:]:
        if other[3].name != best[3].name and other[:2] == best[:2]:
            det.ambiguous = True
            break
    return det


def read(path: str | os.PathLike, format: str | None = None, options: ReadOptions | None = None) -> Session:
    """Detect (unless ``format`` is named) and read the run at ``path``.

    Raises :class:`DetectionError` only when no format matches or the match
    is ambiguous; bad data inside the run becomes diagnostics.
    """
    options = options or ReadOptions()
    p = Path(os.path.abspath(os.fspath(path)))
    if format is not None:
        fmt = get_format(format)
        root = p
        det = detect(p, only=[format]) if p.exists() else None
        if det is not None and det.match is not None:
            root = det.match.root
        session = fmt.read(root, options)
        return session
    det = detect(p)
    if det.format is None or det.match is None:
        if not p.exists():
            raise DetectionError(f"{p}: no such file or directory")
        raise DetectionError(
            f"{p}: no known format matches (known: {', '.join(f.name for f in formats())}); "
            "try `trajkit detect --why`"
        )
    if det.ambiguous:
        tied = sorted({c.format for c in det.considered if c.outcome == "match" and c.priority == det.format.priority})
        raise DetectionError(f"{p}: ambiguous, several formats match equally well: {', '.join(tied)}; name one with --format")
    if det.match.hint is not None:
        options = dataclasses.replace(options, hint=det.match.hint)
    session = det.format.read(det.match.root, options)
    others = sorted({c.format for c in det.considered if c.outcome == "match" and c.format != det.format.name})
    if others:
        session.diagnostics.append(
            Diagnostic(
                "detect.also-matched",
                f"read as {det.format.name}; also matched: {', '.join(others)}",
                INFO,
                file=str(det.match.root),
            )
        )
    return session
