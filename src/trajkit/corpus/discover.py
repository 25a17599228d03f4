"""The one walk that finds runs under paths, for every verb that takes many.

``convert DIR`` and ``fcr DIR`` (and any later batch verb) call
:func:`discover`, so they see the same runs: a path that detection reads as a
run is that run; under a directory, the sessions a format lists itself
(``Format.find_sessions``) and every file or directory that detects as the
root of a run (a single-file run such as a flat export or a rollout trace
included), up to :data:`MAX_DEPTH` levels down. A file holding many
sessions (a format declaring ``members``) stands for each of them, named
``PATH#ID``. With ``archives``, run
archives (``.tar.zst``, ``.tar.gz``, ``.zip``: :mod:`trajkit.corpus.archive`)
are listed as such (``kind == "archive"``). Relative and absolute paths
find the same runs: roots are compared resolved, and the runs are named in
the caller's form (``runs/a`` under ``runs``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Callable, Iterable

from ..reading import fs

#: How many directory levels below a given path the walk looks.
MAX_DEPTH = 8

RUN = "run"
CERTIFICATE = "certificate"
ARCHIVE = "archive"


@dataclass(frozen=True, slots=True)
class RunRef:
    """A run (or, when asked for, a certificate file) found under a given path."""

    path: Path
    kind: str = RUN  # "run" | "certificate" | "archive"
    format: str | None = None
    given: str = ""  # the path it was found under, as the caller wrote it


def _looks_like_certificate(p: Path) -> bool:
    if p.suffix != ".json":
        return False
    from ..reading.io import head

    return b"trajkit.certificate/" in head(os.fspath(p), 4096)


def _named(found: str | os.PathLike, found_abs: str, given: Path, given_abs: str, same: bool) -> Path:
    """``found`` (``found_abs``: it absolute) in the caller's form: relative to
    ``given`` (``given_abs``: it absolute; ``same``: both spelled alike) when it
    lies under it. On strings: a listed session is named once, not parsed again."""
    if found_abs == given_abs:
        return given
    inside = given_abs if given_abs.endswith(os.sep) else given_abs + os.sep
    if not found_abs.startswith(inside):
        return Path(found)
    if same:  # given is the absolute path: found, absolute under it, is already in the caller's form
        return found if isinstance(found, Path) and str(found) == found_abs else Path(found_abs)
    return given / found_abs[len(inside):]


def _abspath(s: str) -> str:
    """``os.path.abspath(s)``; a path that is absolute and normalized already
    (what the formats' walks list, below the absolute root they were given) is
    returned as it is, without normpath's split and join."""
    if s[:1] == os.sep and "//" not in s and os.sep + "." not in s and not s.endswith(os.sep):
        return s
    return os.path.abspath(s)


def _root_is(match, cs: str) -> bool:
    """Whether ``match`` (a sniff's, for the entry ``cs``: absolute, without
    ``..``) names ``cs`` itself as the run's root."""
    root = os.fspath(match.root)
    if root == cs:  # the common case: the sniff matched the candidate it was given
        return True
    if os.path.abspath(root) == cs:
        return True
    try:
        return fs.realpath(root) == fs.realpath(cs)
    except OSError:
        return False


def _member_ids(fmt, match) -> list[str]:
    """The sessions of the container file ``match`` found (a format declaring
    ``members``), in the container's order; empty when it lists none (the
    file then stands for itself)."""
    from ..model import ReadOptions
    from ..registry import list_members

    return list_members(fmt, Path(match.root), ReadOptions()) or []


def _expand(fmt, match, p: Path, member: str | None = None) -> list[Path]:
    """``p`` as the runs a batch verb goes over: each session of a container
    file (``PATH#ID``, for a format declaring ``members``) unless ``p`` names
    one already (``member``); ``[p]`` otherwise."""
    if member is not None or fmt.members is None:
        return [p]
    ids = _member_ids(fmt, match)
    return [Path(f"{p}#{i}") for i in ids] if ids else [p]


def _order(refs: list[tuple[str, RunRef]]) -> list[RunRef]:
    """The runs of one walked path in path order: by the parts of each path
    (the order of ``Path`` objects), a container's sessions in the container's
    order beside its path. ``refs`` pairs each run with its path as a string
    (``str(ref.path)``), which makes the key: the path with its separators made
    NUL (no name holds one, so strings compare as the parts do) and the root
    kept apart, where ``Path.parts`` was a Python-level call and a tuple per run."""
    from ..registry import split_member

    sep = os.sep
    if sep != "/" or os.altsep is not None or any(s[:2] == "//" for s, _ in refs):
        # a drive, or POSIX's "//" root: Path's own parts, as they are
        refs.sort(key=lambda t: (Path(split_member(t[0])[0]) if "#" in t[1].path.name else t[1].path).parts)
        return [r for _, r in refs]
    keys = []
    for s, _r in refs:
        if "#" in s[s.rfind(sep) + 1:]:
            s = split_member(s)[0]  # a container's session: at its container's place
        k = s.replace(sep, "\0")
        keys.append(sep + k if s[:1] == sep else k)  # ("/", "a", ...) before ("a", ...) as parts[0] "/" does
    order = sorted(range(len(refs)), key=keys.__getitem__)  # stable: a container's sessions keep their order
    return [refs[i][1] for i in order]


def discover(
    paths: Iterable[str | os.PathLike],
    *,
    certificates: bool = False,
    archives: bool = False,
    max_depth: int = MAX_DEPTH,
    on_problem: Callable[[str], None] | None = None,
    on_skip: Callable[[Path, str], None] | None = None,
    on_found: Callable[[RunRef], None] | None = None,
    collect: bool = True,
) -> list[RunRef]:
    """The runs under ``paths``, each once, in path order per given path.

    With ``certificates``, trajkit certificate files (``*.json`` holding
    ``trajkit.certificate/``) are listed too (``kind == "certificate"``).
    Hidden entries and symlinked directories are not walked; a directory
    that cannot be listed is reported through ``on_problem`` and skipped.
    A given path that is itself a run (detection reads it, wherever the
    run's root is) is returned as it is. Nothing raises on bad paths: a
    missing path simply yields nothing.

    ``on_skip(path, reason)`` hears of every entry directly under a given
    directory that yielded no run (a file or folder of a format trajkit does
    not read, a symlinked folder), so a batch verb can say what it left out.
    ``on_found(ref)`` hears of each run as soon as it is found (in walk
    order), so a batch can start before the walk ends. With ``collect``
    false the runs are only handed to ``on_found``, none is kept (a walk of
    a big tree holds no list of them), and the result is empty.

    The walk is linear in the entries below the given paths: each folder is
    listed once, each entry is detected as a root on its own (its parents
    were ruled out on the way down, so detection looks at no ancestor), with
    one cached :class:`~trajkit.reading.probe.Probe` per folder that drops
    the file heads it read once an entry is decided.
    """
    from ..reading import tree

    with tree.shared_listings():  # each folder listed once, whichever format's walk asks
        return _discover(paths, certificates, archives, max_depth, on_problem, on_skip, on_found, collect)


def _discover(paths: Iterable[str | os.PathLike], certificates: bool, archives: bool, max_depth: int,
              on_problem: Callable[[str], None] | None, on_skip: Callable[[Path, str], None] | None,
              on_found: Callable[[RunRef], None] | None, collect: bool = True) -> list[RunRef]:
    from ..reading import tree
    from ..reading.probe import Probe
    from ..registry import EntryDetector, detect, formats, split_member

    # run archives are told by their suffix; the archive module (tarfile, zipfile, shutil, lzma...) loads only
    # when they are asked for
    is_archive = None
    if archives:
        from .archive import is_archive

    out: list[list[RunRef]] = []
    seen: set[str] = set()
    added = [0]  # runs found so far

    def add(refs: list[RunRef], ref: RunRef, key: str | None = None) -> None:
        key = key or fs.realpath(ref.path)
        if key not in seen:
            seen.add(key)
            added[0] += 1
            if collect:
                refs.append(ref)
            if on_found is not None:
                on_found(ref)

    for raw in paths:
        given = Path(raw)
        raw_s = str(raw)
        refs: list[RunRef] = []
        if not fs.exists(split_member(given)[0]):
            out.append(refs)
            continue
        if archives and fs.isfile(given) and is_archive(given):
            add(refs, RunRef(given, ARCHIVE, None, raw_s))
            out.append(refs)
            continue
        if certificates and fs.isfile(given) and _looks_like_certificate(given):
            add(refs, RunRef(given, CERTIFICATE, None, raw_s))
            out.append(refs)
            continue
        det = detect(given)
        if det.format is not None:
            for p in _expand(det.format, det.match, given, det.member):
                add(refs, RunRef(p, RUN, det.format.name, raw_s))
            out.append(refs)
            continue
        if not fs.isdir(given):
            out.append(refs)
            continue
        given_abs = Path(os.path.abspath(given))
        dotdot = ".." in given.parts
        given_s = os.fspath(given_abs)
        given_in = given_s + os.sep
        # the given path as written is the absolute one (the common case): a listed path, and an entry's Path,
        # is then already in the caller's form
        same = os.fspath(given) == given_s
        given_inside = given_s if given_s.endswith(os.sep) else given_in
        # the runs found, each with its path as a string (what orders them: _order)
        found: list[tuple[str, RunRef]] = []

        def add_walked(ref: RunRef, key: str, s: str) -> None:
            # add(), for a run of the walked path, with the path's string form kept beside it
            if key not in seen:
                seen.add(key)
                added[0] += 1
                if collect:
                    found.append((s, ref))
                if on_found is not None:
                    on_found(ref)

        claimed: list[str] = []  # resolved roots of sessions a format listed: not walked again
        for fmt in formats():
            if fmt.find_sessions is None:
                continue
            try:
                # absolute, as the walk below asks: every walk then shares one listing per folder (a format
                # walking the relative form listed the whole tree a second time); named back in the caller's form
                listed = fmt.find_sessions(given_abs)
            except OSError as e:
                if on_problem:
                    on_problem(f"{given}: {fmt.name}: cannot list sessions: {e.strerror or e}")
                continue
            for ls in listed:
                a = _abspath(os.fspath(ls))
                p = _named(ls, a, given, given_s, same)  # in the caller's form, from the strings
                # p's real path; the walks' shared listings know which of its parts are symlinks (given spelled
                # with ".." is resolved as written: ".." after a symlink is not the folder the walks listed)
                rp = fs.realpath(p) if dotdot else tree.realpath(a)
                # its string: the absolute one when that is the caller's form (p is then found_abs, see _named)
                add_walked(RunRef(p, RUN, fmt.name, raw_s), rp,
                           a if same and a != given_s and a.startswith(given_inside) else str(p))
                claimed.append(rp)

        claimed_set = set(claimed)
        # hidden entries are not walked, except a file a format names exactly (a run kept under a dot name)
        dot_names = {fp for f in formats() for fp in f.fingerprints
                     if fp.startswith(".") and "/" not in fp and not any(c in fp for c in "*?[")}
        real_given = fs.realpath(given)

        def real(cs: str) -> str:
            # the walk follows no symlinked folder, so an entry's real path is the given root's plus its relative path
            return real_given + cs[len(given_s):] if cs.startswith(given_in) else fs.realpath(cs)

        def inside_claimed(cs: str) -> bool:
            r = real(cs)
            while True:
                if r in claimed_set:
                    return True
                parent = os.path.dirname(r)
                if parent == r or len(parent) < len(real_given):
                    return False
                r = parent

        # The walk enters a folder only when no claimed root holds it, so an entry under the given root is inside
        # a claimed one when it is one itself (or the given root is): one set look-up instead of climbing its parents.
        root_claimed = bool(claimed) and inside_claimed(given_s)
        detector = EntryDetector()  # the formats taken once, their name tables built once for the whole walk
        winner = detector.winner
        by_name = attrgetter("name")

        def walk(d: str, dp: Path, named: Path, named_s: str, depth: int, above: Probe | None = None) -> None:
            # d: the folder, absolute; dp: it as a Path (what sniffs take); named: it in the caller's form
            # (named_s: as a string); above: the probe of the folder above, whose detection of d may have
            # read heads of d's files
            probe = Probe()  # one per folder: its entries share the folder's listing, and it dies with the walk of it
            if above is not None:
                probe.take_heads(above, d)
            try:
                entries = sorted(tree.scandir(d), key=by_name)
            except OSError as e:
                if on_problem:
                    on_problem(f"{named}: cannot list: {e.strerror or e}")
                return
            # the probe answers "is it there, a file, a folder" for these entries (and their siblings, which
            # sniffs ask about) from this listing, by path
            probe.list_folder(d)
            inside = d if d.endswith(os.sep) else d + os.sep
            # the real path of the folder's entries, as real() gives it, but once for the folder (None: ask each)
            real_in = real_given + inside[len(given_s):] if inside.startswith(given_in) else None
            # an entry's name in the caller's form as a string (what orders the runs: _order)
            named_in = "" if named_s == "." else named_s if named_s.endswith(os.sep) else named_s + os.sep
            for entry in entries:
                name = entry.name
                if name[0] == "." and name not in dot_names:
                    continue
                cs = inside + name  # absolute: the walk starts from the given path made absolute
                rs = real_in + name if real_in is not None else None  # its real path, when known by the folder's
                if claimed and (root_claimed or rs in claimed_set if rs is not None else inside_claimed(cs)):
                    continue  # is_claimed(cs)
                before = added[0]
                try:
                    is_dir = entry.is_dir()
                    is_link = entry.is_symlink()
                except OSError:
                    continue
                if is_dir and is_link:
                    if on_skip and depth == 1:
                        on_skip(named / name, "symlinked folder, not followed")
                    continue
                if not is_dir and archives and is_archive(cs):
                    add_walked(RunRef(named / name, ARCHIVE, None, raw_s), rs or real(cs), named_in + name)
                    continue
                if not is_dir and certificates and _looks_like_certificate(Path(cs)):
                    add_walked(RunRef(named / name, CERTIFICATE, None, raw_s), rs or real(cs), named_in + name)
                    continue
                c = dp / name  # cs as a Path: what sniffs take
                # what detect(c, probe=probe, ancestors=0, winner_only=True) names, without its bookkeeping
                # (a symlink whose target is not there is nothing, as detection says)
                got = None if is_link and not probe.exists(cs) else winner(probe, cs, name, is_dir, c)
                if got is not None and (got[1].root is c or _root_is(got[1], cs)):
                    fmt, match = got
                    p = c if same else named / name
                    ns = cs if same else named_in + name
                    key = None if is_link else rs or real(cs)
                    ids = _member_ids(fmt, match) if fmt.members is not None else None
                    if not ids:
                        add_walked(RunRef(p, RUN, fmt.name, raw_s), key or fs.realpath(p), ns)
                    else:
                        for i in ids:  # each session of a container file, as PATH#ID
                            pm = Path(f"{p}#{i}")
                            m = pm.name[len(name):]  # "#ID"
                            add_walked(RunRef(pm, RUN, fmt.name, raw_s), key + m if key else fs.realpath(pm), str(pm))
                elif is_dir and depth < max_depth:
                    walk(cs, c, c if same else named / name, named_in + name, depth + 1, probe)
                probe.drop_heads()
                if (on_skip and depth == 1 and added[0] == before
                        and not (claimed and (root_claimed or rs in claimed_set if rs is not None else inside_claimed(cs)))):
                    what = "folder" if is_dir else "file"
                    on_skip(named / name, f"no known format: no run found in this {what}"
                            if is_dir else "no known format")
            tree.release(d)  # the last walk of this folder is done: the shared listing goes (RSS flat in the corpus' size)

        walk(given_s, given_abs, given, str(given), 1)
        del walk  # it names itself (a cycle through its cell): gone now, the walk's state goes with it, not at a collection
        # a container's sessions stay in the container's order, beside its path
        refs = _order(found) if found else refs
        out.append(refs)
    return [r for refs in out for r in refs]
