"""What keeps a ``trajkit`` process cheap to start stays correct (issue 15;
the speed itself is measured in ``benchmarks/bench_startup.py``).

Detection matches fingerprint parts whose only wildcard is ``*`` without
compiling a regular expression (``registry._Stars``): it must answer as
:func:`fnmatch.fnmatchcase` does, for every fingerprint of every format and
for random names.
"""

from __future__ import annotations

import fnmatch
import random

import pytest

from trajkit.registry import _parse_glob, _Stars, formats

_PARTS = sorted({p for f in formats() for fp in f.fingerprints for p in fp.split("/")})
_EXTRA = ["*", "**", "a*", "*a", "a*b*c", "*a*", "a**b", "*.", "x*x*x", "ab*ba", "*.json", "*.json.*"]


def _names(seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "ab.cx-_0 1\n" + "jsonlevt"
    names = {"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(3000)}
    # names each fingerprint part is meant for, and near misses of them
    for part in _PARTS + _EXTRA:
        plain = part.replace("*", "x").replace("?", "q").replace("[0-9]", "7")
        names |= {plain, plain[1:], plain[:-1], plain + "x", "x" + plain, plain.upper(), part}
    return sorted(names)


def test_fingerprints_have_star_parts():
    assert sum(1 for p in _PARTS if isinstance(_parse_glob(p)[0][1], _Stars)) >= 20


@pytest.mark.parametrize("seed", range(3))
def test_part_matchers_answer_as_fnmatchcase(seed):
    names = _names(seed)
    for part in _PARTS + _EXTRA:
        first, match = _parse_glob(part)[0]
        for name in names:
            got = bool(match(name)) if match is not None else name == first
            assert got == fnmatch.fnmatchcase(name, part), (part, name)
