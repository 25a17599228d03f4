"""The SDK event tree's effective parents: the short paths (every parent
written, or all but the first event's) give what the SDK's rule gives event
by event, and the tree's record behaves as its fields say."""

from __future__ import annotations

import itertools

from trajkit.formats.openhands_sdk.tree import ROOT_MARK, branch, effective_parents


def rule(ids, written):
    """The SDK's rule, one event at a time: a written parent (``__root__``
    starts a new root), else the event before (none for the first)."""
    out = []
    for i, pid in enumerate(written):
        if pid is not None:
            out.append(None if pid == ROOT_MARK else pid)
        else:
            out.append(ids[i - 1] if i else None)
    return out


def test_effective_parents_follow_the_rule_for_every_shape():
    ids = ["a", "b", "c", "d"]
    choices = [None, ROOT_MARK, "a", "b", "x"]
    checked = 0
    for n in range(len(ids) + 1):
        for written in itertools.product(choices, repeat=n):
            written = list(written)
            got = effective_parents(ids[:n], written)
            assert got == rule(ids[:n], written), written
            assert got is not written  # a new list: branch() may bridge entries of it
            checked += 1
    assert checked == sum(len(choices) ** n for n in range(len(ids) + 1))


def test_branch_leaves_the_written_parents_untouched():
    ids = ["a", "b", "c"]
    written = [None, "a", "lost"]
    before = list(written)
    b = branch(ids, ["MessageEvent"] * 3, written, unreadable={"lost": 5}, file_indices=[0, 1, 6])
    assert written == before
    assert b.parents == [None, "a", "b"]  # the lost parent bridged to the event read before it
    assert b.active == ["a", "b", "c"] and b.leaf_source == "last-event"
