"""``printable`` and the surrogate check (``has_surrogate``, which the registry's
undecodable-name check uses too) answer as the regex
classes they are defined by, over every code point and random texts.

Both used to compile a class holding the surrogates at import (a 64K-entry
map); they now answer the common case from a smaller class and a UTF-8
encode. The reference here is the definition: the class of characters to
escape, applied with :func:`re.sub` as the docstring of
:mod:`trajkit.view.safe` describes."""

from __future__ import annotations

import random
import re

import pytest

from trajkit._text import has_surrogate
from trajkit.view.safe import printable

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
SURROGATE = re.compile("[\ud800-\udfff]")


def reference(text: str) -> str:
    if UNSAFE.search(text) is None:
        return text
    text = text.replace("\r\n", "\n")

    def esc(m: re.Match[str]) -> str:
        c = m.group()
        if c == "\r":
            return "\\r"
        return f"\\x{ord(c):02x}" if ord(c) <= 0xFF else f"\\u{ord(c):04x}"

    return UNSAFE.sub(esc, text)


def test_every_code_point_alone_and_in_text():
    for cp in range(0x110000):
        c = chr(cp)
        for text in (c, "ab" + c, "é" + c + "\n"):
            want = reference(text)
            got = printable(text)
            assert got == want, (hex(cp), text)
            if want == text:
                assert got is text  # nothing to escape: the text itself, not a copy
        assert has_surrogate(c) is (SURROGATE.search(c) is not None)


@pytest.mark.parametrize("seed", range(5))
def test_random_texts(seed):
    rng = random.Random(seed)
    pools = ["abc \n\t\r", "\x00\x1b\x7f\x85\x9b\xa0", "é→😀\u200b\u2028", "\ud800\udcff\udfff"]
    for _ in range(3000):
        text = "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randrange(0, 12)))
        assert printable(text) == reference(text), repr(text)
        assert has_surrogate(text) is (SURROGATE.search(text) is not None), repr(text)
