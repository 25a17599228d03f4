"""Discovery leaves no reference cycles behind.

A walk of a big tree builds tens of thousands of small objects (the runs
found, their paths, the listings). A recursive closure names itself through
its cell, so before this the whole walk's state (every run found, ~43,000
objects for the 10k benchmark corpus) stayed alive after `discover` returned,
until the cyclic collector's next full pass, which then had to trace it.
Here the collector is switched off around one discovery: anything it would
still find afterwards is garbage that only a collection would have freed.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from conftest import CORPUS as SHARED
from trajkit.corpus import discover

HERE = Path(__file__).parent


@pytest.mark.parametrize("root, options", [
    (SHARED, {}),
    (SHARED, {"archives": True, "certificates": True}),
    (HERE / "fixtures", {"archives": True, "certificates": True}),
    (HERE.parent / "examples", {}),
])
def test_discovery_leaves_no_cyclic_garbage(root, options):
    assert root.is_dir(), root
    discover([root], **options)  # the first call imports what discovery uses (modules may hold cycles)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        found = discover([root], **options)
        left = gc.collect()
    finally:
        if was:
            gc.enable()
    assert found  # the walk did find runs (each of these roots holds some)
    assert left == 0


def test_the_check_sees_a_cycle_when_there_is_one():
    # the same measure, on a closure that names itself as the walks did: it does count what it should
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        def make() -> int:
            found = [object() for _ in range(10)]

            def walk(n: int) -> None:
                if n:
                    walk(n - 1)
                found.append(n)

            walk(3)
            return len(found)

        assert make() == 14
        left = gc.collect()
    finally:
        if was:
            gc.enable()
    assert left > 0
