"""opencode's own session records: the ``opencode`` format.

Four sources hold the same sessions (``shared/formats/opencode.md`` §5, §8):
the SQLite store (``opencode.db`` or ``opencode-<channel>.db`` under
``$XDG_DATA_HOME/opencode``, 1.2+), the legacy ``storage/`` tree (up to 1.1),
``opencode export`` JSON and the ``opencode run --format json`` event stream.
A store or tree holds many sessions (``Format.members``: its top-level
sessions): one is addressed ``PATH#SESSION_ID`` (``opencode.db#ses_abc``,
read with ``ReadOptions.member``), and the verbs run over each. Sub-sessions
(``parentID``) are read with their parent and tied to the ``task`` call that
spawned them; one can also be named on its own (``opencode.db#<child id>``).

Public face: :data:`FORMAT`, :func:`read`, :func:`members`,
:func:`find_sessions`, :func:`summarize`, :func:`rebuild_context`, :func:`sniff`.
This module holds only what detection needs (``sniff`` and ``FORMAT``): the
reader (:mod:`.reader`, :mod:`.native`, :mod:`.build`, :mod:`.db`, which
imports ``sqlite3``), the ``find_sessions`` walk (:mod:`.walk`, which loads
the reader only when it finds a store or tree) and the context rebuild load
on first use.

Diagnostic codes (see ``docs/diagnostics.md``, section opencode): those of
:mod:`.db`, :mod:`.native` and :mod:`.reader`, plus ``opencode.tool-not-run``,
``opencode.unknown-part``, ``opencode.usage-mismatch``,
``opencode.child-unlinked``, ``opencode.no-session``,
``opencode.stale-copy``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...reading.probe import Probe
from ...registry import STRONG, WEAK, Format, Match, Reject, lazy
from ...vocab.opencode import OPENCODE_TOOLS
from .layout import _head_kind, _is_db_name, _is_storage, _looks_like_foreign_store, _looks_like_store, _store_in

NAME = "opencode"
HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "opencode"


# ---------------------------------------------------------------- recognising

#: The sniff's constant answers (a Reject is immutable: made once, not per file asked about).
_NOT_OURS = Reject("not an opencode store, export or event stream")
_NO_STORE = Reject("no opencode store or storage tree here")
_NEITHER = Reject("not a file or folder")


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    """Claim a store, a legacy tree (from any file or folder inside it), an
    export or an event stream, and a data folder holding a store."""
    name = candidate.name
    p = str(candidate)  # the probe's key, made once (each probe call would make it again from the Path)
    if probe.is_file(p):
        if name.endswith((".json", ".jsonl", ".txt", ".log")):  # no store's or journal's name ends so
            kind = _head_kind(probe, p)
            if kind == "events":
                return Match(candidate, fingerprint, STRONG, "JSON lines of opencode run events (type, sessionID, part)")
            if kind == "export":
                return Match(candidate, fingerprint, STRONG, "an opencode export document ({info, messages: [{info, parts}]})")
            return _NOT_OURS
        if _is_db_name(name):
            if _looks_like_store(probe, candidate):
                return Match(candidate, fingerprint, STRONG, f"{name}: an SQLite file named like opencode's store")
            return Reject(f"{name} is not an SQLite file")
        for side in ("-wal", "-shm") if name.endswith((".db-wal", ".db-shm")) else ():
            if name.endswith(".db" + side) and _is_db_name(name[: -len(side)]):
                db = candidate.with_name(name[: -len(side)])
                if probe.is_file(db):
                    return Match(db, fingerprint, STRONG, f"{name} is the journal of {db.name}")
                return Reject(f"{name}: no {db.name} beside it")
        if name.endswith(".db"):
            if _looks_like_foreign_store(probe, candidate):
                return Match(candidate, fingerprint, WEAK, f"{name}: an SQLite file with opencode's session tables")
            return Reject(f"{name} does not hold opencode's tables")
        return _NOT_OURS
    if probe.is_dir(p):
        if name == "storage" or fingerprint.split("/", 1)[0] in ("session", "message", "part", "project", "todo", "session_share"):
            if _is_storage(probe, candidate):
                return Match(candidate, fingerprint, STRONG, "a legacy opencode storage/ tree (session/, message/, part/)")
        db = _store_in(probe, candidate)
        if db is not None:
            return Match(db, fingerprint, STRONG, f"an opencode data folder holding {db.name}")
        storage = os.path.join(p, "storage")  # str(candidate / "storage"), without the Path unless it matches
        if _is_storage(probe, storage) if probe.is_dir(storage) else False:
            return Match(candidate / "storage", fingerprint, STRONG, "an opencode data folder holding a storage/ tree")
        return _NO_STORE
    return _NEITHER


#: The capabilities, imported on first call.
read = lazy("trajkit.formats.opencode.reader:read")
members = lazy("trajkit.formats.opencode.reader:members")
find_sessions = lazy("trajkit.formats.opencode.walk:find_sessions")
summarize = lazy("trajkit.formats.opencode.reader:summarize")
#: What the model saw at each model call, as far as the record allows (see :mod:`.context`).
rebuild_context = lazy("trajkit.formats.opencode.context:rebuild_context")


FORMAT = Format(
    name=NAME,
    description="opencode sessions: the SQLite store (opencode*.db), the legacy storage/ tree, `opencode export` JSON, "
                "`opencode run --format json` events",
    fingerprints=(
        "opencode*.db", "opencode*.db-wal", "opencode*.db-shm", "*.db",
        "session/*/*.json", "message/*/*.json", "part/*/*.json", "project/*.json", "todo/*.json", "session_share/*.json",
        "storage/session", "*.json", "*.jsonl",
    ),
    priority=45,
    sniff=sniff,
    read=read,
    find_sessions=find_sessions,
    summarize=summarize,
    context=rebuild_context,
    members=members,
    tools=OPENCODE_TOOLS,
    # opencode's Global.Path.data: $XDG_DATA_HOME/opencode (xdg-basedir), default ~/.local/share/opencode
    homes=("${XDG_DATA_HOME:-~/.local/share}/opencode",),
    examples=tuple(str(FIXTURES / n) for n in (
        "opencode.db", "storage", "ses_dd796ed30ffeT1G6Sfj5NJHY56.json", "opencode.jsonl", "letta-tool-calls.json", "letta-cleanup.json",
    )),
)

__all__ = ["FORMAT", "read", "members", "find_sessions", "summarize", "rebuild_context", "sniff"]
