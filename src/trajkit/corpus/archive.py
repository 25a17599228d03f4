"""Run archives (``.tar.zst``, ``.tar.gz`` / ``.tgz``, ``.zip``) read member by member.

An archive is read as a stream, one member after the other (a ``.zip`` by
its central directory); it is never extracted: nothing of it is written to
any filesystem. Members are taken in *groups*: the members under one
top-level folder of the archive (under the second level when the whole
archive sits in one folder, as ``tar czf runs.tar.gz runs/`` makes it).
Each group is held in memory as a :class:`~trajkit.reading.fs.MemoryTree`
mounted at the archive's own path (:func:`group_tree`): while it is mounted
(:func:`trajkit.reading.fs.mounted`, for the current call only) the readers,
detection and :func:`~trajkit.corpus.discover` see the archive as a folder
of its members, addressed ``<archive path>/<member path>``, and nothing
else. At most one group is held at a time; its size is capped
(``max_group_bytes``).

Refused, each with a diagnostic and never read by a reader:

- ``archive.unsafe-member``: an absolute name, a name with a ``..`` part or
  a drive, a symbolic or hard link, a device or FIFO member (zip-slip and
  its tar cousins);
- ``archive.member-too-large``: a member over ``max_member_bytes`` (checked
  on the declared size and again while reading, so a lying header is cut);
- ``archive.group-too-large``: a group over ``max_group_bytes`` (its runs
  are not read);
- ``archive.too-large`` / ``archive.too-many-members``: the archive
  expands past ``max_total_bytes`` or ``max_members``: the rest is not read;
- ``archive.member-clash``: a member named twice, or a file where another
  member needs a folder (the first one is kept);
- ``archive.unreadable``: a damaged or truncated archive, or ``.tar.zst``
  without the ``zstandard`` package (``pip install 'trajkit[archives]'``).
"""

from __future__ import annotations

import os
import stat
import tarfile
import time
import zipfile
from dataclasses import dataclass
from typing import IO, Any, Iterator

from ..reading.fs import MemoryTree

SUFFIXES = (".tar.zst", ".tar.gz", ".tgz", ".zip")

ZSTD_MISSING = "reading .tar.zst needs the zstandard package: pip install 'trajkit[archives]'"


def is_archive(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a run archive (by its suffix)."""
    n = os.fspath(path).lower()
    return n.endswith(SUFFIXES)


@dataclass(frozen=True, slots=True)
class Caps:
    """Size limits for reading an archive."""

    max_member_bytes: int = 1 << 30
    max_group_bytes: int = 2 << 30
    max_total_bytes: int = 64 << 30
    max_members: int = 1_000_000


@dataclass(slots=True)
class Problem:
    """Something refused or wrong in an archive: a stable code, the member (or None) and why."""

    code: str
    member: str | None
    message: str
    severity: str = "warning"


def safe_name(name: str) -> str | None:
    """``name`` as a relative POSIX path inside the archive, or None when it
    could escape (absolute, ``..``, a drive or a backslash path)."""
    if not name or "\x00" in name:
        return None
    n = name.replace("\\", "/")
    if n.startswith("/") or (len(n) > 1 and n[1] == ":"):
        return None
    parts = [p for p in n.split("/") if p not in ("", ".")]  # PurePosixPath(n).parts for a relative n, without the objects
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


class _Capped:
    """Reads at most ``cap`` bytes from a member stream; says when there was more."""

    @staticmethod
    def read(f: IO[bytes], cap: int) -> bytes | None:
        data = f.read(cap + 1)
        return None if len(data) > cap else data


def _zip_is_link(info: zipfile.ZipInfo) -> bool:
    kind = stat.S_IFMT((info.external_attr >> 16) & 0xFFFF)  # 0: no Unix type recorded (a plain file)
    return kind not in (0, stat.S_IFREG, stat.S_IFDIR)


def _zip_mtime(info: zipfile.ZipInfo) -> float:
    try:
        return time.mktime((*info.date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return 0.0


def _members(path: str, caps: Caps, problems: list[Problem]) -> Iterator[tuple[str, bytes, float]]:
    """``(name, data, mtime)`` of every safe regular member, in archive order, within the caps."""
    total = 0
    count = 0
    lower = path.lower()

    def admit(name: str, size: int | None) -> str | None:
        nonlocal count
        count += 1
        if count > caps.max_members:
            problems.append(Problem("archive.too-many-members", None, f"more than {caps.max_members} members; the rest is not read", "error"))
            raise _Stop
        safe = safe_name(name)
        if safe is None:
            problems.append(Problem("archive.unsafe-member", name, "the name could write outside the run (absolute, `..` or a drive); refused"))
            return None
        if size is not None and size > caps.max_member_bytes:
            problems.append(Problem("archive.member-too-large", safe, f"{size} bytes declared, over the {caps.max_member_bytes}-byte cap; not read"))
            return None
        return safe

    def account(safe: str, data: bytes | None) -> bytes | None:
        nonlocal total
        if data is None:
            problems.append(Problem("archive.member-too-large", safe, f"more than {caps.max_member_bytes} bytes; not read"))
            return None
        total += len(data)
        if total > caps.max_total_bytes:
            problems.append(Problem("archive.too-large", safe, f"the archive expands past {caps.max_total_bytes} bytes; the rest is not read", "error"))
            raise _Stop
        return data

    try:
        if lower.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    if _zip_is_link(info):
                        admit(info.filename, None)
                        problems.append(Problem("archive.unsafe-member", info.filename, "a link or special file; refused"))
                        continue
                    safe = admit(info.filename, info.file_size)
                    if safe is None:
                        continue
                    with zf.open(info) as f:
                        data = account(safe, _Capped.read(f, caps.max_member_bytes))
                    if data is not None:
                        yield safe, data, _zip_mtime(info)
            return
        with _tar_stream(path) as tf:
            for m in tf:
                if m.isdir():
                    continue
                if not m.isfile():
                    admit(m.name, None)
                    problems.append(Problem("archive.unsafe-member", m.name, "a link, device or FIFO member; refused"))
                    continue
                safe = admit(m.name, m.size)
                if safe is None:
                    continue
                f = tf.extractfile(m)
                data = account(safe, _Capped.read(f, caps.max_member_bytes) if f is not None else b"")
                if data is not None:
                    yield safe, data, float(m.mtime)
    except _Stop:
        return
    except _NoZstd:
        problems.append(Problem("archive.unreadable", None, ZSTD_MISSING, "error"))
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, ValueError, RuntimeError) as e:
        problems.append(Problem("archive.unreadable", None, f"cannot read the archive: {type(e).__name__}: {e}", "error"))


class _Stop(Exception):
    pass


class _NoZstd(Exception):
    pass


class _tar_stream:
    """A streaming ``tarfile`` over a gzip or zstd compressed file (no seeking)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._files: list[Any] = []

    def __enter__(self) -> tarfile.TarFile:
        raw = open(self.path, "rb")
        self._files.append(raw)
        if self.path.lower().endswith(".tar.zst"):
            try:
                import zstandard
            except ImportError:
                raise _NoZstd from None
            reader = zstandard.ZstdDecompressor().stream_reader(raw)
            self._files.append(reader)
            tf = tarfile.open(fileobj=reader, mode="r|")
        else:
            tf = tarfile.open(fileobj=raw, mode="r|gz")
        self._files.append(tf)
        return tf

    def __exit__(self, *exc: Any) -> None:
        for f in reversed(self._files):
            try:
                f.close()
            except Exception:
                pass


def groups(path: str, caps: Caps, problems: list[Problem]) -> Iterator[tuple[str, list[tuple[str, bytes, float]]]]:
    """The archive's members in groups ``(prefix, [(name, data, mtime), ...])``:
    consecutive members under the same top-level folder (the second level
    when every member so far sits in one top folder). A group over
    ``max_group_bytes`` is dropped with ``archive.group-too-large``."""
    cur_key: str | None = None
    cur: list[tuple[str, bytes, float]] = []
    size = 0
    over = False
    wrapper: str | None = None
    decided = False

    def key_of(name: str) -> str:
        parts = name.split("/")
        if wrapper is not None and parts[0] == wrapper and len(parts) > 2:
            return f"{parts[0]}/{parts[1]}"
        return parts[0] if len(parts) > 1 else name

    for name, data, mtime in _members(path, caps, problems):
        if not decided:
            first = name.split("/")
            wrapper = first[0] if len(first) > 2 else None
            decided = True
        k = key_of(name)
        if k != cur_key:
            if cur_key is not None and not over:
                yield cur_key, cur
            cur_key, cur, size, over = k, [], 0, False
        if over:
            continue
        size += len(data)
        if size > caps.max_group_bytes:
            problems.append(Problem("archive.group-too-large", k, f"the members under {k}/ exceed {caps.max_group_bytes} bytes; its runs are not read"))
            cur, over = [], True
            continue
        cur.append((name, data, mtime))
    if cur_key is not None and not over:
        yield cur_key, cur


def group_tree(path: str, members: list[tuple[str, bytes, float]], problems: list[Problem]) -> MemoryTree:
    """The members of one group as a read-only tree in memory, mounted at the
    archive's own path (absolute): mount it with
    :func:`trajkit.reading.fs.mounted` to read its runs. A member that cannot
    be placed (a name given twice, a file where a folder is) is
    ``archive.member-clash``: the first one is kept."""
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        mtime = 0.0

    def clash(name: str, why: str) -> None:
        problems.append(Problem("archive.member-clash", name, f"cannot be placed: {why}; the first one is kept"))

    return MemoryTree(os.path.abspath(path), members, mtime, on_clash=clash)
