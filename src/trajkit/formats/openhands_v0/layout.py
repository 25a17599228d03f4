"""The trial layouts of OpenHands V0 runs and the format's sniff: where each
view lives (:func:`locate`) and which path is a V0 run (:func:`sniff`).
Light on purpose: detection imports it for every command (see the package
docstring)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..._records import Record
from ...reading import io as read_io
from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Match, Reject

NAME = "openhands-v0"

FLAT = "flat_export"
EVENTS = "events"
CACHE = "event_cache"
VIEWS = (FLAT, EVENTS, CACHE)
#: Where events come as a list held in another record (an evaluation output, a Cloud export).
HISTORY = "history"

_EVENT_FILE = re.compile(r"^(\d+)\.json$")
_SHARD_FILE = re.compile(r"^(\d+)-(\d+)\.json$")


# ---------------------------------------------------------------- layout


class Layout(Record):
    """Where each view of a trial lives.

    ``kind``: ``terminal-bench``, ``harbor``, ``agent-logs``, ``session-dir``
    or ``flat-file``. ``root``: the trial directory (or the bare session
    directory / file). ``flat_candidates``: files that may be the flat
    export. ``session_dirs``: ``<sid>/`` directories, sorted. The paths in
    the lists are text, as ``root / name`` writes them (:func:`_join`: no
    ``Path`` object per file on the read path). ``probe``: the
    cached listings the layout was found with (detection's, when it came as
    a hint), so the reader lists nothing twice (a new one when not given).
    ``rel_base``: what paths are made relative to (the root, or a bare
    file's folder), as text; set on first use. The lists default to new
    empty ones.
    """

    __slots__ = __match_args__ = ("kind", "root", "flat_candidates", "session_dirs", "metadata_files", "recordings",
                                  "probe", "rel_base")
    kind: str
    root: Path
    flat_candidates: list[str]
    session_dirs: list[str]
    metadata_files: list[tuple[str, str]]
    recordings: list[str]
    probe: Probe
    rel_base: str | None

    def __init__(self, kind: str, root: Path, flat_candidates: list[str] | None = None,
                 session_dirs: list[str] | None = None, metadata_files: list[tuple[str, str]] | None = None,
                 recordings: list[str] | None = None, probe: Probe | None = None, rel_base: str | None = None) -> None:
        self.kind = kind
        self.root = root
        self.flat_candidates = [] if flat_candidates is None else flat_candidates
        self.session_dirs = [] if session_dirs is None else session_dirs
        self.metadata_files = [] if metadata_files is None else metadata_files
        self.recordings = [] if recordings is None else recordings
        self.probe = Probe() if probe is None else probe
        self.rel_base = rel_base

    def ls(self, d: str) -> list[str]:
        """The names in directory ``d``, listed once per layout; none, without
        a listing that would fail, when ``d``'s folder was listed without a
        folder of that name (a session directory's missing ``events/`` or
        ``event_cache/``: a trial mostly lacks one of the two)."""
        probe = self.probe
        if not probe.listed(d):
            i = d.rfind(os.sep)
            if 0 < i < len(d) - 1 and probe.listed(d[:i]) and d[i + 1:] not in probe.scan(d[:i])[0]:
                return []
        return probe.listdir(d) or []


def _join(d: str, name: str) -> str:
    """``str(Path(d) / name)`` for a path ``d`` written as ``str(Path)`` writes
    one (no trailing separator but the root's) and a plain ``name``."""
    if d == ".":
        return name
    return d + name if d[-1:] == os.sep else d + os.sep + name


def _session_dirs(parent: str, probe: Probe) -> list[str]:
    """The ``<sid>/`` directories under ``parent`` that hold events/ or event_cache/."""
    out = []
    for name in sorted(probe.scan(parent)[0]):
        d = _join(parent, name)
        sub = probe.scan(d)[0]
        if "events" in sub or "event_cache" in sub:
            out.append(d)
    return out


def _json_files(d: str, probe: Probe) -> list[str]:
    """The ``*.json`` entries of ``d`` that are not directories: regular files,
    and special files or dangling links named like one (so the reader can say
    why they are not read instead of passing over them in silence)."""
    dirs, _files = probe.scan(d)
    return [_join(d, n) for n in sorted(probe.listdir(d) or ()) if n.endswith(".json") and not n.startswith(".") and n not in dirs]


def locate(root: Path, probe: Probe | None = None) -> Layout | None:
    """The trial layout rooted at ``root``, or None when it is not one."""
    probe = probe if probe is not None else Probe()
    r = probe.fspath(root)
    st = probe.stat(r)
    if st is not None and stat.S_ISREG(st.st_mode):
        return Layout("flat-file", root, flat_candidates=[r], probe=probe)
    dirs, files = probe.scan(r)
    if not dirs and not files and not probe.is_dir(r):
        return None
    listed = probe.listdir(r) or ()
    meta = [(n, _join(r, n)) for n in ("results.json", "result.json", "config.json") if n in listed and n not in dirs]
    if "sessions" in dirs:
        sess = _join(r, "sessions")
        sdirs, sfiles = probe.scan(sess)
        flats = _json_files(sess, probe)
        sessions = _session_dirs(_join(sess, "sessions"), probe) if "sessions" in sdirs else []
        if flats or sessions:
            recs = [_join(sess, n) for n in ("agent.cast", "agent.log", "tests.cast", "tests.log") if n in sfiles]
            lay = Layout("terminal-bench", root, flats, sessions, meta, recs, probe=probe)
            if not flats and "agent-logs" in dirs:
                lay.flat_candidates = _json_files(_join(r, "agent-logs"), probe)
            return lay
    if "agent" in dirs:
        agent = _join(r, "agent")
        adirs, afiles = probe.scan(agent)
        has_flat = "openhands.trajectory.json" in afiles or (
            "openhands.trajectory.json" not in adirs and "openhands.trajectory.json" in (probe.listdir(agent) or ())
        )
        sessions = _session_dirs(_join(agent, "sessions"), probe) if "sessions" in adirs else []
        if has_flat or sessions:
            recs = [_join(agent, n) for n in ("openhands.txt", "trajectory.json") if n in afiles]
            return Layout("harbor", root, [_join(agent, "openhands.trajectory.json")] if has_flat else [], sessions, meta, recs, probe=probe)
    if "agent-logs" in dirs:
        logs = _join(r, "agent-logs")
        flats = [p for p in _json_files(logs, probe) if _looks_like_v0_list(p, probe)]
        if flats:
            return Layout("agent-logs", root, flats, [], meta, probe=probe)
    if "events" in dirs or "event_cache" in dirs:
        return Layout("session-dir", root, [], [r], meta, probe=probe)
    if "results.json" in files and ("panes" in dirs or "sessions" in dirs) and _is_tb_trial_results(_join(r, "results.json"), probe):
        # a terminal-bench trial with no event stream: its own verdict, panes and recordings only
        sess, panes = _join(r, "sessions"), _join(r, "panes")
        sess_files = probe.scan(sess)[1] if "sessions" in dirs else set()
        recs = [_join(sess, n) for n in ("agent.cast", "agent.log", "tests.cast", "tests.log") if n in sess_files]
        recs += [_join(panes, n) for n in sorted(probe.scan(panes)[1]) if n.endswith(".txt")] if "panes" in dirs else []
        recs += [_join(r, "commands.txt")] if "commands.txt" in files else []
        return Layout("terminal-bench", root, [], [], meta, recs, probe=probe)
    return None


#: A terminal-bench trial's own ``results.json`` names the trial and its verdict.
_TB_TRIAL_KEYS = ("trial_name", "failure_mode", "is_resolved")


def _is_tb_trial_results(path: str, probe: Probe) -> bool:
    """Whether ``path`` is one terminal-bench trial's ``results.json`` (an
    object with ``trial_name`` and ``failure_mode`` or ``is_resolved``; the
    run's aggregate ``results.json`` lists trials under ``results``)."""
    head = probe.head(path, 1 << 20)
    if b'"trial_name"' not in head or (b'"failure_mode"' not in head and b'"is_resolved"' not in head):
        return False
    value, _ = read_io.load_json(path, 1 << 20)
    return isinstance(value, dict) and "trial_name" in value and any(k in value for k in _TB_TRIAL_KEYS[1:])


_V0_LIST_HEAD = re.compile(rb'\s*\[\s*(?:\]|\{\s*"id"\s*:\s*-?\d)')


def _looks_like_v0_list(path: str | Path, probe: Probe) -> bool:
    """Whether a file starts like a V0 event list: ``[`` then ``]`` or an
    object whose first member is an integer ``id`` (the serializer always
    writes ``id`` first)."""
    head = probe.head(path, 256)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    return _V0_LIST_HEAD.match(head) is not None


def _trial_of_session_dir(d: Path, probe: Probe) -> Path:
    """The trial around a ``<sid>/`` session directory, or the directory itself."""
    parent = d.parent
    if parent.name == "sessions":
        grand = parent.parent
        if grand.name == "sessions" and probe.is_dir(grand):
            return grand.parent  # terminal-bench: <trial>/sessions/sessions/<sid>
        if grand.name == "agent":
            return grand.parent  # harbor: <trial>/agent/sessions/<sid>
    return d


def _root_for(cand: Path, probe: Probe) -> tuple[Path, str, str] | tuple[Path, str, str, Layout] | None:
    """Map a candidate path to the root to read, its strength and why."""
    if probe.is_file(cand):
        if not cand.name.endswith(".json"):
            return None
        parent = cand.parent
        if _EVENT_FILE.match(cand.name) and parent.name == "events":
            return _trial_of_session_dir(parent.parent, probe), STRONG, "an event file of a session directory"
        if _SHARD_FILE.match(cand.name) and parent.name == "event_cache":
            return _trial_of_session_dir(parent.parent, probe), STRONG, "a page-cache shard of a session directory"
        # each match hands its layout on, so the reader lists and reads nothing detection did
        if cand.name == "openhands.trajectory.json" and parent.name == "agent" and (lay := locate(parent.parent, probe)):
            return parent.parent, STRONG, "the flat export of a harbor trial", lay
        if parent.name in ("sessions", "agent-logs") and (lay := locate(parent.parent, probe)) is not None and _looks_like_v0_list(cand, probe):
            return parent.parent, STRONG, f"the flat export in {parent.name}/ of a trial", lay
        if _looks_like_v0_list(cand, probe):
            return cand, STRONG, "a bare flat export (a JSON list of V0 events)", Layout("flat-file", cand, flat_candidates=[probe.fspath(cand)], probe=probe)
        return None
    if not probe.is_dir(cand):
        return None
    if cand.name in ("events", "event_cache"):
        names = probe.listdir(cand) or []
        pat = _EVENT_FILE if cand.name == "events" else _SHARD_FILE
        if any(pat.match(n) for n in names):
            return _trial_of_session_dir(cand.parent, probe), STRONG, f"the {cand.name}/ directory of a session"
        return None
    lay = locate(cand, probe)
    if lay is None:
        if cand.name == "sessions" and locate(cand.parent, probe) is not None:
            return cand.parent, STRONG, "the sessions/ directory of a terminal-bench trial"
        if cand.name == "agent" and locate(cand.parent, probe) is not None:
            return cand.parent, STRONG, "the agent/ directory of a harbor trial"
        return None
    if lay.kind == "session-dir":
        sd = cand
        base = str(sd) + os.sep
        has_events = any(_EVENT_FILE.match(n) for n in lay.ls(base + "events"))
        has_cache = not has_events and any(_SHARD_FILE.match(n) for n in lay.ls(base + "event_cache"))
        if not (has_events or has_cache):
            return None  # no <id>.json / <a>-<b>.json: not a V0 session (an SDK conversation, say)
        return _trial_of_session_dir(sd, probe), STRONG, "a session directory with events/ or event_cache/"
    if lay.kind == "terminal-bench":
        if any(_looks_like_v0_list(p, probe) for p in lay.flat_candidates) or lay.session_dirs:
            return cand, STRONG, "a terminal-bench trial (sessions/)", lay
        if not lay.flat_candidates:
            return cand, WEAK, "a terminal-bench trial with no event stream (results.json, panes, recordings)", lay
        return cand, WEAK, "a terminal-bench trial whose sessions/ holds no V0 stream"
    return cand, STRONG, f"a {lay.kind} trial", lay


def sniff(probe: Probe, cand: Path, fingerprint: str) -> Match | Reject:
    """Whether ``cand`` is (or is inside) a V0 trial, session or flat export."""
    r = _root_for(cand, probe)
    if r is None:
        if probe.is_file(cand):
            return Reject("not a V0 event file, page-cache shard or flat export (a JSON list of V0 events)")
        return Reject("no V0 layout: no sessions/, agent/ or agent-logs/ of a trial, no events/ of <id>.json or event_cache/ shards")
    return Match(root=r[0], fingerprint=fingerprint, strength=r[1], reason=r[2], hint=r[3] if len(r) > 3 else None)


# ---------------------------------------------------------------- views


def views_present(root: Path, lay: Layout | None = None) -> list[str]:
    """The views this trial has, in preference order."""
    lay = lay or locate(root)
    if lay is None:
        return []
    out = []
    if lay.flat_candidates:
        out.append(FLAT)
    if not lay.session_dirs:  # a flat export alone (a bare file): no folder to list
        return out
    bases = [os.fspath(d) + os.sep for d in lay.session_dirs]  # as d / "events" writes it, without the Paths
    if any(_has_files(lay.ls(b + "events"), _EVENT_FILE) for b in bases):
        out.append(EVENTS)
    if any(_has_files(lay.ls(b + "event_cache"), _SHARD_FILE) for b in bases):
        out.append(CACHE)
    return out


def _has_files(names: list[str], pat: re.Pattern) -> bool:
    return any(pat.match(n) for n in names)
