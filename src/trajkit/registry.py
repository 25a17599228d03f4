"""Formats and their detection: which native format a path holds, and why.

A :class:`Format` declares a name, fingerprints (globs relative to a candidate
directory, or a file-name pattern for a candidate file), a priority and a
``sniff`` check. :func:`detect` walks from the given path up through its
parents (a path anywhere inside a trial or conversation works), lets every
format whose fingerprint matches a candidate sniff it, and ranks the matches:
higher priority outranks lower, then strong outranks weak, then the nearer
candidate wins. Two different formats tied at the top are an ambiguity
(:class:`~trajkit.model.DetectionError` unless a format is named).

One detection shares one :class:`~trajkit.reading.probe.Probe` (cached
listings, stats and file heads) between the fingerprints and every format's
``sniff``, so nothing is listed or opened twice. Naming the format
(``read(path, format=NAME)``) skips detection: the path is the run's root.
A format whose ``sniff`` or ``read`` raises does not take trajkit down: the
exception becomes a diagnostic naming the format (``detect.sniff-failed``,
``read.format-failed``).

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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .diagnostics import ERROR, INFO, WARNING, Diagnostic
from .model import DetectionError, ReadOptions, Session
from .reading.probe import Probe, logical_abspath

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

    ``sniff(probe, candidate, fingerprint)`` gets the detection's shared
    :class:`~trajkit.reading.probe.Probe` and a candidate path whose fingerprint
    matched, and returns a :class:`Match` (whose root may be an ancestor,
    e.g. the trial directory around a session directory) or None. It should
    look at the disk only through ``probe``.
    ``read(root, options)`` returns a :class:`Session` and never raises on
    bad data. ``find_sessions(root)``, when given, lists the session roots
    under a directory holding many.
    """

    name: str
    description: str
    fingerprints: tuple[str, ...]
    priority: int
    sniff: Callable[[Probe, Path, str], Match | None]
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
    #: what went wrong while detecting (a format's sniff raised), never fatal
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "path": self.path,
            "format": self.format.name if self.format else None,
            "root": str(self.match.root) if self.match else None,
            "fingerprint": self.match.fingerprint if self.match else None,
            "strength": self.match.strength if self.match else None,
            "reason": self.match.reason if self.match else None,
            "ambiguous": self.ambiguous,
            "considered": [c.to_dict() for c in self.considered],
        }
        if self.diagnostics:
            d["diagnostics"] = [x.to_dict() for x in self.diagnostics]
        return d


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


def _candidates(path: Path) -> Iterator[Path]:
    """The path and up to :data:`MAX_ANCESTORS` parents, nearest first (lazily)."""
    yield path
    p = path
    for _ in range(MAX_ANCESTORS):
        parent = p.parent
        if parent == p:
            break
        yield parent
        p = parent


@functools.lru_cache(maxsize=None)
def _parse_glob(fp: str) -> tuple[tuple[str, Any], ...]:
    """A fingerprint's path parts, each with its compiled matcher (None for a
    part without wildcards)."""
    return tuple(
        (part, re.compile(fnmatch.translate(part)).match if glob.has_magic(part) else None) for part in fp.split("/")
    )


def _glob_hit(base: str, fp: str, probe: Probe) -> bool:
    """Whether the glob ``fp`` (``/``-separated, relative) matches under ``base``.

    Same meaning as :func:`glob.glob` (``*`` skips names starting with a
    dot), computed from the probe's cached listings.
    """
    parts = _parse_glob(fp)
    dirs = [base]
    last = len(parts) - 1
    for i, (part, match) in enumerate(parts):
        nxt = []
        for d in dirs:
            names = probe.listdir(d)
            if not names:
                continue
            if match is not None:
                hits = (n for n in names if n[0] != "." and match(n))
            else:
                hits = (n for n in (part,) if n in names)
            if i == last:
                if next(hits, None) is not None:
                    return True
                continue
            nxt.extend(d + os.sep + n for n in hits)
        if not nxt:
            return False
        dirs = nxt
    return False


def _fingerprint_hits(candidate: Path, base: str, fmt: Format, is_dir: bool, probe: Probe) -> Iterator[str]:
    """The fingerprints of ``fmt`` that match ``candidate`` (``base`` is its
    string form), in declared order, computed lazily: detection stops asking
    once a sniff matches."""
    if is_dir:
        names = probe.listdir(base)
        if not names:
            return
        for fp in fmt.fingerprints:
            first, match = _parse_glob(fp)[0]
            if match is None and first not in names:
                continue  # the common case: a literal first part that is not there
            if _glob_hit(base, fp, probe):
                yield fp
    else:
        name = candidate.name
        for fp in fmt.fingerprints:
            if "/" not in fp:
                match = _parse_glob(fp)[0][1]
                if (match(name) if match is not None else name == fp):
                    yield fp


def _abs_path(path: str | os.PathLike) -> Path:
    """``path`` made absolute as :func:`~trajkit.reading.probe.logical_abspath`
    does; an absolute Path without ``..`` is taken as it is (no new object)."""
    if isinstance(path, Path) and path.is_absolute() and ".." not in path.parts:
        return path
    return Path(logical_abspath(path))


def detect(
    path: str | os.PathLike,
    only: list[str] | None = None,
    exhaustive: bool = False,
    probe: Probe | None = None,
    decide_only: bool = False,
) -> Detection:
    """Which format ``path`` (or the run it is inside) holds, and why.

    Candidates are the path and up to :data:`MAX_ANCESTORS` parents, nearest
    first. Unless ``exhaustive``, the walk stops after the first candidate
    with a strong match (sniffs map inner paths to their run's root, so
    nothing farther up can be a better answer). Never raises on data; a path
    that does not exist or matches nothing gives a Detection with
    ``format=None``; a sniff that raises is a ``detect.sniff-failed``
    diagnostic naming the format.

    ``decide_only`` (what :func:`read` uses): once a format has a strong
    match at a candidate, formats of lower priority are not sniffed there,
    since they cannot win (priority outranks strength and nearness). The
    winner, its match and the ambiguity verdict are the same; ``considered``
    just lacks those outranked formats.
    """
    p = _abs_path(path)
    det = Detection(path=str(p), format=None, match=None)
    probe = probe if probe is not None else Probe()
    if not probe.exists(p):
        return det
    fmts = [f for f in formats() if only is None or f.name in only]
    matches: list[tuple[int, int, int, Format, Match]] = []
    seen: set[tuple[str, str]] = set()
    strong = False
    for depth, cand in enumerate(_candidates(p)):
        cs = str(cand)
        is_dir = probe.is_dir(cs)
        floor = None  # priority of a strong match at this candidate
        for fmt in fmts:
            if floor is not None and fmt.priority < floor:
                break  # formats are in priority order: none of the rest can win
            for fp in _fingerprint_hits(cand, cs, fmt, is_dir, probe):
                try:
                    m = fmt.sniff(probe, cand, fp)
                except Exception as e:  # a sniff must not take detection down
                    det.considered.append(Candidate(fmt.name, fmt.priority, cs, fp, "sniff-error", reason=repr(e)))
                    det.diagnostics.append(
                        Diagnostic(
                            "detect.sniff-failed",
                            f"format {fmt.name!r}: its sniff raised {type(e).__name__}: {e}; the format was skipped here",
                            WARNING,
                            file=cs,
                        )
                    )
                    continue
                if m is None:
                    det.considered.append(Candidate(fmt.name, fmt.priority, cs, fp, "sniff-rejected"))
                    continue
                root = str(m.root)
                key = (fmt.name, root)
                if key in seen:
                    continue
                seen.add(key)
                det.considered.append(Candidate(fmt.name, fmt.priority, cs, fp, "match", m.strength, root, m.reason))
                if m.strength == STRONG:
                    strong = True
                    if decide_only and floor is None:
                        floor = fmt.priority
                matches.append((-fmt.priority, 0 if m.strength == STRONG else 1, depth, fmt, m))
                break
        if strong and not exhaustive:
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


def _read_with(fmt: Format, root: Path, options: ReadOptions) -> Session:
    """``fmt.read``, with an exception turned into a Session that says so."""
    try:
        return fmt.read(root, options)
    except Exception as e:  # a reader must not take the caller down
        session = Session(format=fmt.name, source_path=str(root))
        session.diag(
            "read.format-failed",
            f"format {fmt.name!r}: its reader raised {type(e).__name__}: {e}; nothing was read",
            ERROR,
            file=str(root),
        )
        return session


def root_for(path: str | os.PathLike, format: str) -> str:
    """The root of the ``format`` run that ``path`` is (or is inside), as
    that format alone detects it; ``path`` itself when it does not match.
    For callers that name a format but accept any path inside a run (the
    CLI's ``--format``); :func:`read` with a named format does no detection."""
    get_format(format)
    det = detect(path, only=[format])
    return str(det.match.root) if det.match is not None else os.fspath(path)


def read(path: str | os.PathLike, format: str | None = None, options: ReadOptions | None = None) -> Session:
    """Detect (unless ``format`` is named) and read the run at ``path``.

    With ``format`` named there is no detection at all: ``path`` is read as
    that format's root. Raises :class:`DetectionError` only when no format
    matches, the match is ambiguous or the named format is unknown; bad data
    inside the run becomes diagnostics, and so does a reader that raises
    (``read.format-failed``).
    """
    options = options or ReadOptions()
    p = _abs_path(path)
    if format is not None:
        return _read_with(get_format(format), p, options)
    det = detect(p, decide_only=True)
    if det.format is None or det.match is None:
        if not os.path.exists(p):
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
    session = _read_with(det.format, det.match.root, options)
    session.diagnostics.extend(det.diagnostics)
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
