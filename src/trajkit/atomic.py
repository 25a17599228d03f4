"""Every file trajkit writes goes through here: atomically, and never through
a link someone planted.

A write creates a fresh temporary file in the target's own folder (a random
name, ``O_CREAT | O_EXCL | O_NOFOLLOW``, so neither a symlink at the target
nor one at a guessable ``<target>.tmp`` is ever followed), writes, ``fsync``\\ s
it, and ``os.replace``\\ s it over the target. ``rename`` replaces a symlink
at the target by the new file; the link's target stays untouched. A reader
(or a kill -9 at any moment) sees the old file or the new one, never a
truncated one; at worst a kill leaves a ``.<name>.<random>.tmp`` file beside
the target.

Failures raise :class:`OutputError` (a :class:`~trajkit.model.TrajkitError`)
that names the path and the reason, so the CLI can exit 2 with a message.
"""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from .model import TrajkitError

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY | _O_CLOEXEC

_mode: int | None = None


class OutputError(TrajkitError, OSError):
    """An output could not be written (the folder cannot be made, the disk is
    full, the target is a folder ...). It is an ``OSError`` too, with
    ``strerror`` the reason and ``filename`` the path."""

    def __init__(self, path: str | os.PathLike, reason: str, errno_: int | None = None):
        super().__init__(errno_, reason, str(path))
        self.path = str(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.reason}"


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def _error(path: str | os.PathLike, e: OSError) -> OutputError:
    return OutputError(path, _reason(e), e.errno)


def _file_mode() -> int:
    """0o666 less the umask: what ``open(path, "w")`` would have given."""
    global _mode
    if _mode is None:
        mask = os.umask(0o022)
        os.umask(mask)
        _mode = 0o666 & ~mask
    return _mode


def ensure_dir(path: str | os.PathLike) -> Path:
    """Make the folder ``path`` (and its parents); :class:`OutputError` when it
    cannot be made or is not a folder."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(p, "exists and is not a directory") from None
    except OSError as e:
        raise _error(p, e) from None
    if not p.is_dir():
        raise OutputError(p, "exists and is not a directory")
    return p


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder
        pass
    finally:
        os.close(fd)


def _temp(target: Path) -> tuple[int, Path]:
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, _FLAGS, _file_mode()), tmp
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno == errno.ENAMETOOLONG:
                tmp = target.with_name(f".trajkit.{secrets.token_hex(8)}.tmp")
                try:
                    return os.open(tmp, _FLAGS, _file_mode()), tmp
                except FileExistsError:
                    continue
                except OSError as e2:
                    raise _error(target, e2) from None
            raise _error(target, e) from None
    raise OutputError(target, "no free temporary name in its folder")


@contextmanager
def atomic_open(path: str | os.PathLike, make_parents: bool = True, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through: on a clean exit it is synced
    and renamed over ``path``; on an exception the temporary file is removed
    and ``path`` is left as it was. ``durable=False`` skips the ``fsync`` of
    the file and its folder (a killed process still leaves the old file or
    the new one; a power loss may leave neither): for files a later durable
    write commits, whose reader checks they are there (the index's batches)."""
    target = Path(path)
    if make_parents:
        try:
            ensure_dir(target.parent)
        except OutputError as e:
            raise OutputError(target, f"{e.path}: {e.reason}", e.errno) from None
    if target.is_dir() and not target.is_symlink():
        raise OutputError(target, "is a directory")
    fd, tmp = _temp(target)
    done = False
    try:
        with os.fdopen(fd, "wb") as f:
            try:
                yield f
                f.flush()
                if durable:
                    os.fsync(f.fileno())
            except OSError as e:
                raise _error(target, e) from None
        try:
            os.replace(tmp, target)
        except OSError as e:
            raise _error(target, e) from None
        done = True
    finally:
        if not done:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    if durable:
        _fsync_dir(target.parent)


def write_atomic(path: str | os.PathLike, data: bytes, make_parents: bool = True, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring and :func:`atomic_open` for ``durable``)."""
    target = Path(path)
    with atomic_open(target, make_parents=make_parents, durable=durable) as f:
        f.write(data)
    return target
