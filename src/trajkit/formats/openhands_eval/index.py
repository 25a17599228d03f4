"""The record index of an OpenHands evaluation output (imported on first use:
``find_sessions`` and ``members`` of :mod:`trajkit.formats.openhands_eval`,
and its reader)."""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import jsonio
from ...diagnostics import Diagnostic
from ...model import ReadOptions
from ...reading import fs
from ...reading import io as read_io
from ...reading import tree
from ...reading.probe import Probe
from .detect import _HEAD, looks_like_output, ruled_out


@dataclass(slots=True)
class Record:
    """One line of an output.jsonl: where it is, the member id it is read as,
    and what the index saw (the instance id and attempt from the line's head,
    or why the line is not a usable record)."""

    member: str
    line: int
    offset: int
    length: int
    instance_id: str | None
    attempt: int | None = None
    problem: str | None = None  # not-object / bad-line / truncated-line / no-instance-id
    duplicate_of: int | None = None  # the line of the first record of the same instance


@dataclass(slots=True)
class Index:
    """The records of one output.jsonl (for a given size and mtime)."""

    path: str
    key: tuple[int, int]
    records: list[Record] = field(default_factory=list)
    by_member: dict[str, Record] = field(default_factory=dict)
    problem: Diagnostic | None = None  # the file could not be read at all


_INDEXES: "OrderedDict[tuple[str, int], Index]" = OrderedDict()
_INDEX_CACHE = 8


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = fs.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns


def index(path: str | os.PathLike, cap: int = jsonio.DEFAULT_MAX_FILE_BYTES) -> Index:
    """The records of the output.jsonl at ``path``, each with its member id.

    A line whose head is ``{"instance_id": "...", ["attempt": N]`` (as both
    harnesses write it) is indexed from that head alone; any other line is
    decoded to find its instance id or what is wrong with it. The index is
    kept per file size and mtime, so listing then reading every member
    scans the file once.
    """
    p = os.fspath(path)
    key = _stat_key(p)
    cached = _INDEXES.get((p, cap))
    if cached is not None and key is not None and cached.key == key:
        _INDEXES.move_to_end((p, cap))
        return cached
    idx = Index(p, key or (-1, -1))
    data, why = read_io.read_capped(p, cap)
    if data is None:
        idx.problem = why.diagnostic(p, cap)  # type: ignore[union-attr]
        return idx
    first_of: dict[str, Record] = {}
    taken: set[str] = set()
    seen_count: dict[str, int] = {}
    offset = 0
    lineno = 0
    n = len(data)
    head = _HEAD.match
    while offset < n:
        end = data.find(b"\n", offset)
        last = end < 0
        if last:
            end = n
        lineno += 1
        start = offset
        offset = end + 1
        m = head(data, start, end)
        iid: str | None = None
        attempt: int | None = None
        problem: str | None = None
        if m is not None and not last:
            try:
                iid = jsonio.fast_loads(m.group(1))
            except ValueError:
                iid = None
            if m.group(2) is not None:
                attempt = int(m.group(2))
        if iid is None:
            # no usable head, or the final line (which may be cut off): decode it to know
            chunk = data[start:end]
            if not chunk.strip():
                continue
            value, _d = jsonio.loads(chunk, p)
            if value is jsonio.MISSING:
                problem = "truncated-line" if last else "bad-line"
                if m is not None:  # a cut-off record still has its head: keep its name
                    try:
                        iid = jsonio.fast_loads(m.group(1))
                    except ValueError:
                        iid = None
            elif not isinstance(value, dict):
                problem = "not-object"
            else:
                v = value.get("instance_id")
                if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip():
                    iid = str(v)
                    a = value.get("attempt")
                    attempt = a if isinstance(a, int) and not isinstance(a, bool) else None
                else:
                    problem = "no-instance-id"
        if not isinstance(iid, str):
            iid = None
        if iid is not None and not iid.strip():
            iid, problem = None, problem or "no-instance-id"
        rec = Record("", lineno, start, end - start, iid, attempt, problem)
        if iid is None:
            name = f"line-{lineno}"
        else:
            first = first_of.get(iid)
            if first is None:
                first_of[iid] = rec
                name = iid
            else:
                rec.duplicate_of = first.line
                seen_count[iid] = seen_count.get(iid, 1) + 1
                name = f"{iid}@{attempt}" if attempt is not None else f"{iid}~{seen_count[iid]}"
                if name in taken or name in first_of:
                    name = f"{iid}~{seen_count[iid]}"
                while name in taken or name in first_of:
                    name = f"{name}~"
        taken.add(name)
        rec.member = name
        idx.records.append(rec)
        idx.by_member[name] = rec
    _INDEXES[(p, cap)] = idx
    while len(_INDEXES) > _INDEX_CACHE:
        _INDEXES.popitem(last=False)
    return idx


def members(root: Path, options: ReadOptions | None = None) -> list[str]:
    """The member ids of the output.jsonl at ``root``, in file order."""
    cap = (options or ReadOptions()).max_file_bytes
    return [r.member for r in index(root, cap).records]


def find_sessions(root: Any, diagnostics: list[Diagnostic] | None = None) -> list[Path]:
    """Every record of the evaluation outputs at or under ``root``, as ``FILE#MEMBER`` paths."""
    p = Path(os.path.abspath(os.fspath(root)))
    files: list[Path] = []
    probe = Probe()
    if fs.isfile(p):
        if looks_like_output(p, probe):
            files.append(p)
    elif fs.isdir(p):
        top = str(p)
        base = len(top.rstrip(os.sep))
        for dirpath, dirnames, filenames in tree.walk_sorted(top):  # each folder's names come sorted
            if dirnames:
                # four levels below the root at most (the depth counted on the path string: no Path per folder)
                dirnames[:] = [d for d in dirnames if d[0] != "."] if dirpath == top or dirpath.count(os.sep, base) < 4 else []
            if not tree.any_ending(filenames, ".jsonl"):
                continue  # no output can be here: one search, not a test per name
            known: dict[str, bytes] | None = None
            for n in filenames:
                if not n.endswith(".jsonl"):
                    continue  # decided by the name: no path made, no head read
                if known is None:
                    # the first bytes of the files an earlier walk of this discovery read (claude-code's reads
                    # every .jsonl of a project folder): most files are ruled out without opening them again
                    known = tree.prefixes(dirpath)
                pre = known.get(n)
                if pre is not None and ruled_out(pre):
                    continue
                f = tree.join(dirpath, n)
                if looks_like_output(f, probe):
                    files.append(Path(f))
                probe.drop_heads()  # decided: a walk of a big tree must not keep every file's head
    out: list[Path] = []
    for f in files:
        idx = index(f)
        if idx.problem is not None and diagnostics is not None:
            diagnostics.append(idx.problem)
        out.extend(Path(f"{f}#{r.member}") for r in idx.records)
    return out
