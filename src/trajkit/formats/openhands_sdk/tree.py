"""The SDK's event tree (1.31+): effective parents, the active branch, and
which events hang off it (``openhands-v1.md`` §4)."""

from __future__ import annotations

import bisect

from ..._records import Record
from ...diagnostics import INFO, WARNING, Diagnostic

ROOT_MARK = "__root__"
#: Stamped with a parent but never advance HEAD (never the leaf).
HEADLESS_KINDS = frozenset({"ConversationStateUpdateEvent"})
#: Skipped by the legacy leaf rule (no ``leaf_event_id``), SDK >= 1.35.
LEGACY_LEAF_SKIP = frozenset({"ConversationStateUpdateEvent", "ConversationErrorEvent"})

ACTIVE = "active"
SIDE = "side"
ABANDONED = "abandoned"


class Branching(Record):
    """Effective parent per event, the active branch (root to leaf), how the
    leaf was chosen, and each event's place: ``active`` (on the branch),
    ``side`` (an artifact hanging off it, e.g. a state update) or ``abandoned``
    (a light record: one is made per read; the lists default to new empty ones)."""

    __slots__ = __match_args__ = ("parents", "active", "leaf", "leaf_source", "place", "diagnostics")
    parents: list[str | None]
    active: list[str]
    leaf: str | None
    leaf_source: str
    place: list[str]
    diagnostics: list[Diagnostic]

    def __init__(self, parents: list[str | None], active: list[str] | None = None, leaf: str | None = None,
                 leaf_source: str = "none", place: list[str] | None = None, diagnostics: list[Diagnostic] | None = None) -> None:
        self.parents = parents
        self.active = [] if active is None else active
        self.leaf = leaf
        self.leaf_source = leaf_source
        self.place = [] if place is None else place
        self.diagnostics = [] if diagnostics is None else diagnostics


def effective_parents(ids: list[str | None], written: list[str | None]) -> list[str | None]:
    """Each event's parent as the SDK resolves it from the ``parent_id``
    written (a string, or None when absent or null): ``__root__`` starts a
    new root, an id is the parent, and none means the previous event
    (legacy linear logs) or no parent for the first event."""
    unwritten = written.count(None)
    if not unwritten or (unwritten == 1 and written[0] is None):
        # every parent written (SDK 1.31+), the first event's perhaps not (it has no
        # previous event either): as written, each __root__ read as None (copied in C
        # when there is none)
        if ROOT_MARK in written:
            return [None if pid == ROOT_MARK else pid for pid in written]
        return written[:]
    if unwritten == len(written):  # none written (a legacy linear log): each event's parent is the one before
        return [None, *ids[:-1]] if ids else []
    out: list[str | None] = []
    prev: str | None = None
    for eid, pid in zip(ids, written):
        if pid is not None:
            out.append(None if pid == ROOT_MARK else pid)
        else:
            out.append(prev)
        prev = eid
    return out


def branch(
    ids: list[str | None],
    kinds: list[str | None],
    written_parents: list[str | None],
    leaf_event_id: object = None,
    head_is_empty: object = None,
    file: str | None = None,
    unreadable: dict[str, int] | None = None,
    file_indices: list[int] | None = None,
) -> Branching:
    """Work out the active branch from the state's leaf (or the legacy rule).

    ``unreadable`` maps the ids of event files that could not be read (from
    their names) to their file index; a parent link to one of them is
    bridged to the readable event just before it (``file_indices`` gives
    each event's file index), so one bad file does not cut the history.
    """
    parents = effective_parents(ids, written_parents)
    b = Branching(parents)
    n = len(ids)
    index: dict[str, int] = dict(zip(ids, range(n)))
    if len(index) != n or None in index:  # an id missing or repeated (else: the common case, in C)
        index = {}
        for i, eid in enumerate(ids):
            if eid is not None and eid not in index:
                index[eid] = i
    if unreadable and file_indices is not None:
        # The event read before the lost file: among the events before i, the
        # one with the greatest file index below it (the first such event on
        # a tie). File indices seen so far are kept sorted, so each lookup is
        # a bisection, not a scan of every earlier event (events sharing one
        # unreadable parent used to cost quadratic time).
        seen_fi: list[int] = []
        first_at: dict[int, int] = {}
        for i, pid in enumerate(parents):
            if pid is not None and pid not in index and pid in unreadable:
                lost = unreadable[pid]
                at = bisect.bisect_left(seen_fi, lost)
                j = first_at[seen_fi[at - 1]] if at else None
                parents[i] = ids[j] if j is not None else None
                b.diagnostics.append(
                    Diagnostic(
                        "sdk.parent-unreadable",
                        f"parent {pid} is in an event file that could not be read; linked to the event read before it",
                        WARNING,
                        file=file,
                        event_id=ids[i],
                    )
                )
            fi = file_indices[i]
            if fi not in first_at:
                first_at[fi] = i
                if not seen_fi or fi > seen_fi[-1]:
                    seen_fi.append(fi)  # file order: the common case, no shifting
                else:
                    bisect.insort(seen_fi, fi)
    leaf_i: int | None = None
    if isinstance(leaf_event_id, str) and leaf_event_id:
        if leaf_event_id in index:
            leaf_i = index[leaf_event_id]
            b.leaf_source = "leaf_event_id"
        else:
            b.diagnostics.append(
                Diagnostic(
                    "sdk.leaf-missing",
                    f"base_state leaf_event_id {leaf_event_id} is not among the events read; using the last real event",
                    WARNING,
                    file=file,
                    event_id=leaf_event_id,
                )
            )
    elif head_is_empty is True:
        b.leaf_source = "head_is_empty"
    if leaf_i is None and b.leaf_source != "head_is_empty":
        for i in range(len(ids) - 1, -1, -1):
            if kinds[i] not in LEGACY_LEAF_SKIP and ids[i] is not None:
                leaf_i = i
                b.leaf_source = "last-event"
                break
    if leaf_i is not None and leaf_i == n - 1 and len(index) == n and parents[0] is None and parents[1:] == ids[:-1]:
        # a linear log whose leaf is its last event (the common case): the walk
        # below would visit every event, leaf to first, and find nothing odd
        b.leaf = ids[leaf_i]
        b.active = list(ids)  # type: ignore[arg-type]
        b.place = [ACTIVE] * n
        return b
    path: list[int] = []
    seen: set[int] = set()
    cur = leaf_i
    while cur is not None:
        if cur in seen:
            b.diagnostics.append(Diagnostic("sdk.tree-cycle", "parent links form a cycle; the branch is cut there", WARNING, file=file, event_id=ids[cur]))
            break
        seen.add(cur)
        path.append(cur)
        pid = parents[cur]
        if pid is None:
            break
        nxt = index.get(pid)
        if nxt is None:
            b.diagnostics.append(
                Diagnostic(
                    "sdk.parent-missing",
                    f"parent {pid} is not among the events read; the branch starts here",
                    WARNING,
                    file=file,
                    event_id=ids[cur],
                )
            )
            break
        cur = nxt
    path.reverse()
    b.leaf = ids[leaf_i] if leaf_i is not None else None
    b.active = [ids[i] for i in path]  # type: ignore[misc]
    place = [ABANDONED] * len(ids)
    for i in path:
        place[i] = ACTIVE
    # Side events: artifacts whose parent is on the branch (or beside it).
    for i in range(len(ids)) if len(path) != len(ids) else ():
        if place[i] != ABANDONED:
            continue
        if kinds[i] in LEGACY_LEAF_SKIP or kinds[i] in HEADLESS_KINDS:
            pid = parents[i]
            j = index.get(pid) if pid is not None else None
            if pid is None or (j is not None and place[j] in (ACTIVE, SIDE)):
                place[i] = SIDE
    b.place = place
    abandoned = place.count(ABANDONED)
    if abandoned:
        b.diagnostics.append(
            Diagnostic(
                "sdk.abandoned-branch",
                f"{abandoned} event(s) are not on the active branch (navigate/fork left them behind); kept and marked",
                INFO,
                file=file,
            )
        )
    return b
