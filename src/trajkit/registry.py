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

A format also *declares* what else it can do (its on-disk views, listing,
what the model saw, its model calls, its tool table, its example runs); the
verbs dispatch on those attributes (:func:`formats_that_can`), never on a
format's name or on what its module happens to define.

Every format, built-in or third-party, comes through one door: the
``trajkit.formats`` entry-point group (:data:`ENTRY_POINT_GROUP`), whose
entries name a :class:`Format` object as ``module:attribute``. Entry points
are listed without importing anything; a format's module is imported the
first time detection or a verb needs it. A plugin that cannot be imported
(``format.plugin-failed``), that clashes on a name (``format.duplicate-name``)
or that raises in ``sniff`` or ``read`` becomes a diagnostic naming the
plugin, never a crash.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import importlib
import operator
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from ._records import FrozenRecord, Record
from ._text import has_surrogate
from .diagnostics import ERROR, INFO, WARNING, Diagnostic
from .model import DetectionError, ReadOptions, Session
from .reading import fs as _fs
from .reading.probe import Probe, logical_abspath

#: The entry-point group every format is loaded from (entry points as packaging
#: and ``importlib.metadata`` define them; see :func:`_entry_points`).
ENTRY_POINT_GROUP = "trajkit.formats"

#: The built-in formats, as ``name -> module:attribute``. They are declared as
#: entry points in trajkit's own ``pyproject.toml`` and load through the same
#: door as plugins; this table is only the fallback for a built-in whose entry
#: point is missing (running from a source tree that was never installed, or
#: an install made before the entry points existed). Keep it equal to
#: ``[project.entry-points."trajkit.formats"]``.
BUILTIN_FORMATS: dict[str, str] = {
    "openhands-v0": "trajkit.formats.openhands_v0:FORMAT",
    "rollout-trace": "trajkit.formats.rollout_trace:FORMAT",
    "openhands-sdk": "trajkit.formats.openhands_sdk:FORMAT",
    "opencode": "trajkit.formats.opencode:FORMAT",
    "claude-code": "trajkit.formats.claude_code:FORMAT",
    "swe-agent": "trajkit.formats.swe_agent:FORMAT",
    "mini-swe-agent": "trajkit.formats.mini_swe_agent:FORMAT",
    "atif": "trajkit.formats.atif:FORMAT",
    "asf": "trajkit.formats.asf:FORMAT",
    "aider": "trajkit.formats.aider:FORMAT",
    "openhands-eval": "trajkit.formats.openhands_eval:FORMAT",
    "openhands-cloud": "trajkit.formats.openhands_eval:CLOUD_FORMAT",
    "codex": "trajkit.formats.codex:FORMAT",
    "gemini-cli": "trajkit.formats.gemini_cli:FORMAT",
    "terminus2": "trajkit.formats.terminus2:FORMAT",
    "openhands-completions": "trajkit.formats.openhands_completions:FORMAT",
}

#: How many parent directories above the given path detection looks at.
MAX_ANCESTORS = 6

STRONG = "strong"
WEAK = "weak"


class Match(FrozenRecord):
    """A format's claim on a path: the ``root`` it would read, the
    fingerprint that matched, how sure it is (``strong`` or ``weak``), and
    why; ``hint`` is handed to the format's reader as ``ReadOptions.hint``."""

    __slots__ = __match_args__ = ("root", "fingerprint", "strength", "reason", "hint")
    root: Path
    fingerprint: str
    strength: str
    reason: str
    hint: Any

    def __init__(self, root: Path, fingerprint: str, strength: str = STRONG, reason: str = "", hint: Any = None) -> None:
        _set = object.__setattr__
        _set(self, "root", root)
        _set(self, "fingerprint", fingerprint)
        _set(self, "strength", strength)
        _set(self, "reason", reason)
        _set(self, "hint", hint)


class Reject(FrozenRecord):
    """A sniff's "no", with why (shown by ``trajkit detect --why``). A sniff
    may return this instead of None."""

    __slots__ = __match_args__ = ("reason",)
    reason: str

    def __init__(self, reason: str) -> None:
        object.__setattr__(self, "reason", reason)


class lazy:
    """A capability named as ``"module:attribute"`` and imported on its first
    call, so a format's module (what detection imports for every format) can
    stay small: its ``sniff`` and :class:`Format` up front, its reader behind
    ``read=lazy("pkg.reader:read")``. Picklable (it keeps only the name), so
    a Format travels to worker processes as it is."""

    __slots__ = ("ref", "_fn")

    def __init__(self, ref: str):
        module, sep, attr = ref.partition(":")
        if not (module and sep and attr):
            raise ValueError(f"lazy({ref!r}): expected 'module:attribute'")
        self.ref = ref
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self._fn
        if fn is None:
            module, _, attr = self.ref.partition(":")
            fn = self._fn = getattr(importlib.import_module(module), attr)
        return fn(*args, **kwargs)

    def __reduce__(self):
        return (lazy, (self.ref,))

    def __repr__(self) -> str:
        return f"lazy({self.ref!r})"


class Format(FrozenRecord):
    """A native format: how to recognise it, how to read it, and what else it
    declares it can do.

    Required:

    - ``sniff(probe, candidate, fingerprint)`` gets the detection's shared
      :class:`~trajkit.reading.probe.Probe` and a candidate path whose
      fingerprint matched, and returns a :class:`Match` (whose root may be an
      ancestor, e.g. the trial directory around a session directory), or a
      :class:`Reject` saying why not (None: a rejection without a reason).
      It should look at the disk only through ``probe``.
    - ``read(root, options)`` returns a :class:`Session` and never raises on
      bad data.

    Declared capabilities (None / empty when the format cannot; verbs check
    the attribute, never the format's name or its module). ``read`` and every
    callable capability may be a :class:`lazy` reference, imported on first
    use: detection imports every format's module, so keep that module light.

    - ``find_sessions(root, diagnostics=None) -> list[Path]``: the session
      roots under a directory holding many (``convert DIR``, ``ls``);
      problems met while walking are appended to ``diagnostics``.
    - ``summarize(root, max_file_bytes) -> dict``: one listing row for
      ``trajkit ls`` without a full read. Keys every row has: ``id``,
      ``path``, ``title``, ``status``, ``events``, ``model``, ``cost``,
      ``updated``, ``subagents``, ``diagnostics`` (a list of
      ``Diagnostic.to_dict()``); any other key rides along into ``--json``.
    - ``views(root) -> list[str]``: the on-disk views present in the run,
      each readable with ``ReadOptions(view=...)`` (``steps --all-views``).
    - ``context(session, at=None) -> list[dict]``: what the model saw, one
      entry per model call: ``{"llm_response_id", "event_id", "messages"}``
      (OpenAI chat messages), plus ``"logged"`` when the record also kept
      the request as sent (``context --check`` compares them). Raises
      :class:`~trajkit.model.TrajkitError` when the run does not allow it.
      A format declaring ``context`` also makes ASF ``request_hash`` a
      checkable claim.
    - ``model_calls(session) -> list[(call, event_id, line)]``: every
      captured model call normalized (the RL call record: request messages,
      tools, output ids, logprobs, prompt ids) with the event and line it
      came from; ``trajkit turns`` derives training turns from these.
    - ``members(root, options) -> list[str]``: the ids of the sessions a
      *container* holds (one file or database with many sessions, e.g. an
      evaluation ``output.jsonl``); ``[]`` when ``root`` is a single session.
      A session inside a container is addressed ``ROOT#ID`` and read with
      ``ReadOptions(member=ID)``; :func:`read_all` and the verbs run over every
      member when none is named, and :func:`read` refuses to guess.
    - ``tools``: the harness's tool table (tool name -> op and rendering),
      or None.
    - ``homes``: where the harness keeps the user's sessions, as path
      templates (``~`` is the user's home; ``$NAME``/``${NAME}`` an
      environment variable, and an entry naming an unset one is skipped;
      ``${NAME:-default}`` falls back to ``default``, itself a template).
      ``trajkit ls --harness NAME`` with no path lists every session under
      each home that exists (:func:`home_dirs`). Needs ``find_sessions`` and
      ``summarize`` too.
    - ``examples``: small runs shipped with the format, as absolute paths
      (build them from the module's ``__file__``; a plugin ships its own as
      package data). The conformance suite (``tests/conformance``) runs
      every check over each of them.
    """

    __match_args__ = ("name", "description", "fingerprints", "priority", "sniff", "read", "find_sessions", "summarize",
                      "views", "context", "model_calls", "members", "tools", "homes", "examples")
    name: str
    description: str
    fingerprints: tuple[str, ...]
    priority: int
    sniff: Callable[[Probe, Path, str], Match | None]
    read: Callable[[Path, ReadOptions], Session]
    find_sessions: Callable[..., list[Path]] | None
    summarize: Callable[[Path, int], dict[str, Any]] | None
    views: Callable[[Path], list[str]] | None
    context: Callable[..., list[dict[str, Any]]] | None
    model_calls: Callable[[Session], list[tuple[Any, Any, Any]]] | None
    members: Callable[[Path, ReadOptions], list[str]] | None
    tools: Any
    homes: tuple[str, ...] | None
    examples: tuple[str, ...]

    def __init__(
        self,
        name: str,
        description: str,
        fingerprints: tuple[str, ...],
        priority: int,
        sniff: Callable[[Probe, Path, str], Match | None],
        read: Callable[[Path, ReadOptions], Session],
        find_sessions: Callable[..., list[Path]] | None = None,
        summarize: Callable[[Path, int], dict[str, Any]] | None = None,
        views: Callable[[Path], list[str]] | None = None,
        context: Callable[..., list[dict[str, Any]]] | None = None,
        model_calls: Callable[[Session], list[tuple[Any, Any, Any]]] | None = None,
        members: Callable[[Path, ReadOptions], list[str]] | None = None,
        tools: Any = None,
        homes: tuple[str, ...] | None = None,
        examples: tuple[str, ...] = (),
    ) -> None:
        # a Format has a __dict__ (no slots), as the dataclass it was; set it in one go
        object.__setattr__(self, "__dict__", {
            "name": name, "description": description, "fingerprints": fingerprints, "priority": priority,
            "sniff": sniff, "read": read, "find_sessions": find_sessions, "summarize": summarize, "views": views,
            "context": context, "model_calls": model_calls, "members": members, "tools": tools, "homes": homes,
            "examples": examples,
        })

    def can(self, capability: str) -> bool:
        """Whether the format declares ``capability`` (a key of :data:`CAPABILITIES`)."""
        return all(getattr(self, attr) is not None for attr in CAPABILITIES[capability][0])

    def example_paths(self) -> list[Path]:
        """``examples`` as paths."""
        return [Path(e) for e in self.examples]


#: What a verb needs, as ``capability -> (Format attributes, what it is for)``.
CAPABILITIES: dict[str, tuple[tuple[str, ...], str]] = {
    "ls": (("find_sessions", "summarize"), "list sessions"),
    "find_sessions": (("find_sessions",), "find the sessions under a directory"),
    "views": (("views",), "read several on-disk views"),
    "context": (("context",), "show what the model saw"),
    "model_calls": (("model_calls",), "give model calls for training turns"),
    "tools": (("tools",), "name its tool table"),
    "members": (("members",), "hold several sessions in one file"),
    "homes": (("homes", "find_sessions", "summarize"), "list the user's sessions from its home folder"),
}


class _Unset(Exception):
    """A home template names an environment variable that is not set."""


def _expand_vars(text: str, env: Any, i: int = 0, stop: str = "") -> tuple[str, int]:
    """``text[i:]`` with ``$NAME``, ``${NAME}`` and ``${NAME:-default}``
    substituted from ``env``, up to an unmatched ``stop`` character; returns
    the expansion and where it ended. Raises :class:`_Unset` for an unset
    variable without a default."""
    out: list[str] = []
    while i < len(text):
        c = text[i]
        if stop and c == stop:
            return "".join(out), i
        if c != "$":
            out.append(c)
            i += 1
            continue
        if text.startswith("${", i):
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(text, i + 2)
            if m is None:
                raise ValueError(f"bad variable at {i} in {text!r}")
            name, j = m.group(0), m.end()
            if text.startswith(":-", j):
                default, j = _expand_vars(text, env, j + 2, "}")
                value = env.get(name) or default
            else:
                if env.get(name) is None:
                    raise _Unset(name)
                value = env[name]
            if not text.startswith("}", j):
                raise ValueError(f"unclosed ${{ in {text!r}")
            out.append(value)
            i = j + 1
            continue
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(text, i + 1)
        if m is None:
            out.append(c)
            i += 1
            continue
        if env.get(m.group(0)) is None:
            raise _Unset(m.group(0))
        out.append(env[m.group(0)])
        i = m.end()
    if stop:
        raise ValueError(f"unclosed ${{ in {text!r}")
    return "".join(out), i


def expand_home(template: str, env: Any = None) -> Path | None:
    """One ``Format.homes`` template as a path (environment from ``env``,
    default ``os.environ``), or None when it names an unset variable without
    a default. ``~`` at the start is ``$HOME``."""
    env = os.environ if env is None else env
    try:
        text, _ = _expand_vars(template, env)
    except _Unset:
        return None
    if text == "~" or text.startswith("~/"):
        home = env.get("HOME") or os.path.expanduser("~")
        text = home + text[1:]
    return Path(text)


def home_dirs(fmt: Format, env: Any = None) -> list[Path]:
    """The folders where ``fmt``'s harness keeps the user's sessions, each
    template of ``fmt.homes`` expanded (:func:`expand_home`), duplicates
    removed, whether they exist or not."""
    out: list[Path] = []
    for t in fmt.homes or ():
        p = expand_home(t, env)
        if p is not None and p not in out:
            out.append(p)
    return out


def formats_that_can(capability: str) -> list[str]:
    """The names of the registered formats declaring ``capability``."""
    return [f.name for f in formats() if f.can(capability)]


def cannot(fmt_name: str, capability: str) -> str:
    """The sentence a verb prints when format ``fmt_name`` lacks ``capability``."""
    can = formats_that_can(capability)
    what = CAPABILITIES[capability][1]
    return f"{fmt_name} cannot {what}; formats that can: {', '.join(can) if can else 'none installed'}"


class Candidate(Record):
    """One format considered during detection and what became of it."""

    __slots__ = __match_args__ = ("format", "priority", "path", "fingerprint", "outcome", "strength", "root", "reason")
    format: str
    priority: int
    path: str
    fingerprint: str | None
    outcome: str  # "match", "sniff-rejected", "sniff-error", "unrelated"
    strength: str | None
    root: str | None
    reason: str

    def __init__(self, format: str, priority: int, path: str, fingerprint: str | None, outcome: str,
                 strength: str | None = None, root: str | None = None, reason: str = "") -> None:
        self.format = format
        self.priority = priority
        self.path = path
        self.fingerprint = fingerprint
        self.outcome = outcome
        self.strength = strength
        self.root = root
        self.reason = reason

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


class Detection(Record):
    """The outcome of :func:`detect`: the winning format and match, whether the
    decision was ambiguous, and every candidate considered. ``member``: the
    session named after ``#`` in the path (a container's member), if any;
    ``diagnostics``: what went wrong while detecting (a format's sniff
    raised), never fatal. ``considered`` and ``diagnostics`` default to new
    empty lists."""

    __slots__ = __match_args__ = ("path", "format", "match", "ambiguous", "considered", "member", "diagnostics")
    path: str
    format: Format | None
    match: Match | None
    ambiguous: bool
    considered: list[Candidate]
    member: str | None
    diagnostics: list[Diagnostic]

    def __init__(self, path: str, format: Format | None, match: Match | None, ambiguous: bool = False,
                 considered: list[Candidate] | None = None, member: str | None = None,
                 diagnostics: list[Diagnostic] | None = None) -> None:
        self.path = path
        self.format = format
        self.match = match
        self.ambiguous = ambiguous
        self.considered = [] if considered is None else considered
        self.member = member
        self.diagnostics = [] if diagnostics is None else diagnostics

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
        if self.member is not None:
            d["member"] = self.member
        if self.diagnostics:
            d["diagnostics"] = [x.to_dict() for x in self.diagnostics]
        return d


class FormatEntry(FrozenRecord):
    """One ``trajkit.formats`` entry point: the format's name, the
    ``module:attribute`` of its :class:`Format`, and which distribution
    provided it (``origin``, its name and version, e.g. ``trajkit 0.1.0``)."""

    __slots__ = __match_args__ = ("name", "value", "origin")
    name: str
    value: str
    origin: str

    def __init__(self, name: str, value: str, origin: str) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "value", value)
        _set(self, "origin", origin)


_entries: list[FormatEntry] | None = None
_by_value: dict[str, Format | None] = {}
_origin_of: dict[str, str] = {}  # format name -> origin, for diagnostics naming the plugin
_problems: list[Diagnostic] = []
_loaded: list[Format] | None = None


def _problem(code: str, message: str, severity: str = WARNING) -> None:
    if not any(d.code == code and d.message == message for d in _problems):
        _problems.append(Diagnostic(code, message, severity))


def _dist_name(name: str) -> str:
    """A distribution name as PEP 503 normalizes it (``Some_Plugin.x`` -> ``some-plugin-x``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _entry_points(group: str) -> list[tuple[str, str, str, str]]:
    """``(name, value, distribution, version)`` of every entry point in
    ``group``: what ``importlib.metadata.entry_points(group=...)`` returns,
    read straight from the ``*.dist-info`` / ``*.egg-info`` folders on
    ``sys.path`` (the first distribution of a name wins, as there).

    Importing :mod:`importlib.metadata` (zipfile, email, csv) costs more CPU
    than a whole detection, and every reading verb needs the entry points, so
    the common case reads ``entry_points.txt`` itself. A ``sys.path`` entry
    that is not a directory (a zip) sends the whole lookup to
    :mod:`importlib.metadata`; ``tests/test_format_entry_points.py`` checks
    both give the same answer.
    """
    if any(p and os.path.isfile(p) for p in sys.path):
        from importlib.metadata import entry_points

        out = []
        for ep in entry_points(group=group):
            dist = getattr(ep, "dist", None)
            out.append((ep.name, ep.value, _dist_name(getattr(dist, "name", None) or "?"), getattr(dist, "version", "") or ""))
        return out
    out: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()
    for entry in sys.path:
        base = entry or "."
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for folder in names:
            if not folder.endswith((".dist-info", ".egg-info")):
                continue
            stem = folder.rsplit(".", 1)[0]
            dname, _, version = stem.partition("-")
            dname = _dist_name(dname)
            if dname in seen:  # a later copy of an installed distribution is shadowed
                continue
            try:
                with open(os.path.join(base, folder, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                if os.path.isdir(os.path.join(base, folder)):
                    seen.add(dname)
                continue
            seen.add(dname)
            section = None
            for line in text.splitlines():
                line = line.strip()
                if not line or line[0] in "#;":
                    continue
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == group and "=" in line:
                    name, _, value = line.partition("=")
                    out.append((name.strip(), value.strip(), dname, version.split("-", 1)[0]))
    return out


def entries() -> list[FormatEntry]:
    """The format entry points, deduplicated, in the order they win: the
    built-ins first, then plugins by distribution name. Nothing is imported.

    Two entries claiming one name: the first wins, and the clash is a
    ``format.duplicate-name`` problem (:func:`load_problems`).
    """
    global _entries
    if _entries is not None:
        return _entries
    order = list(BUILTIN_FORMATS)
    found: list[tuple[int, str, str, str, str]] = []
    try:
        for name, value, dname, version in _entry_points(ENTRY_POINT_GROUP):
            origin = f"{dname} {version}".strip()
            builtin = BUILTIN_FORMATS.get(name) == value and dname == __package__  # trajkit's own distribution
            # built-ins keep their table order; plugins sort by distribution, name, value
            key = f"{order.index(name):04d}" if builtin else dname
            found.append((0 if builtin else 1, key, name, value, origin))
    except Exception as e:  # broken metadata must not take trajkit down
        _problem("format.plugin-failed", f"cannot list the {ENTRY_POINT_GROUP} entry points: {type(e).__name__}: {e}", ERROR)
    found.sort(key=lambda t: t[:4])
    builtins = [FormatEntry(n, v, o) for b, _, n, v, o in found if b == 0]
    plugins = [FormatEntry(n, v, o) for b, _, n, v, o in found if b == 1]
    # Fallback: a built-in missing from the metadata (a source tree never
    # installed, or an install older than the entry points) is still a built-in.
    have = {r.name for r in builtins}
    fallback = [FormatEntry(n, v, "trajkit (built-in)") for n, v in BUILTIN_FORMATS.items() if n not in have]
    rows = builtins + fallback + plugins
    out: list[FormatEntry] = []
    for r in rows:
        first = next((o for o in out if o.name == r.name), None)
        if first is None:
            out.append(r)
        elif first.value != r.value:
            _problem(
                "format.duplicate-name",
                f"format name {r.name!r} is claimed by {first.origin} ({first.value}) and by {r.origin} ({r.value}); "
                f"using {first.origin}'s",
            )
    _entries = out
    return out


def format_names() -> list[str]:
    """The names of every format entry point, without importing any format."""
    return [e.name for e in entries()]


def _load(entry: FormatEntry) -> Format | None:
    if entry.value in _by_value:
        return _by_value[entry.value]
    fmt: Format | None = None
    mod, _, attr = entry.value.split("[", 1)[0].strip().partition(":")  # "module:attr [extras]"
    try:
        obj = importlib.import_module(mod)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
        if not isinstance(obj, Format):
            raise TypeError(f"{entry.value} is a {type(obj).__name__}, not a trajkit Format")
        fmt = obj
    except Exception as e:  # a plugin that cannot load is reported, never a crash
        _problem(
            "format.plugin-failed",
            f"format plugin {entry.name!r} from {entry.origin} ({entry.value}) could not be loaded: {type(e).__name__}: {e}",
            ERROR,
        )
    _by_value[entry.value] = fmt
    if fmt is not None:
        _origin_of.setdefault(fmt.name, entry.origin)
    return fmt


def load_problems() -> list[Diagnostic]:
    """What went wrong while loading formats: plugins that failed to import
    (``format.plugin-failed``) and names claimed twice (``format.duplicate-name``)."""
    return list(_problems)


def origin(name: str) -> str:
    """Which distribution provided the format ``name`` (for messages)."""
    return _origin_of.get(name, "?")


def formats() -> list[Format]:
    """Every registered format, highest priority first (imports them all)."""
    global _loaded
    if _loaded is None:
        out: list[Format] = []
        for e in entries():
            f = _load(e)
            if f is None:
                continue
            if any(x.name == f.name for x in out):
                _problem("format.duplicate-name", f"format name {f.name!r} is defined by two entry points; {e.value} ({e.origin}) ignored")
                continue
            out.append(f)
        out.sort(key=lambda f: -f.priority)
        _loaded = out
    return _loaded


def register(fmt: Format) -> None:
    """Add a format at run time (tests, embedding applications)."""
    fs = formats()
    fs[:] = [f for f in fs if f.name != fmt.name] + [fmt]
    fs.sort(key=lambda f: -f.priority)
    _origin_of[fmt.name] = "register()"


def get_format(name: str) -> Format:
    """The registered format called ``name`` (imports only that one when it
    has an entry point of its own name)."""
    if _loaded is None:
        for e in entries():
            if e.name == name:
                f = _load(e)
                if f is not None and f.name == name:
                    return f
                break
    for f in formats():
        if f.name == name:
            return f
    raise DetectionError(f"unknown format {name!r}; known: {', '.join(f.name for f in formats())}")


def _candidates(path: Path, ancestors: int = MAX_ANCESTORS) -> Iterator[Path]:
    """The path and up to ``ancestors`` parents, nearest first (lazily)."""
    yield path
    p = path
    for _ in range(ancestors):
        parent = p.parent
        if parent == p:
            break
        yield parent
        p = parent


class _Stars:
    """A glob part whose only wildcard is ``*`` (``*.json``,
    ``rollout-*.jsonl``), matched with ``startswith``/``endswith``/``find``:
    the same answers as :func:`fnmatch.fnmatchcase`, without compiling a
    regular expression (detection meets some 60 fingerprint parts, and
    compiling them all cost more than the rest of a detection)."""

    __slots__ = ("first", "middle", "last", "least")

    def __init__(self, part: str) -> None:
        pieces = part.split("*")
        self.first, self.middle, self.last = pieces[0], pieces[1:-1], pieces[-1]
        self.least = sum(len(p) for p in pieces)

    def __call__(self, name: str) -> bool:
        if len(name) < self.least or not name.startswith(self.first) or not name.endswith(self.last):
            return False
        pos, end = len(self.first), len(name) - len(self.last)
        for piece in self.middle:  # each piece at its leftmost place after the previous one
            i = name.find(piece, pos, end)
            if i < 0:
                return False
            pos = i + len(piece)
        return True


@functools.lru_cache(maxsize=None)
def _parse_glob(fp: str) -> tuple[tuple[str, Any], ...]:
    """A fingerprint's path parts, each with its matcher (None for a part
    without wildcards; :class:`_Stars` for one with only ``*``; a compiled
    :func:`fnmatch.translate` for ``?`` and ``[...]``)."""
    out = []
    for part in fp.split("/"):
        if not any(c in part for c in "*?["):
            out.append((part, None))
        elif "?" in part or "[" in part:
            out.append((part, re.compile(fnmatch.translate(part)).match))
        else:
            out.append((part, _Stars(part)))
    return tuple(out)


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


@functools.lru_cache(maxsize=None)
def _dir_globs(fingerprints: tuple[str, ...]) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """Each fingerprint with its parsed parts (:func:`_parse_glob`), once per format."""
    return tuple((fp, _parse_glob(fp)) for fp in fingerprints)


@functools.lru_cache(maxsize=None)
def _file_globs(fingerprints: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """The fingerprints a file's name can hit (no ``/``), each with its matcher (None: a literal name)."""
    return tuple((fp, _parse_glob(fp)[0][1]) for fp in fingerprints if "/" not in fp)


def _relates(depth: int, rel_first: str | None, fp: str) -> bool:
    """Whether a fingerprint that hit at an ancestor relates to the path.

    The path itself and its parent always relate (a run's own files and
    folders: ``results.json``, ``verifier/``). Farther up, the path's first
    folder below the ancestor must be where the fingerprint points (``agent``
    for ``agent/sessions/*/events``): a stray ``base_state.json`` three
    folders up says nothing about ``deep/er/path/data.json``.
    """
    if depth <= 1 or rel_first is None:
        return True
    first, match = _parse_glob(fp)[0]
    return bool(match(rel_first)) if match is not None else rel_first == first


def _abs_path(path: str | os.PathLike) -> Path:
    """``path`` made absolute as :func:`~trajkit.reading.probe.logical_abspath`
    does; an absolute Path without ``..`` is taken as it is (no new object)."""
    if isinstance(path, Path) and path.is_absolute() and ".." not in path.parts:
        return path
    return Path(logical_abspath(path))


def split_member(path: str | os.PathLike) -> tuple[str, str | None]:
    """``path`` split into the container and the member it names:
    ``output.jsonl#abc`` -> (``output.jsonl``, ``abc``): the longest part
    before a ``#`` that exists is the container, so ids may hold ``#`` too. A
    path that exists as written (a file whose name holds ``#``) names no
    member, nor does one with no existing part before a ``#``."""
    s = os.fspath(path)
    if "#" not in s or _fs.lexists(s):
        return s, None
    i = len(s)
    while (i := s.rfind("#", 0, i)) > 0:  # the longest part that exists is the container
        if i + 1 < len(s) and _fs.lexists(s[:i]):
            return s[:i], s[i + 1:]
    return s, None


def detect(
    path: str | os.PathLike,
    only: list[str] | None = None,
    exhaustive: bool = False,
    probe: Probe | None = None,
    decide_only: bool = False,
    ancestors: int = MAX_ANCESTORS,
    winner_only: bool = False,
) -> Detection:
    """Which format ``path`` (or the run it is inside) holds, and why.

    Candidates are the path and up to :data:`MAX_ANCESTORS` parents, nearest
    first. Unless ``exhaustive``, the walk stops after the first candidate
    with a strong match (sniffs map inner paths to their run's root, so
    nothing farther up can be a better answer). A fingerprint that hits at
    an ancestor but does not relate to the path (:func:`_relates`) is not
    sniffed (outcome ``unrelated``). Never raises on data; a path
    that does not exist or matches nothing gives a Detection with
    ``format=None``; a sniff that raises is a ``detect.sniff-failed``
    diagnostic naming the format.

    ``decide_only`` (what :func:`read` uses): once a format has a strong
    match at a candidate, formats of lower priority are not sniffed there,
    since they cannot win (priority outranks strength and nearness). The
    winner, its match and the ambiguity verdict are the same; ``considered``
    just lacks those outranked formats.

    ``ancestors``: how many parents are candidates (0: the path alone, what
    :func:`trajkit.corpus.discover` asks while it walks down from a root
    whose parents it has already ruled out).

    ``winner_only`` (what discovery uses, which asks only who wins): like
    ``decide_only``, and once a format matches, no format of lower priority
    is sniffed anywhere, nor any other format at a candidate once one has a
    strong match there. The winner and its match are the same; the
    ambiguity verdict is not made (``ambiguous`` stays False) and
    ``considered`` lacks the formats left out and the sniffs that said no.
    """
    if isinstance(path, Path) and "#" not in str(path):
        member = None  # what split_member says of it, without making the Path again
    else:
        path, member = split_member(path)
    p = _abs_path(path)
    det = Detection(path=str(p), format=None, match=None, member=member)
    probe = probe if probe is not None else Probe()
    if not probe.exists(p):
        return det
    fmts = formats() if only is None else [f for f in formats() if f.name in only]
    table = _table_of(fmts)
    if _problems:  # plugins that failed to load, names claimed twice (load_problems(), without its copy)
        det.diagnostics.extend(_problems)
    considered = det.considered
    matches: list[tuple[int, int, int, Format, Match]] = []
    seen: set[tuple[str, str]] = set()
    strong = False
    top = -sys.maxsize  # winner_only: the highest priority matched so far
    globs = probe.globs
    for depth, cand in enumerate(_candidates(p, ancestors)):
        cs = str(cand)
        probe.name(cand, cs)  # the sniffs' asks about the candidate skip os.fspath
        is_dir = probe.is_dir(cs)
        name = cand.name
        rel_first = p.relative_to(cand).parts[0] if depth else None
        # each format that has a fingerprint able to hit here, in priority order, with those
        # fingerprints in declared order: a file's name picks them from a table per name suffix,
        # a folder's listing is asked per fingerprint (lazily: a glob may list subfolders)
        index = None
        joined = None  # the folder's names, joined (_joined_names), once asked
        if is_dir:
            index = probe.index(cs)
            groups: Any = table.dirs if index else ()
        else:
            dot = name.rfind(".")
            ext = name[dot:] if dot >= 0 else ""
            groups = table.by_end.get(ext)
            if groups is None:
                groups = table.by_end[ext] = _file_table(fmts, ext)
        floor = None  # priority of a strong match at this candidate
        settled = False  # winner_only: a strong match here, so no later format here can win
        for fmt, fps in groups:
            priority = fmt.priority
            if floor is not None and priority < floor:
                break  # formats are in priority order: none of the rest can win
            if priority < top:
                break  # winner_only: priority outranks strength and nearness, so a lower one cannot win, here or farther up
            for fp, test in fps:
                if index is None:  # a file: test is what its name must pass (None: a sure hit)
                    if test is not None and not test(name):
                        continue
                else:  # a folder: test is what _Table.dirs holds of the fingerprint
                    first, match, multi, needles, exact = test
                    if match is None:
                        if first not in index:
                            continue  # the common case: a literal first part that is not there
                        if multi:
                            key = (cs, fp)  # asked once per probe (several formats share a glob)
                            hit = globs.get(key)
                            if hit is None:
                                hit = globs[key] = _glob_hit(cs, fp, probe)
                            if not hit:
                                continue
                    else:
                        key = (cs, fp)  # several formats share a glob such as *.json: asked once per probe
                        hit = globs.get(key)
                        if hit is None:
                            if multi:
                                hit = _glob_hit(cs, fp, probe)
                            else:  # one part: the listing in hand answers (what _glob_hit says of it)
                                if needles is None:  # a ?/[ part: each name is tested
                                    hit = any(n[0] != "." and match(n) for n in index)
                                else:  # the folder's joined names first: searches in C
                                    if joined is None:
                                        joined = _joined_names(probe, cs, index)  # type: ignore[arg-type]
                                    hit = bool(joined)
                                    if hit:
                                        for needle in needles:
                                            if needle not in joined:
                                                hit = False
                                                break
                                    if hit and not exact:  # every piece is there, maybe in different names
                                        hit = any(n[0] != "." and match(n) for n in index)
                            globs[key] = hit
                        if not hit:
                            continue
                if depth > 1 and rel_first is not None and not _relates(depth, rel_first, fp):
                    considered.append(Candidate(
                        fmt.name, priority, cs, fp, "unrelated",
                        reason=f"the path is under {rel_first}/, which this fingerprint does not point into",
                    ))
                    continue
                try:
                    m = fmt.sniff(probe, cand, fp)
                except Exception as e:  # a sniff must not take detection down
                    considered.append(
                        Candidate(fmt.name, priority, cs, fp, "sniff-error", reason=f"{origin(fmt.name)}: {e!r}")
                    )
                    det.diagnostics.append(
                        Diagnostic(
                            "detect.sniff-failed",
                            f"format {fmt.name!r} (from {origin(fmt.name)}): its sniff raised {type(e).__name__}: {e}; "
                            "the format was skipped here",
                            WARNING,
                            file=cs,
                        )
                    )
                    continue
                if m is None or isinstance(m, Reject):
                    if not winner_only:  # discovery asks only who wins: no record of each "no"
                        why = m.reason if m is not None else ""
                        considered.append(Candidate(fmt.name, priority, cs, fp, "sniff-rejected", reason=why))
                    continue
                root = str(m.root)
                key = (fmt.name, root)
                if key in seen:
                    continue
                seen.add(key)
                considered.append(Candidate(fmt.name, priority, cs, fp, "match", m.strength, root, m.reason))
                if m.strength == STRONG:
                    strong = True
                    settled = winner_only
                    if decide_only and floor is None:
                        floor = priority
                if winner_only and priority > top:
                    top = priority
                matches.append((-priority, 0 if m.strength == STRONG else 1, depth, fmt, m))
                break
            if settled:
                break  # the rest here come later in priority order (a tie goes to the first): none can win
        if strong and not exhaustive:
            break
    if not matches:
        return det
    if len(matches) > 1:
        matches.sort(key=_rank)
    best = matches[0]
    det.format, det.match = best[3], best[4]
    if winner_only:
        return det
    for other in matches[1:]:
        if other[3].name != best[3].name and other[:2] == best[:2]:
            det.ambiguous = True
            break
    return det


def _rank(t: tuple[int, int, int, Format, Match]) -> tuple[int, int, int]:
    """A match's rank: priority (highest first), then strength, then nearness."""
    return t[:3]


@functools.lru_cache(maxsize=None)
def _needles(part: str) -> tuple[tuple[str, ...] | None, bool]:
    """What :func:`detect` searches a folder's joined names for to answer
    the glob part ``part``: the literal pieces every matching name holds
    (its start after a NUL, its end before one, the pieces between ``*`` s
    anywhere), and whether finding them all is the answer (``*``, ``*END``,
    ``START*``) or only a necessary condition. ``(None, False)`` for a part
    with ``?`` or ``[``: tested name by name."""
    if "?" in part or "[" in part:
        return None, False
    pieces = part.split("*")
    first, middle, last = pieces[0], pieces[1:-1], pieces[-1]
    needles = ["\0" + first] if first else []
    if last:
        needles.append(last + "\0")
    needles.extend(p for p in middle if p)
    exact = len(pieces) == 2 and not (first and last)
    return tuple(needles), exact


class _Table:
    """What :func:`detect` asks of one list of formats, worked out once:
    ``dirs``, each format with its fingerprints' parsed parts (what a folder
    is matched against), in priority order; ``by_end``, for a file's name
    suffix (its last dot and what follows), the formats whose one-part
    fingerprints can hit such a name with those fingerprints and the test a
    name still has to pass (:func:`_file_table`), filled as suffixes are met."""

    __slots__ = ("fmts", "dirs", "by_end")

    def __init__(self, fmts: list[Format]) -> None:
        self.fmts = list(fmts)  # holds the formats: the ids that key the table stay theirs
        #: per format: (fingerprint, (its first part, that part's matcher or None, whether more parts
        #: follow, _needles of a one-part glob, whether they answer it alone))
        self.dirs = tuple((f, tuple((fp, (parts[0][0], parts[0][1], len(parts) > 1) + (_needles(parts[0][0]) if
                                                                                     parts[0][1] is not None and len(parts) == 1
                                                                                     else (None, False)))
                                    for fp, parts in _dir_globs(tuple(f.fingerprints)))) for f in self.fmts)
        self.by_end: dict[str, tuple[tuple[Format, tuple[tuple[str, Any], ...]], ...]] = {}


_tables: dict[tuple[int, ...], _Table] = {}
#: The table :func:`_table_of` gave last (a process mostly detects with one format list).
_last_table: _Table | None = None


def _table_of(fmts: list[Format]) -> _Table:
    """The :class:`_Table` of ``fmts`` (kept by the formats' identities: a
    :func:`register` or a changed ``only`` gets its own)."""
    global _last_table
    last = _last_table
    # the same formats, object for object, as the last time: compared in C (a key of ids costs more)
    if last is not None and len(last.fmts) == len(fmts) and all(map(operator.is_, last.fmts, fmts)):
        return last
    key = tuple(map(id, fmts))
    got = _tables.get(key)
    if got is None:
        if len(_tables) > 64:
            _tables.clear()
        got = _tables[key] = _Table(fmts)
    _last_table = got
    return got


def _file_table(fmts: list[Format], ext: str) -> tuple[tuple[Format, tuple[tuple[str, Any], ...]], ...]:
    """The formats of ``fmts`` whose one-part fingerprints can hit a name
    ending in ``ext`` (its last dot and what follows, ``""`` when it has
    none), each with those fingerprints in declared order and the test a
    name still has to pass (None: every such name hits)."""
    out = []
    for f in fmts:
        fps = []
        for fp, match in _file_globs(tuple(f.fingerprints)):
            end = _file_end(fp)
            # a name ending in ext can end in `end` only when one is a suffix of the other
            if not (ext.endswith(end) if len(end) <= len(ext) else end.endswith(ext)):
                continue
            if match is None:
                test: Any = fp.__eq__  # a literal name
            elif fp == "*" + end and ext.endswith(end):
                test = None  # "*" and a literal end that every such name has
            else:
                test = match
            fps.append((fp, test))
        if fps:
            out.append((f, tuple(fps)))
    return tuple(out)


def _file_end(fp: str) -> str:
    """The literal text a name must end with to hit the one-part glob ``fp``
    (after its last wildcard; all of it for a literal name, ``""`` when it ends in one)."""
    cut = max(fp.rfind("*"), fp.rfind("?"), fp.rfind("]"))
    return fp[cut + 1:]


def _joined_names(probe: Probe, cs: str, names: list[str]) -> str:
    """The names of the folder ``cs`` that a glob's ``*`` can match (not
    hidden), each between NULs (``"\\0a\\0b\\0"``; ``""`` when there is none):
    a glob part is then one search in C over the folder (:func:`_joined_test`),
    where it was a Python-level test per name. Made once per folder and probe
    (``probe.memo``)."""
    key = ("names-joined", cs)
    got = probe.memo.get(key)
    if got is None:
        shown = [n for n in names if n[0] != "."]
        got = probe.memo[key] = "\0" + "\0".join(shown) + "\0" if shown else ""
    return got


@functools.lru_cache(maxsize=None)
def _joined_test(part: str) -> Callable[[str], bool] | None:
    """A test of a folder's :func:`_joined_names` that says whether one of
    them matches the glob part ``part`` (as :func:`fnmatch.fnmatchcase` does;
    no name holds a NUL or a ``/``): a substring test for ``*END`` and
    ``START*``, a regular expression with each name between NULs for the rest;
    None for a part it does not translate (a negated or unusual ``[...]``
    set: the caller tests each name)."""
    if part == "*":
        return bool
    pieces = part.split("*")
    if "?" not in part and "[" not in part and len(pieces) == 2:
        first, last = pieces
        if not first:
            needle = last + "\0"  # NUL only at its end: it lies inside one name, at the name's end
            return lambda joined: needle in joined
        if not last:
            needle = "\0" + first
            return lambda joined: needle in joined
    out = ["\0"]
    i, n = 0, len(part)
    while i < n:
        c = part[i]
        i += 1
        if c == "*":
            out.append("[^\0]*")
        elif c == "?":
            out.append("[^\0]")
        elif c == "[":
            j = part.find("]", i)
            stuff = part[i:j] if j > i else ""
            if not stuff or stuff[0] in "!^" or any(ch in stuff for ch in "[\\") or any(
                    pair in stuff for pair in ("--", "&&", "~~", "||")):
                return None  # fnmatch's rules for these are subtler than this translation
            out.append("[" + stuff + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
    out.append("\0")
    try:
        search = re.compile("".join(out)).search
    except re.error:  # a set such as [z-a]
        return None
    return lambda joined: search(joined) is not None


class EntryDetector:
    """Detection of listed entries as run roots, for a walk down a tree
    (:func:`trajkit.corpus.discover`): for each entry, the winner
    ``detect(entry, probe=probe, ancestors=0, winner_only=True)`` names, with
    none of its bookkeeping. The format list is taken once (the formats
    registered when it is made); which of their fingerprints a file's name can
    hit is worked out once per name suffix (the text from its last dot: a
    corpus of 10,000 runs has a handful), not per format and entry; nothing
    is recorded of the sniffs that say no, and the candidate's ``Path`` (what
    the sniff face takes) is made only when a sniff is asked.

    :meth:`winner` gives the winning ``(format, match)`` or None; a sniff that
    raises is passed over, as :func:`detect` does (discovery keeps no
    diagnostics of it)."""

    __slots__ = ("_fmts", "_by_end", "_dirs")

    def __init__(self, fmts: list[Format] | None = None) -> None:
        self._fmts = list(formats() if fmts is None else fmts)
        #: name suffix -> ((format, ((fingerprint, test or None for a sure hit), ...)), ...)
        self._by_end: dict[str, tuple[tuple[Format, tuple[tuple[str, Any], ...]], ...]] = {}
        #: each format with its fingerprints (what a folder is matched against), each as
        #: (fingerprint, parsed parts, the test of the folder's joined names for a first part with
        #: a wildcard (:func:`_joined_test`; None: test each name))
        self._dirs = [(f, tuple((fp, parts, _joined_test(parts[0][0]) if parts[0][1] is not None else None)
                                for fp, parts in _dir_globs(tuple(f.fingerprints)))) for f in self._fmts]

    def _file_table(self, ext: str) -> tuple[tuple[Format, tuple[tuple[str, Any], ...]], ...]:
        """:func:`_file_table` of the detector's formats, kept per suffix."""
        got = self._by_end[ext] = _file_table(self._fmts, ext)
        return got

    def _dir_hits(self, probe: Probe, cs: str, names: list[str], parsed: Any) -> Iterator[tuple[str, None]]:
        """The fingerprints (``parsed``: one format's, as ``self._dirs`` holds
        them) that match in the folder ``cs`` listed as ``names``, lazily (a
        glob may list subfolders: none is asked once the format has matched),
        each as ``(fingerprint, None)`` (what :meth:`_file_table` gives a sure
        hit). Same answers as :func:`detect` asks of a folder."""
        globs = probe.globs
        for fp, parts, joined_test in parsed:
            first, match = parts[0]
            if match is None and not probe.has(cs, first):
                continue  # the common case: a literal first part that is not there
            key = (cs, fp)  # several formats share a glob such as *.json: asked once per probe
            hit = globs.get(key)
            if hit is None:
                if match is None:
                    hit = len(parts) == 1 or _glob_hit(cs, fp, probe)  # a literal name, listed
                else:
                    # a name of the listing that is not hidden and matches the first part (what _glob_hit asks first)
                    if joined_test is not None:
                        hit = joined_test(_joined_names(probe, cs, names))
                    else:
                        hit = any(n[0] != "." and match(n) for n in names)
                    if hit and len(parts) > 1:
                        hit = _glob_hit(cs, fp, probe)
                globs[key] = hit
            if hit:
                yield fp, None

    def winner(self, probe: Probe, cs: str, name: str, is_dir: bool,
               candidate: Path | None = None) -> tuple[Format, Match] | None:
        """The format that wins the entry ``cs`` (an absolute path without
        ``..`` that exists, named ``name``, in a folder ``probe`` has listed;
        ``is_dir`` as :meth:`Probe.is_dir` says, symlinks followed), and its match.

        The same winner as :func:`detect` with ``winner_only``: formats come
        in priority order, each asked with its hitting fingerprints in
        declared order until it matches; once one matches only formats of the
        same priority are still asked; among those a strong match wins at
        once, else the first weak one stands. ``candidate``: ``cs`` as the
        Path handed to the sniffs (made here when a sniff is asked and none
        is given)."""
        if is_dir:
            names = probe.listdir(cs)
            if not names:
                return None
            groups: Any = [(f, self._dir_hits(probe, cs, names, parsed)) for f, parsed in self._dirs]
        else:
            dot = name.rfind(".")
            ext = name[dot:] if dot >= 0 else ""
            groups = self._by_end.get(ext)
            if groups is None:
                groups = self._file_table(ext)
        top = None  # the priority of the first match
        first = None  # the first match at that priority (a weak one: a strong one returns at once)
        cand = candidate
        if cand is not None:
            probe.name(cand, cs)  # the sniffs' asks about it skip os.fspath
        for f, fps in groups:
            if top is not None and f.priority < top:
                break  # priority outranks strength: no format of a lower one can win
            for fp, test in fps:
                if test is not None and not test(name):
                    continue
                if cand is None:
                    cand = Path(cs)
                    probe.name(cand, cs)
                try:
                    m = f.sniff(probe, cand, fp)
                except Exception:  # a sniff must not take detection down (detect records it; discovery does not)
                    continue
                if m is None or isinstance(m, Reject):
                    continue
                if m.strength == STRONG:
                    return f, m
                if top is None:
                    top, first = f.priority, (f, m)
                break  # this format matched: its other fingerprints are not asked
        return first


def _read_with(fmt: Format, root: Path, options: ReadOptions) -> Session:
    """``fmt.read``, with an exception (a reader bug, a plugin's) turned into
    a Session that says so and names the plugin; then the costs the record
    lacks are estimated from the price table (:mod:`trajkit.pricing`)."""
    try:
        session = fmt.read(root, options)
        if not isinstance(session, Session):
            raise TypeError(f"read returned a {type(session).__name__}, not a Session")
    except Exception as e:  # a reader must not take the caller down
        session = Session(format=fmt.name, source_path=str(root))
        session.diag(
            "read.format-failed",
            f"format {fmt.name!r} (from {origin(fmt.name)}): its reader raised {type(e).__name__}: {e}; nothing was read",
            ERROR,
            file=str(root),
        )
        return session
    # Costs the record lacks are estimated here, once, for every format.
    estimate = _estimate_session
    if estimate is None:  # imported on the first read (a function-level import costs ~2 us on every read)
        estimate = _load_estimate()
    estimate(session)
    return session


#: :func:`trajkit.pricing.estimate_session`, once :func:`_read_with` first needed it.
_estimate_session: Callable[[Session], None] | None = None


def _load_estimate() -> Callable[[Session], None]:
    global _estimate_session
    from .pricing import estimate_session

    _estimate_session = estimate_session
    return estimate_session


def root_for(path: str | os.PathLike, format: str) -> str:
    """The root of the ``format`` run that ``path`` is (or is inside), as
    that format alone detects it; ``path`` itself when it does not match.
    For callers that name a format but accept any path inside a run (the
    CLI's ``--format``); :func:`read` with a named format does no detection."""
    get_format(format)
    det = detect(path, only=[format])
    if det.match is None:
        return os.fspath(path)
    return str(det.match.root) + (f"#{det.member}" if det.member is not None else "")


def read(path: str | os.PathLike, format: str | None = None, options: ReadOptions | None = None, *, _listed: bool = False,
         detection: Detection | None = None) -> Session:
    """Detect (unless ``format`` is named) and read the run at ``path``.

    With ``format`` named there is no detection at all: ``path`` is read as
    that format's root. Raises :class:`DetectionError` only when no format
    matches, the match is ambiguous or the named format is unknown; bad data
    inside the run becomes diagnostics, and so does a reader that raises
    (``read.format-failed``).

    ``detection``: what :func:`members_detected` found at this very path
    (``detect(path, decide_only=True)``), used instead of detecting again;
    one made for another path is ignored.
    """
    options = options or ReadOptions()
    if isinstance(path, Path) and "#" not in str(path):
        member = None  # what split_member says of it, keeping the Path (no second one made)
    else:
        path, member = split_member(path)
    if member is not None:
        options = dataclasses.replace(options, member=member)
    p = _abs_path(path)
    if format is not None:
        fmt = get_format(format)
        options = _one_member(fmt, p, options, check=not _listed)
        session = _read_with(fmt, p, options)
        session.diagnostics.extend(load_problems())
        _flag_undecodable_names(session)
        return session
    if detection is not None and member is None and detection.member is None and detection.path == str(p):
        det = detection
    else:
        det = detect(p, decide_only=True)
    if det.format is None or det.match is None:
        if not _fs.exists(p):
            raise DetectionError(f"{p}: no such file or directory")
        raise DetectionError(
            f"{p}: no known format matches (known: {', '.join(f.name for f in formats())}); "
            "try `trajkit detect --why`"
        )
    if det.ambiguous:
        tied = sorted({c.format for c in det.considered if c.outcome == "match" and c.priority == det.format.priority})
        raise DetectionError(f"{p}: ambiguous, several formats match equally well: {', '.join(tied)}; name one with --format")
    if det.match.hint is not None:
        options = _with_hint(options, det.match.hint)
    root = det.match.root
    options = _one_member(det.format, root if isinstance(root, Path) else Path(root), options, check=not _listed)
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
    _flag_undecodable_names(session)
    return session


def _with_hint(options: ReadOptions, hint: Any) -> ReadOptions:
    """``dataclasses.replace(options, hint=hint)``, made directly: ``replace``
    asks every field by name and checks the class, some 4 us of every detected
    read (``tests/test_detect_once.py`` checks the two agree field by field)."""
    if options.__class__ is not ReadOptions:  # a subclass may add fields: the general route
        return dataclasses.replace(options, hint=hint)
    return ReadOptions(options.max_file_bytes, options.view, options.tz, options.steps, hint, options.member)


def list_members(fmt: Format, root: Path, options: ReadOptions) -> list[str]:
    """``fmt.members`` of ``root`` (``[]`` for a format that holds one session
    per root, or a lister that raised: the reader then reports the problem)."""
    if fmt.members is None:
        return []
    try:
        ids = fmt.members(root, options)
    except Exception:  # a lister must not take the read down; read() reports what is wrong
        return []
    return [str(i) for i in ids] if isinstance(ids, (list, tuple)) else []


def _one_member(fmt: Format, root: Path, options: ReadOptions, check: bool = True) -> ReadOptions:
    """``options`` naming the one session to read in ``root``: as given; the
    only member of a one-session container; for a container of several,
    :class:`DetectionError` listing how to name one (``read`` never guesses).
    A named member must be one the container lists (unless ``check`` is off:
    :func:`read_all` names only listed ones)."""
    if options.member is not None:
        if fmt.members is None:
            raise DetectionError(f"{root}: a {fmt.name} run holds one session; #{options.member} names nothing in it")
        if check:
            ids = list_members(fmt, root, options)
            if options.member not in ids:
                shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
                raise DetectionError(f"{root}: no session {options.member!r} in it; it holds {len(ids)}: {shown or 'none'}")
        return options
    if fmt.members is None:
        return options
    ids = list_members(fmt, root, options)
    if len(ids) == 1:
        return dataclasses.replace(options, member=ids[0])
    if len(ids) > 1:
        shown = ", ".join(f"{root}#{i}" for i in ids[:3]) + (", ..." if len(ids) > 3 else "")
        raise DetectionError(
            f"{root}: holds {len(ids)} {fmt.name} sessions; name one as PATH#ID ({shown}) "
            "or read them all (trajkit.read_all; the CLI verbs run over every one)"
        )
    return options


def members(path: str | os.PathLike, format: str | None = None, options: ReadOptions | None = None) -> list[str]:
    """The addresses (``ROOT#ID``) of the sessions in the container at
    ``path``; ``[path]`` when it holds one session or names one already.
    Raises :class:`DetectionError` as :func:`read` does when no format matches."""
    return members_detected(path, format, options)[0]


def members_detected(path: str | os.PathLike, format: str | None = None,
                     options: ReadOptions | None = None) -> tuple[list[str], Detection | None]:
    """:func:`members`, and the detection made to answer it (None when
    ``format`` or a member is named): ``read(path, detection=...)`` reads the
    one session at ``path`` without detecting it a second time."""
    options = options or ReadOptions()
    raw, member = split_member(path)
    det = None
    if member is not None:
        return [os.fspath(path)], None
    if format is not None:
        fmt, root = get_format(format), _abs_path(raw)
    else:
        det = detect(raw, decide_only=True)
        if det.format is None or det.match is None:
            p = _abs_path(raw)
            if not _fs.exists(p):
                raise DetectionError(f"{p}: no such file or directory")
            raise DetectionError(f"{p}: no known format matches; try `trajkit detect --why`")
        fmt, root = det.format, Path(det.match.root)
    ids = list_members(fmt, root, options)
    if not ids:
        return [os.fspath(path)], det
    return [f"{root}#{i}" for i in ids], det


def read_all(path: str | os.PathLike, format: str | None = None, options: ReadOptions | None = None) -> Iterator[Session]:
    """Every session at ``path``: each member of a container, one after
    the other (read lazily), or the one session :func:`read` gives."""
    addresses = members(path, format=format, options=options)
    listed = len(addresses) > 1 or addresses[0] != os.fspath(path)
    for address in addresses:
        yield read(address, format=format, options=options, _listed=listed)


def steps_per_view(root: str | os.PathLike, format_name: str, options: ReadOptions | None = None) -> dict[str, Any]:
    """The step count under every on-disk view the run at ``root`` has
    (``trajkit steps --all-views``).

    A format with several views declares ``Format.views(root)``; each present
    view is read on its own. A format with one view reports just it.
    """
    fmt = get_format(format_name)
    options = options or ReadOptions()
    out: dict[str, Any] = {}
    names = fmt.views(Path(root)) if fmt.views is not None else [None]
    for name in names:
        opts = ReadOptions(max_file_bytes=options.max_file_bytes, view=name, tz=options.tz)
        s = _read_with(fmt, Path(root), opts)
        out[s.view or name or "default"] = {
            "step_count": len(s.steps),
            "event_count": len(s.events),
            "path": s.metadata.get("view_path"),
            "actions_without_observation": s.metadata.get("actions_without_observation", []),
        }
    return out


def _flag_undecodable_names(session: Session) -> None:
    """One ``path.not-utf8`` warning when a path the run was read from is not
    valid UTF-8 (Python holds such bytes as lone surrogates): outputs show
    those bytes escaped (``\\udcff``), so the name printed is not the name on disk."""
    search = has_surrogate
    joined = "\0".join([session.source_path or ""] + [f.path for f in session.files])
    if not search(joined):
        return  # the common case: an ASCII scan in C, else one UTF-8 encode
    bad = [f.path for f in session.files if search(f.path)]
    if search(session.source_path or ""):
        bad.insert(0, session.source_path)
    if bad:
        session.diagnostics.append(
            Diagnostic(
                "path.not-utf8",
                f"{len(bad)} path(s) are not valid UTF-8; they are shown with \\udcXX escapes for the undecodable bytes",
                WARNING,
                file=bad[0],
            )
        )
