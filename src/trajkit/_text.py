"""Text checks shared by layers that must not import each other (the
registry's detection stays free of the view; the view's escaping needs the
same answer)."""

from __future__ import annotations

__all__ = ["has_surrogate"]


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point, the only ones UTF-8
    cannot encode (a regex class of them compiles to a 64K-entry map: ~2M
    instructions at every import). Python holds the undecodable bytes of a
    file name as lone surrogates."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
