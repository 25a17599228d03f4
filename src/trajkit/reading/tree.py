"""Directory listings shared by every walk of one discovery.

:func:`trajkit.corpus.discover` asks each format that lists sessions itself
(``Format.find_sessions``) to walk the tree, then walks it once more to
detect what is left. Inside :func:`shared_listings` every such walk (this
module's :func:`walk` and :func:`scandir`, and every
:class:`~trajkit.reading.probe.Probe`) lists a folder with the operating
system once; the other walks get the same entries back. Outside it they are
plain ``os.scandir`` / ``os.walk`` (through the filesystem seam,
:mod:`.fs`: in memory while a run archive's group is read).

The listings live as long as the ``with`` block, in the current context only
(a :mod:`contextvars` variable): a thread that runs discovery in the
background shares nothing with the thread reading runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Callable, Iterator

from .fs import current as _mounted

_listings: contextvars.ContextVar[dict[str, list[os.DirEntry] | OSError] | None] = contextvars.ContextVar(
    "trajkit_listings", default=None
)


@contextlib.contextmanager
def shared_listings() -> Iterator[None]:
    """Within the block, each folder is listed by the operating system at most once."""
    if _listings.get() is not None:  # already inside one: share it
        yield
        return
    token = _listings.set({})
    try:
        yield
    finally:
        _listings.reset(token)


def scandir(path: str | os.PathLike) -> list[os.DirEntry]:
    """The entries of a folder, in the operating system's order (``os.scandir``
    made a list); raises ``OSError`` as it does. Cached inside :func:`shared_listings`."""
    t = _mounted()  # the filesystem seam (reading.fs), inlined: every listing of a discovery comes here
    if t is not None:
        return t.scandir(path)  # a memory tree's listing is never kept: a shared cache may outlive the mount
    cache = _listings.get()
    if cache is None:
        with os.scandir(path) as it:
            return list(it)
    p = os.fspath(path)
    got = cache.get(p)
    if got is None:
        try:
            with os.scandir(p) as it:
                got = list(it)
        except OSError as e:
            got = e
        cache[p] = got
    if isinstance(got, OSError):
        raise got
    return got


def walk(top: str | os.PathLike, onerror: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, onerror=onerror)``: top-down, symlinked folders listed
    among the folders but not walked into; prune by editing the folder list."""
    yield from _walk(os.fspath(top), onerror)


def _walk(top: str, onerror: Callable[[OSError], None] | None) -> Iterator[tuple[str, list[str], list[str]]]:
    try:
        entries = scandir(top)
    except OSError as e:
        if onerror is not None:
            onerror(e)
        return
    dirs: list[str] = []
    nondirs: list[str] = []
    links: set[str] = set()
    for e in entries:
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            dirs.append(e.name)
            try:
                if e.is_symlink():
                    links.add(e.name)
            except OSError:
                pass
        else:
            nondirs.append(e.name)
    yield top, dirs, nondirs
    for name in dirs:
        if name not in links:
            yield from _walk(os.path.join(top, name), onerror)
