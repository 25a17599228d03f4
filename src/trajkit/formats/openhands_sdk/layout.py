"""Where OpenHands SDK conversations live on disk, and what each file is.

A conversation directory holds ``base_state.json``, ``events/`` (one file per
event, ``event-<index>-<event id>.json``), and optionally ``meta.json`` (agent
server), ``observations/``, ``TASKS.json``, lease files and ``subagents/<hex>/``
child conversations in the same layout (``openhands-v1.md`` §1).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from ..._records import Record
from ...diagnostics import ERROR, WARNING, Diagnostic
from ...reading import fs
from ...reading import tree
from ...reading.probe import Probe

#: The SDK's reader regex since 1.30 (5 or more index digits; the id part as
#: the SDK accepts it). A name that does not match is skipped with a warning.
EVENT_NAME = re.compile(r"^event-(\d{5,})-([0-9a-fA-F\-]{8,})\.json$")
#: The names OpenHands Cloud's trajectory download gives event files
#: (``event_000045_<id>.json``: underscores, 6 digits), met in a bare folder.
CLOUD_EVENT_NAME = re.compile(r"^event_(\d{5,})_([0-9a-fA-F\-]{8,})\.json$")

STATE_FILE = "base_state.json"
META_FILE = "meta.json"
EVENTS_DIR = "events"
SUBAGENTS_DIR = "subagents"
OBSERVATIONS_DIR = "observations"

#: Directories never walked when looking for conversations.
SKIP_DIRS = frozenset({EVENTS_DIR, OBSERVATIONS_DIR, ".git", ".hg", ".svn", "__pycache__", "node_modules"})
#: How deep :func:`find_sessions` walks below its root.
MAX_WALK_DEPTH = 8

# Fine-grained status of a file in ``events/`` (kept in SourceFile.note).
EVENT = "event"
MALFORMED = "malformed"
GAP = "gap"
DUPLICATE = "duplicate"
BAD_NAME = "bad-name"
SIDECAR = "sidecar"
EVENT_FILE_STATUSES = (EVENT, MALFORMED, GAP, DUPLICATE, BAD_NAME, SIDECAR)


class EventFile(NamedTuple):
    """One entry of ``events/``: its name, parsed index and id (None when the
    name does not match), and its status once the scan decided (a tuple: one
    is made per event file of every read)."""

    name: str
    path: str
    index: int | None
    name_id: str | None
    status: str = EVENT


class EventScan(Record):
    """The outcome of listing ``events/`` as the SDK does: the files it reads
    in index order, and every other file with why it is not read (the lists
    default to new empty ones)."""

    __slots__ = __match_args__ = ("ordered", "others", "first_missing", "diagnostics")
    ordered: list[EventFile]
    others: list[EventFile]
    first_missing: int | None
    diagnostics: list[Diagnostic]

    def __init__(self, ordered: list[EventFile] | None = None, others: list[EventFile] | None = None,
                 first_missing: int | None = None, diagnostics: list[Diagnostic] | None = None) -> None:
        self.ordered = [] if ordered is None else ordered
        self.others = [] if others is None else others
        self.first_missing = first_missing
        self.diagnostics = [] if diagnostics is None else diagnostics


def is_conversation_dir(path: str | os.PathLike, probe: Probe | None = None) -> bool:
    """Whether ``path`` is a directory holding a conversation (its state, its
    agent-server metadata, or an ``events/`` directory of SDK event files).
    ``probe``: detection's cached view of the disk."""
    probe = probe if probe is not None else Probe()
    p = os.fspath(path)
    names = probe.listdir(p)
    if not names:
        return False
    if STATE_FILE in names and STATE_FILE in probe.scan(p)[1]:  # a file (symlinks followed), from the listing
        return True
    meta = os.path.join(p, META_FILE)
    if META_FILE in names and probe.is_file(meta) and _looks_like_meta(meta, probe):
        return True
    if EVENTS_DIR not in names:
        return False
    return any(n.startswith("event-") and n.endswith(".json") for n in probe.listdir(os.path.join(p, EVENTS_DIR)) or ())


def _looks_like_meta(path: str, probe: Probe) -> bool:
    """Whether a ``meta.json`` is the agent server's StoredConversation."""
    try:
        value = orjson.loads(probe.head(path, 1 << 20))
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and ("conversation_id" in value or ("initial_message" in value and "id" in value))


def is_bare_event_dir(path: str | os.PathLike, probe: Probe | None = None) -> bool:
    """Whether ``path`` is a *bare* folder of SDK event files: event files
    (``event-<idx>-<id>.json``, or Cloud's ``event_<idx>_<id>.json``) directly
    in it, with no ``events/`` parent and no ``base_state.json`` (a Cloud
    trajectory download unpacked, or events copied out of a conversation)."""
    probe = probe if probe is not None else Probe()
    p = os.fspath(path)
    return is_bare_listing(probe.listdir(p)) and probe.is_dir(p)


def is_bare_listing(names: Any) -> bool:
    """Whether a directory's entry names are a bare folder's (see
    :func:`is_bare_event_dir`, which lists the directory itself)."""
    if not names or STATE_FILE in names or EVENTS_DIR in names:
        return False
    return any((n.startswith("event-") and EVENT_NAME.match(n)) or (n.startswith("event_") and CLOUD_EVENT_NAME.match(n))
               for n in names)


def listing_hint(probe: Probe, root: Path) -> tuple[str, tuple[tuple[str, bool], ...]] | None:
    """What detection hands the reader of ``root`` (``ReadOptions.hint``):
    the directory's entries as detection listed them, ``(name, is a
    directory)`` in name order, so the reader does not list it again; None
    when it could not be listed."""
    r = str(root)
    names = probe.listdir(r)
    if names is None:
        return None
    dirs = probe.scan(r)[0]
    return r, tuple(sorted([(n, n in dirs) for n in names]))


def is_bare_event_name(name: str) -> bool:
    """Whether ``name`` is an event file name a bare folder holds."""
    return EVENT_NAME.match(name) is not None or CLOUD_EVENT_NAME.match(name) is not None


def conversation_dir(path: str | os.PathLike, probe: Probe | None = None) -> Path | None:
    """The conversation directory ``path`` names: itself, the directory of its
    ``base_state.json`` or ``meta.json``, the conversation of an event file or
    of a path inside ``events/`` / ``observations/``; None when there is none."""
    probe = probe if probe is not None else Probe()
    p = path if isinstance(path, Path) and path.is_absolute() else Path(os.path.abspath(os.fspath(path)))
    d = p if probe.is_dir(p) else p.parent
    if is_conversation_dir(d, probe):
        return d
    if d.name in (EVENTS_DIR, OBSERVATIONS_DIR, SUBAGENTS_DIR) and is_conversation_dir(d.parent, probe):
        return d.parent
    if is_bare_event_dir(d, probe):
        return d
    return None


def find_sessions(root: str | os.PathLike, diagnostics: list[Diagnostic] | None = None) -> list[Path]:
    """The conversation directories under ``root``, in path order.

    ``root`` may be a directory of conversations, a directory above several,
    one conversation, or a file inside one. Sub-agents belong to their parent
    and are not listed; ``events/``, ``observations/`` and version-control
    directories are not walked; symlinked directories are followed once
    (loops are cut); an unreadable directory is skipped with a diagnostic
    appended to ``diagnostics``.
    """
    diags = diagnostics if diagnostics is not None else []
    p = Path(os.path.abspath(os.fspath(root)))
    if not fs.exists(p):
        diags.append(Diagnostic("sdk.root-missing", "no such file or directory", ERROR, file=str(p)))
        return []
    conv = conversation_dir(p)
    if conv is not None:
        return [conv]
    if not fs.isdir(p):
        return []
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def walk(d: str, depth: int) -> None:
        try:
            key = tree.identity(d)  # stat'ed once for every walk of a discovery
        except OSError as e:
            diags.append(Diagnostic("sdk.dir-unreadable", f"cannot stat directory: {e.strerror or e}", WARNING, file=d))
            return
        if key in seen:
            diags.append(Diagnostic("sdk.symlink-loop", "directory already visited (symlink loop or repeat); not walked again", WARNING, file=d))
            return
        seen.add(key)
        try:
            listing = tree.folder(d)  # the folder's names, sorted and typed once for every walk of a discovery
        except OSError as e:
            # is_conversation_dir / is_bare_event_dir say no to a folder that cannot be listed
            if depth < MAX_WALK_DEPTH:
                diags.append(Diagnostic("sdk.dir-unreadable", f"cannot list directory: {e.strerror or e}", WARNING, file=d))
            return
        if _holds_conversation(d, listing):
            found.append(Path(d))
            return
        if depth >= MAX_WALK_DEPTH:
            return
        base = d if d.endswith(os.sep) else d + os.sep
        for name in listing[0]:  # the folders (symlinks followed), in name order
            if name not in SKIP_DIRS:
                walk(base + name, depth + 1)

    walk(str(p), 0)
    del walk  # it names itself (a cycle through its cell): its state goes now, not at a garbage collection
    return found


def _holds_conversation(d: str, listing: tree.Folder) -> bool:
    """``is_conversation_dir(d) or is_bare_event_dir(d)`` for a folder being
    walked, answered from its listing (:func:`trajkit.reading.tree.folder`)
    instead of a probe's: the walk asks it of every folder under its root."""
    dirs, nondirs, odd, _links = listing
    if not dirs and not nondirs:
        return False
    if STATE_FILE in nondirs and STATE_FILE not in odd:  # a file, symlinks followed
        return True
    if META_FILE in nondirs and META_FILE not in odd and _looks_like_meta(os.path.join(d, META_FILE), Probe()):
        return True
    if EVENTS_DIR in dirs or EVENTS_DIR in nondirs:
        try:
            return any(e.name.startswith("event-") and e.name.endswith(".json") for e in tree.scandir(os.path.join(d, EVENTS_DIR)))
        except OSError:  # a file named events, or a folder that cannot be listed: no event files
            return False
    if STATE_FILE in dirs or STATE_FILE in nondirs:  # named so but no file: not bare either (is_bare_listing)
        return False
    # a bare folder of event files (is_bare_listing; events/ is not here): most folders have no name
    # starting so (one search each), the rest are matched name by name
    return any(
        tree.any_starting(names, "event")  # what both event name forms start with
        and any((n.startswith("event-") and EVENT_NAME.match(n)) or (n.startswith("event_") and CLOUD_EVENT_NAME.match(n))
                for n in names)
        for names in (dirs, nondirs))


def scan_events(events_dir: str, bare: bool = False) -> EventScan:
    """List ``events/`` and decide, as the SDK does, which files are read.

    Dot-files are the SDK's sidecars (lock, length marker) and are ignored. A
    name that does not match :data:`EVENT_NAME` is ``bad-name``. Indices are
    read from 0 up to the first missing one; files past it are ``gap``; a
    second file for an index is ``duplicate`` (the first name in sort order
    is kept). ``bare``: ``events_dir`` is a bare folder (:func:`is_bare_event_dir`):
    only its event files are looked at, under either name form; its other
    entries are the conversation directory's to account for.
    """
    scan = EventScan()
    try:
        names = fs.listdir(events_dir)
    except FileNotFoundError:
        return scan
    except OSError as e:
        scan.diagnostics.append(
            Diagnostic("sdk.events-unreadable", f"cannot list events directory: {e.strerror or e}", ERROR, file=events_dir)
        )
        return scan
    by_index: dict[int, EventFile] = {}
    base = events_dir + os.sep
    match = EVENT_NAME.match
    if bare:
        names = [n for n in names if is_bare_event_name(n)]
        cloud = CLOUD_EVENT_NAME.match
        match = lambda n: EVENT_NAME.match(n) or cloud(n)  # noqa: E731
    others = scan.others
    new = tuple.__new__  # EventFile(...) without its Python-level __new__: one is made per event file
    for name in names:
        if name[0] == ".":
            others.append(EventFile(name, base + name, None, None, SIDECAR))
            continue
        m = match(name)
        if m is None:
            others.append(EventFile(name, base + name, None, None, BAD_NAME))
            continue
        idx = int(m[1])
        if idx in by_index:
            # the first name in sort order is kept, whatever order listdir gave
            ef, prev = EventFile(name, base + name, idx, m[2]), by_index[idx]
            if name < prev.name:
                by_index[idx], ef = ef, prev
            others.append(ef._replace(status=DUPLICATE))
            continue
        by_index[idx] = new(EventFile, (name, base + name, idx, m[2], EVENT))
    for ef in scan.others:
        if ef.status == BAD_NAME:
            scan.diagnostics.append(
                Diagnostic(
                    "sdk.event-bad-name",
                    "not an SDK event file name (event-<5+ digit index>-<id>.json); the SDK skips it",
                    WARNING,
                    file=ef.path,
                )
            )
        elif ef.status == DUPLICATE:
            scan.diagnostics.append(
                Diagnostic(
                    "sdk.event-duplicate-index",
                    f"a second file for index {ef.index} (kept {by_index[ef.index].name}); not read",
                    WARNING,
                    file=ef.path,
                )
            )
    n = len(by_index)
    if n and max(by_index) == n - 1:  # n distinct indices, none over n - 1: all of 0..n-1
        scan.ordered = [by_index[i] for i in range(n)]
        i = n
    else:
        i = 0
        while i in by_index:
            scan.ordered.append(by_index[i])
            i += 1
    if len(scan.ordered) != len(by_index):
        scan.first_missing = i
        for idx in sorted(by_index):
            if idx > i:
                scan.others.append(by_index[idx]._replace(status=GAP))
        n_gap = len(by_index) - len(scan.ordered)
        scan.diagnostics.append(
            Diagnostic(
                "sdk.event-gap",
                f"index {i} is missing; the SDK reads events 0..{i - 1} and ignores the {n_gap} file(s) after the gap",
                WARNING,
                file=os.path.join(events_dir, f"event-{i:05d}-*.json"),
            )
        )
    if len(scan.others) > 1:
        scan.others.sort(key=_name_of)
    return scan


def _name_of(ef: EventFile) -> str:
    return ef.name
