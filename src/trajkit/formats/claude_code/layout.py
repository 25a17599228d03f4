"""Where Claude Code's files are, and what a file holds (``claude-code.md`` §1).

A session is its transcript ``<project>/<session id>.jsonl`` plus the
companion folder ``<project>/<session id>/`` (``subagents/agent-*.jsonl``
with ``.meta.json`` sidecars, ``subagents/workflows/<run id>/``,
``workflows/``) and, in the 2.0.x layout, the project-level
``<project>/agent-<id>.jsonl`` files whose rows name the session. A
``claude -p --output-format stream-json`` log is a session on its own
(Harbor keeps it as ``<trial>/agent/claude-code.txt``).

Every path inside a session maps to its main transcript
(:func:`session_root`), so a sub-agent file is read with the session that
spawned it and never orphaned.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson
from orjson import JSONDecodeError as _DecodeError
from orjson import loads as _loads

from ...reading import tree as _tree
from ...reading.io import head as _read_head
from ...reading.probe import HEAD_LINES, NOT_DECODED, HeadLines, Probe

TRANSCRIPT = "transcript"
STREAM = "stream-json"

#: Bytes of a file sniffed (whole lines only: the identifying line can be kilobytes in).
SNIFF_BYTES = 1 << 18
#: Lines looked at when sniffing.
SNIFF_LINES = 64
assert SNIFF_LINES <= HEAD_LINES  # the probe's shared lines hold every line looked at

STREAM_NAME = "claude-code.txt"
AGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")
#: Row types only Claude Code transcripts write (a file of nothing else is still one).
TRANSPORT_TYPES = frozenset({
    "summary", "file-history-snapshot", "queue-operation", "progress", "attachment", "mode", "permission-mode",
    "last-prompt", "pr-link", "custom-title", "tag", "agent-name",
})


def kind_of_lines(data: bytes) -> tuple[str | None, str]:
    """What JSON lines hold: ``transcript``, ``stream-json`` or None, and why.

    Only whole lines are looked at (a cut last line is skipped)."""
    return kind_of_head(HeadLines(data))


def kind_of_head(head: HeadLines) -> tuple[str | None, str]:
    """:func:`kind_of_lines` of a head already cut into lines (:meth:`Probe.lines`,
    whose decoded lines other formats' sniffs share)."""
    return _kind_from(head, 0, 0, 0)


def _kind_from(head: HeadLines, start: int, seen: int, transport: int) -> tuple[str | None, str]:
    # kind_of_head from line `start` on, `seen` object lines looked at before it, `transport` of them transport lines
    value = head.value
    span = head.span  # lines found as they are asked for: most files decide on their first line
    for i in range(start, SNIFF_LINES):
        got = span(i)
        if got is None:
            break
        if got[2] and i and got[0] < got[1]:
            break  # a cut last line (the head's last part, after a newline, with no newline of its own)
        row = value(i)
        if row is NOT_DECODED:
            continue
        if not isinstance(row, dict):
            return None, "a line is no JSON object"
        seen += 1
        said = _row_kind(row)
        if said.__class__ is tuple:
            return said  # type: ignore[return-value]
        transport += said  # type: ignore[operator]
    if transport and transport == seen:
        return TRANSCRIPT, "only Claude Code transport lines (snapshots, summaries, queue operations)"
    return None, "no user/assistant line with a message, no system/init line"


def _row_kind(row: dict) -> tuple[str | None, str] | int:
    """What one JSON object line says: the file's kind and why when it decides,
    else 1 for a Claude Code transport line and 0 for a line that says nothing."""
    t = row.get("type")
    if t == "system" and row.get("subtype") == "init" and ("claude_code_version" in row or "session_id" in row):
        return STREAM, 'a {"type": "system", "subtype": "init"} line with claude_code_version / session_id'
    if t in ("user", "assistant") and isinstance(row.get("message"), dict) and "content" in row["message"]:
        if "payload" in row or "sessionId" in row and "projectHash" in row:
            return None, "user/assistant lines in another harness's envelope"
        if "session_id" in row or "parent_tool_use_id" in row or "tool_use_result" in row:
            return STREAM, "user/assistant lines with snake_case session_id / parent_tool_use_id"
        return TRANSCRIPT, f"a {t!r} line with a message object holding content"
    if t == "result" and ("modelUsage" in row or "total_cost_usd" in row or "num_turns" in row):
        return STREAM, "a result line with modelUsage / total_cost_usd"
    if t in TRANSPORT_TYPES and ("uuid" in row or "sessionId" in row or "leafUuid" in row or "messageId" in row):
        return 1
    if t == "system" and "sessionId" in row and "uuid" in row:
        return 1
    if t not in TRANSPORT_TYPES and t not in ("system", "rate_limit_event"):
        return None, f"a line of type {t!r}"
    return 0


def kind_of_bytes(data: bytes) -> tuple[str | None, str]:
    """:func:`kind_of_lines` of a head no other sniff shares (a walk's own
    read): the first line is decoded here, without cutting the head into
    :class:`HeadLines`, and most files decide on it; the others go on from the second line."""
    nl = data.find(b"\n")
    line = (data if nl < 0 else data[:nl]).strip()  # what HeadLines.value(0) decodes
    if line[:1] == b"{":
        try:
            row = _loads(line)
        except _DecodeError:
            return _kind_from(HeadLines(data), 1, 0, 0)  # line 0 does not decode: it says nothing
        if not isinstance(row, dict):
            return None, "a line is no JSON object"
        said = _row_kind(row)
        if said.__class__ is tuple:
            return said  # type: ignore[return-value]
        return _kind_from(HeadLines(data), 1, 1, said)  # type: ignore[arg-type]
    return _kind_from(HeadLines(data), 1, 0, 0)


#: The name of :func:`file_kind`'s answers kept per folder (:func:`~trajkit.reading.tree.file_answers`).
FILE_KIND = "claude-code.file_kind"


def file_kind(path: str | os.PathLike, probe: Probe) -> tuple[str | None, str]:
    """What the file at ``path`` holds (see :func:`kind_of_lines`): its
    first 64 KiB, and up to :data:`SNIFF_BYTES` when no whole line there decides.
    Inside a discovery, decided once per file (:func:`~trajkit.reading.tree.file_answers`):
    ``find_sessions``, the sniff of its folder and its own sniff all ask."""
    p = os.fspath(path)
    folder, name = os.path.split(p)
    known = _tree.file_answers(folder, FILE_KIND)
    if known is None:
        return _file_kind(p, probe)
    got = known.get(name)
    if got is None:
        got = known[name] = _file_kind(p, probe)
    return got  # type: ignore[return-value]


def file_kind_in(base: str, name: str, known: dict[str, object] | None, probe: Probe) -> tuple[str | None, str]:
    """:func:`file_kind` of ``base + name`` (``base`` a folder ending in a
    separator) given the folder's answers (``tree.file_answers(folder, FILE_KIND)``,
    looked up once per folder by a walk asking of each of its files)."""
    if known is None:
        return _file_kind(base + name, probe)
    got = known.get(name)
    if got is None:
        got = known[name] = _file_kind(base + name, probe)
    return got  # type: ignore[return-value]


def kind_of_listed(p: str, regular: bool, probe: Probe, entry: object = None) -> tuple[str | None, str]:
    """:func:`file_kind` of a file its walk's folder listing holds, without
    the probe's head cache (for a walk that would drop the head unshared):
    one read, and the first line decoded without cutting the head into lines
    (:func:`kind_of_bytes`). ``regular``: the listing says a regular file,
    no symlink (no ``fstat``). Empty heads and heads of 64 KiB or more take
    :func:`file_kind`'s long way. ``entry``: the file's shared listing entry,
    which keeps the head's first bytes (:func:`~trajkit.reading.tree.note_head`,
    as :meth:`Probe.head` does) for the walks after this one."""
    data = _read_head(p, 1 << 16, regular)
    if entry is not None:
        _tree.note_head(entry, data)
    if len(data) == 1 << 16 or not data or data.isspace():
        return _file_kind(p, probe)
    return kind_of_bytes(data)


def _file_kind(p: str, probe: Probe) -> tuple[str | None, str]:
    size = 1 << 16
    data = probe.head(p, size)
    if len(data) == size:
        kind, why = kind_of_head(probe.lines(p, size))
        if kind is not None or why.startswith("a line"):
            return kind, why
        size = SNIFF_BYTES
        data = probe.head(p, size)
    if not data or data.isspace():  # what `not data.strip()` says, without copying the head
        st = probe.stat(p)
        if st is not None and st.st_size == 0 and p.endswith(".jsonl") and _looks_like_session_name(Path(p)):
            return TRANSCRIPT, "an empty session file named like one"
        return None, "empty file"
    return kind_of_head(probe.lines(p, size))  # the lines other sniffs of this file share


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _looks_like_session_name(p: Path) -> bool:
    return bool(_UUID.match(p.stem)) or bool(AGENT_FILE.match(p.name))


def companion_owner(path: str | os.PathLike, probe: Probe) -> Path | None:
    """The main transcript a path inside a session's companion folder
    belongs to: the nearest ancestor ``X`` (up to five levels) with a file
    ``X.jsonl`` beside it and a ``subagents`` or ``workflows`` folder in it.
    Asked once per folder and probe (detection asks it of every file in a folder)."""
    p = os.fspath(path)  # strings, not Path objects: detection asks this of every file it walks past
    key = (COMPANION_OWNER, p)
    got = probe.memo.get(key, probe)  # the probe itself: not asked yet
    if got is probe:
        # inside a discovery, kept for all its probes (one per folder walked) as long as the listing around it
        parent, name = os.path.split(p)
        shared = _tree.file_answers(parent, COMPANION_OWNER) if name else None
        if shared is None:
            got = _companion_owner(p, probe)
        else:
            got = shared.get(name, probe)
            if got is probe:
                got = shared[name] = _companion_owner(p, probe)
        probe.memo[key] = got
    return got


#: The name of :func:`companion_owner`'s answers kept per folder for a discovery (by the sub-folder's name).
COMPANION_OWNER = "claude-code.companion_owner"


#: The name of :func:`_companion_at`'s answers kept per folder for a discovery
#: (:func:`~trajkit.reading.tree.file_answers` of the folder around, by the sub-folder's name).
COMPANION_OF = "claude-code.companion_of"


def _companion_owner(p: str, probe: Probe) -> Path | None:
    memo = probe.memo
    sep = os.sep
    sharing = True  # inside a discovery (tree.file_answers gives a dict): asked of the first folder, the same for all
    for _ in range(6):
        i = p.rfind(sep)
        if i > 0 and p[i - 1] != sep:  # what os.path.dirname / basename give, without their Python-level steps
            parent, name = p[:i], p[i + 1:]
        else:
            parent = os.path.dirname(p)
            if parent == p:
                return None
            name = os.path.basename(p)
        # each folder's own answer is kept: the folders of one walk share their ancestors
        key = (COMPANION_OF, p)
        main = memo.get(key, probe)
        if main is probe:
            # and inside a discovery, kept for all its probes (one per folder walked) as long as the listing around
            # it: the tree is taken as it was first seen, so the answer does not depend on which probe asks
            shared = _tree.file_answers(parent, COMPANION_OF) if sharing else None
            if shared is None:
                sharing = False
                main = _companion_at(p, parent, probe, name)
            else:
                main = shared.get(name, probe)
                if main is probe:
                    main = shared[name] = _companion_at(p, parent, probe, name)
            memo[key] = main
        if main is not None:
            return Path(main)
        p = parent
    return None


def _companion_at(p: str, parent: str, probe: Probe, name: str | None = None) -> str | None:
    """``X.jsonl`` beside ``p`` when ``p`` (``X``, called ``name`` in
    ``parent``) is its companion folder, else None."""
    main = (os.path.basename(p) if name is None else name) + ".jsonl"
    if parent:  # os.path.join(parent, main) (main holds no separator), without its Python-level steps
        main = parent + main if parent.endswith(os.sep) else parent + os.sep + main
    if probe.listed(p):  # its names are known: ask them before a stat for X.jsonl
        if (probe.has(p, "subagents") or probe.has(p, "workflows")) and probe.is_file(main) and probe.is_dir(p):
            return main
    # else X.jsonl beside it first: one stat, where listing X (a run's
    # ancestors, big folders) costs far more
    elif not probe.absent(main) and probe.is_file(main) and probe.is_dir(p) and (probe.has(p, "subagents") or probe.has(p, "workflows")):
        return main
    return None


def session_of_agent_file(path: Path, probe: Probe) -> Path | None:
    """For a 2.0.x project-level ``agent-<id>.jsonl``: the main transcript
    its rows name (``sessionId``), when it is beside it."""
    data = probe.head(path, SNIFF_BYTES)
    for line in data.split(b"\n")[:SNIFF_LINES]:
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("sessionId"), str):
            sid = row["sessionId"].split("#", 1)[0]
            main = path.parent / (sid + ".jsonl")
            if main != path and probe.is_file(main):
                return main
            return None
    return None


def is_session_name(name: str) -> bool:
    """Whether a file of a project folder is named like a main transcript (``*.jsonl``, not ``agent-*``)."""
    return name.endswith(".jsonl") and not AGENT_FILE.match(name)


def _session_names(d: str, probe: Probe) -> list[str]:
    """The names of the main transcripts directly in folder ``d`` (not ``agent-*``), sorted."""
    names = probe.listdir(d) or []
    # names sorted as strings: the same order as the paths in one folder, without a Path per name compared
    return sorted(n for n in names if is_session_name(n) and probe.is_file(os.path.join(d, n)))


def _listed_session_names(d: str) -> list[str]:
    """:func:`_session_names` inside a discovery, from the shared listing's
    split (sorted, typed once per discovery): the probe lists ``d`` from that
    same listing, and is a regular file (symlinks followed) exactly when it is
    a non-folder that is not odd."""
    try:
        _dirs, nondirs, odd, _links = _tree.folder(d)
    except OSError:
        return []  # not listable: no names, as probe.listdir says
    return [n for n in nondirs if n.endswith(".jsonl") and not (n.startswith("agent-") and AGENT_FILE.match(n))
            and n not in odd]


def session_files(directory: Path, probe: Probe) -> list[Path]:
    """The main transcripts directly in a project folder (not ``agent-*``)."""
    return [directory / n for n in _session_names(os.fspath(directory), probe)]


def session_root(candidate: Path, probe: Probe) -> tuple[Path | None, str]:
    """The session file a path belongs to (the path itself for a standalone
    file), and why; None when the path is no Claude Code session. Asked once
    per path and probe (a folder can hit several of the format's fingerprints)."""
    key = (_SESSION_ROOT, probe.fspath(candidate))  # the string detection named the candidate with, when it did
    memo = probe.memo
    got = memo.get(key)
    if got is None:
        got = memo[key] = _session_root(candidate, key[1], probe)
    return got


_SESSION_ROOT = "claude-code.session_root"
_LISTED = "claude-code.listed_files"


def _listed_files(folder: str, probe: Probe) -> tuple[dict[str, object] | None, frozenset[str] | None]:
    """A folder's :func:`file_kind` answers (``tree.file_answers``) and, when
    ``probe`` has listed it inside a discovery, the names of its regular files
    (symlinks followed: what :meth:`Probe.is_file` answers from that listing),
    from the shared listing's split (:func:`~trajkit.reading.tree.folder`);
    ``(None, None)`` outside a discovery. Once per folder and probe: detection
    asks it of every file of the folder."""
    key = (_LISTED, folder)
    got = probe.memo.get(key)
    if got is None:
        known = _tree.file_answers(folder, FILE_KIND)
        regular = None
        if known is not None and probe.listed(folder):
            try:
                _dirs, nondirs, odd, _links = _tree.folder(folder)  # the probe's listing, split once per discovery
            except OSError:
                pass  # not listable: the probe says so per path
            else:
                regular = frozenset(nondirs).difference(odd) if odd else frozenset(nondirs)
        got = probe.memo[key] = (known, regular)
    return got  # type: ignore[return-value]


def _session_root(candidate: Path, cs: str, probe: Probe) -> tuple[Path | None, str]:
    # strings while looking (``cs`` is ``candidate``'s): detection asks this of every file it meets
    folder, name = os.path.split(cs)
    known, regular = _listed_files(folder, probe)
    if name in regular if regular is not None else probe.is_file(cs):
        owner = companion_owner(folder, probe)
        if owner is not None:
            return owner, f"inside the companion folder of {owner.name}"
        if name.startswith("agent-") and AGENT_FILE.match(name):
            main = session_of_agent_file(Path(cs), probe)
            if main is not None:
                return main, f"a project-level sub-agent file of {main.name}"
        if not name.endswith((".jsonl", ".txt", ".json")) or name.endswith(".meta.json"):
            return None, "not a JSON Lines file"
        if name.endswith(".json"):
            return None, "a JSON file outside a session's companion folder"
        kind, why = file_kind_in(cs[:len(cs) - len(name)], name, known, probe)
        if kind is None:
            return None, why
        return candidate, why
    if not probe.is_dir(cs):
        return None, "not a file or a directory"
    owner = companion_owner(cs, probe)
    if owner is not None:
        inside = os.path.dirname(os.fspath(owner)) == os.path.dirname(cs)
        return owner, f"the companion folder of {owner.name}" if inside else f"inside the companion folder of {owner.name}"
    names = probe.listdir(cs) or []
    stream = os.path.join(cs, STREAM_NAME)
    if STREAM_NAME in names and probe.is_file(stream):
        kind, why = file_kind(stream, probe)
        if kind == STREAM:
            return Path(stream), f"{STREAM_NAME}: {why}"
    if probe.has(cs, "agent"):
        stream = os.path.join(cs, "agent", STREAM_NAME)
        if probe.is_file(stream):
            kind, why = file_kind(stream, probe)
            if kind == STREAM:
                return candidate, f"a trial folder whose agent/{STREAM_NAME} is a stream-json log"
    mains = []
    known = _tree.file_answers(cs, FILE_KIND)
    base = cs if cs.endswith(os.sep) else cs + os.sep
    for n in _session_names(cs, probe) if known is None else _listed_session_names(cs):
        if file_kind_in(base, n, known, probe)[0] is not None:
            mains.append(base + n)
            if len(mains) > 1:
                break
    if len(mains) == 1:
        return Path(mains[0]), f"a project folder holding one session, {os.path.basename(mains[0])}"
    if mains:
        return None, "a project folder holding several sessions; name one (trajkit ls lists them)"
    return None, "no Claude Code session here"
