"""Which fingerprints :func:`trajkit.registry.detect` asks a format's sniff
about at a folder: exactly those :func:`glob.glob` finds under it (``*``
skipping hidden names), in declared order, whichever way detection answers a
glob part (a literal name looked up, the folder's joined names searched for
``*END``/``START*`` and for the pieces of other ``*`` globs, a test per name
for ``?``/``[...]`` parts and for pieces found in different names)."""

from __future__ import annotations

import glob
import os

import pytest

from trajkit.registry import Format, Reject, detect

FINGERPRINTS = (
    "*", "*.json", "*.jsonl", "rollout-*.jsonl", "a*b*c.json", "*x*", "x*y", "*-[0-9]*.json", "e?ent.json",
    "[ab]*", ".hidden", "*.md", "results.json", "sub/*.json", "sub/*/events", "sub", "missing/*", "*son", "*.*",
    "session-*.json", "s*n-*.json",
)

FOLDERS = [
    [],
    ["results.json"],
    ["rollout-1.jsonl", "notes.md"],
    ["rollout-.json", "x.jsonl"],  # each piece of rollout-*.jsonl is there, in different names
    ["ab.txt", "c.json"],  # a, b and c.json apart: a*b*c.json does not match
    ["aXbYc.json", ".hidden"],
    [".only-hidden.json"],
    ["yx", "x"],  # x*y: pieces in different names
    ["xay"],
    ["gpt-4o-17.json", "event.json", "evxnt.json"],
    ["b-1.json", "session-2.json"],
    ["session-x.jsonl", "sxn-.json"],
    ["sub"],  # a folder: sub/*.json and sub/*/events look inside
]


def _build(tmp_path, names):
    root = tmp_path / "run"
    root.mkdir()
    for n in names:
        if n == "sub":
            (root / "sub" / "inner" / "events").mkdir(parents=True)
            (root / "sub" / "a.json").write_text("{}")
        else:
            (root / n).write_text("{}")
    return root


@pytest.mark.parametrize("names", FOLDERS, ids=lambda names: ",".join(names) or "empty")
def test_the_fingerprints_asked_at_a_folder_are_what_glob_finds(tmp_path, names):
    root = _build(tmp_path, names)
    asked = []

    def sniff(probe, cand, fp):
        asked.append(fp)
        return Reject("no")

    fmt = Format(name="probe-fps", description="test", fingerprints=FINGERPRINTS, priority=10, sniff=sniff,
                 read=lambda root, options: None)
    from trajkit import registry

    registry.register(fmt)
    try:
        det = detect(root, only=["probe-fps"], ancestors=0)
    finally:
        registry.formats()[:] = [f for f in registry.formats() if f.name != "probe-fps"]
    want = [fp for fp in FINGERPRINTS if glob.glob(os.path.join(glob.escape(str(root)), fp))]
    assert asked == want
    assert [c.fingerprint for c in det.considered] == want
