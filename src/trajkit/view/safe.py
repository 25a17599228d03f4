"""Text from a run made safe to print on a terminal.

Run data comes from an agent, and an agent can write terminal escapes into
it: an OSC 52 sequence that writes the user's clipboard, an OSC 0 title, a
clear-screen, a carriage return that hides the start of a command. Every
text trajkit prints to a terminal from run data goes through
:func:`printable` first: each C0 control except newline and tab, DEL, each C1
control and each lone surrogate (a non-UTF-8 file name, a cut emoji) is
written as a visible escape (``\\x1b``, ``\\x9b``, ``\\r``, ``\\udcff``), so
the terminal shows it instead of obeying it, and printing never fails on
text that is not valid Unicode. A CR before a newline (a Windows or pty line
ending) is dropped, not shown. JSON output is not touched: it stays exact.
"""

from __future__ import annotations

import re

from .._text import has_surrogate

#: What :func:`printable` escapes: C0 controls but ``\n`` and ``\t``, DEL,
#: C1 controls, and lone surrogates (compiled on first use: see :data:`_CONTROL`).
_UNSAFE_CLASS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]"
_unsafe: re.Pattern[str] | None = None
#: The same controls without the surrogates. A class reaching past U+00FF
#: compiles to a 64K-entry map (~4M instructions, 2% of a whole
#: ``trajkit steps`` process), this one in a tenth of that; with a UTF-8 encode for
#: the surrogates it answers the common case, text with nothing to escape.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SHORT = {"\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    o = ord(c)
    if c in _SHORT:
        return _SHORT[c]
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}"


def printable(text: str) -> str:
    """``text`` with every control character (but newline and tab) and lone
    surrogate written as a visible escape; ``text`` itself when it holds none."""
    global _unsafe
    if _CONTROL.search(text) is None and not has_surrogate(text):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _unsafe is None:
        _unsafe = re.compile(_UNSAFE_CLASS)
    return _unsafe.sub(_escape, text)
