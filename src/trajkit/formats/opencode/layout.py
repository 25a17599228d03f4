"""What opencode's records look like on disk: the cheap checks detection and
the reader share (file heads, names, folder shapes; no reading)."""

from __future__ import annotations

from pathlib import Path

from ...reading.probe import Probe

#: The SQLite file magic.
MAGIC = b"SQLite format 3\x00"

_HEAD = 1 << 16


def _is_db_name(name: str) -> bool:
    return name.startswith("opencode") and name.endswith(".db")


def _looks_like_store(probe: Probe, path: Path | str) -> bool:
    head = probe.head(path, _HEAD)
    return head.startswith(MAGIC)


def _looks_like_foreign_store(probe: Probe, path: Path | str) -> bool:
    """Any SQLite file whose schema (in its first pages) has opencode's part table."""
    head = probe.head(path, _HEAD)
    return head.startswith(MAGIC) and b"CREATE TABLE `part`" in head and b"`message_id`" in head


def _is_storage(probe: Probe, d: Path | str) -> bool:
    dirs, _files = probe.scan(d)
    return "session" in dirs and ("message" in dirs or "part" in dirs)


def _may_be_opencode(s: bytes) -> bool:
    """False when :func:`_head_kind` is certainly None for the text ``s``: an
    event line names ``"part"`` and an export ``"parts"``, so both hold
    ``"part``. One search where another harness's file took two."""
    return b'"part' in s


def _head_kind(probe: Probe, path: Path | str) -> str | None:
    """``export`` / ``events`` when a file's first bytes look like one."""
    head = probe.head(path, _HEAD)
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if s[:1] != b"{":
        nl = s.find(b"\n")  # a captured "Exporting session: ..." line before the document
        if nl < 0 or not s.startswith(b"Exporting session"):
            return None
        s = s[nl + 1:].lstrip()
    if not _may_be_opencode(s):
        return None
    if s.startswith(b"{") and b'"sessionID"' in s[:4096] and b'"part"' in s[:4096] and (
            b'"type":"step_start"' in s[:4096] or b'"type":"text"' in s[:4096] or b'"type":"tool_use"' in s[:4096]
            or b'"type":"step_finish"' in s[:4096] or b'"type":"reasoning"' in s[:4096]):
        return "events"
    if b'"info"' in s and b'"messages"' in s and b'"parts"' in s and (b'"role"' in s or b'"parts": []' in s or b'"parts":[]' in s):
        return "export"
    return None


def _store_in(probe: Probe, d: Path) -> Path | None:
    _dirs, files = probe.scan(d)
    for name in sorted(n for n in files if _is_db_name(n)):
        if _looks_like_store(probe, d / name):
            return d / name
    return None
