"""Canary strings and before-run manifests.

A canary is distinctive content of a protected file: an explicit marker
(``CANARY...``, a GUID, a long hex string) or a long line that appears in no
unprotected file of the workspace. One showing up in an observation proves a
read; one in the diff proves a copy. A before-run manifest records the
protected (and gate) files' hashes and canaries, so any later change to them
is gate tampering even without git.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from . import paths as P
from ..jsonio import MISSING
from ..reading.io import load_json

MANIFEST_SCHEMA = "trajkit.before/1"
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"}
MAX_FILES = 1_000_000
MAX_TEXT_BYTES = 2 << 20
MIN_LINE = 24

_MARKER = re.compile(
    r"(?i)\bcanary[\w:.-]*\s*[:=]?\s*[\w-]{8,}|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{32,}\b"
)


@dataclass(slots=True)
class Canary:
    """One canary: the text, which protected file and line it comes from, and its kind (marker / line)."""

    text: str
    file: str
    line: int
    kind: str = "line"

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "file": self.file, "line": self.line, "kind": self.kind}


def max_files() -> int:
    """The walk's cap: ``TRAJKIT_CERTIFY_MAX_FILES`` when set, else :data:`MAX_FILES`."""
    v = os.environ.get("TRAJKIT_CERTIFY_MAX_FILES", "")
    return int(v) if v.strip().isdigit() and int(v) > 0 else MAX_FILES


@dataclass(slots=True)
class Listing:
    """The files under a workspace, and whether the walk saw all of them
    (``complete`` is False when it stopped at ``limit``, or a directory could
    not be listed: ``problems``)."""

    root: str
    files: list[str] = field(default_factory=list)
    complete: bool = True
    limit: int = MAX_FILES
    problems: list[str] = field(default_factory=list)

    @property
    def incomplete_reason(self) -> str | None:
        if self.complete:
            return None
        if len(self.files) >= self.limit:
            return f"workspace scan stopped at {self.limit} files (TRAJKIT_CERTIFY_MAX_FILES): files past it were not checked"
        return f"workspace scan incomplete: {self.problems[0] if self.problems else 'unknown'}"


def list_files(root: str, limit: int | None = None) -> Listing:
    """Workspace-relative paths of everything under ``root`` that is not a
    directory (regular files, symlinks of any kind, FIFOs ...; tool and VCS
    directories skipped, symlinked directories listed, never entered), in
    ``os.walk`` order. Never stops silently: a walk cut at ``limit`` files is
    marked incomplete."""
    lim = max_files() if limit is None else limit
    out = Listing(root, limit=lim)

    def visit(d: str, rel: str) -> bool:
        try:
            with os.scandir(d) as it:
                ents = sorted(it, key=lambda e: e.name)
        except OSError as e:
            out.complete = False
            out.problems.append(f"cannot list {rel or '.'}: {e.strerror}")
            return True
        subdirs = []
        for e in ents:
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if e.name not in SKIP_DIRS:
                    subdirs.append(e)
                continue
            if len(out.files) >= lim:
                out.complete = False
                return False
            out.files.append(f"{rel}/{e.name}" if rel else e.name)
        for e in subdirs:
            if not visit(e.path, f"{rel}/{e.name}" if rel else e.name):
                return False
        return True

    visit(root, "")
    return out


def walk_files(root: str) -> list[str]:
    """Workspace-relative paths of the files under ``root`` (see :func:`list_files`)."""
    return list_files(root).files


def _open_regular(path: str):
    """``(fd, stat)`` of a regular file, opened without following a symlink
    and without blocking (a FIFO, a device or a link to ``/dev/zero`` is
    refused), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def _read_text(path: str) -> str | None:
    got = _open_regular(path)
    if got is None:
        return None
    fd, st = got
    try:
        if st.st_size > MAX_TEXT_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_TEXT_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_TEXT_BYTES or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _special_kind(mode: int) -> str:
    return "fifo" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device" if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "other"


def _fingerprint(path: str) -> tuple[str, str, int] | None:
    """``(kind, "sha256:...", size)`` of a workspace entry, never following a
    symlink (its target text is hashed) and never opening a special file (its
    kind is hashed); None when it does not exist or cannot be read. A regular
    file is read up to the size it had when opened."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.fsencode(os.readlink(path))
        except OSError:
            return None
        return "symlink", "sha256:" + hashlib.sha256(b"symlink\0" + target).hexdigest(), len(target)
    if not stat.S_ISREG(st.st_mode):
        kind = _special_kind(st.st_mode)
        return kind, "sha256:" + hashlib.sha256(f"{kind}\0".encode()).hexdigest(), 0
    got = _open_regular(path)
    if got is None:
        return None
    fd, st = got
    h = hashlib.sha256()
    left = st.st_size
    try:
        while left > 0:
            b = os.read(fd, min(1 << 20, left))
            if not b:
                break
            left -= len(b)
            h.update(b)
    except OSError:
        return None
    finally:
        os.close(fd)
    return "file", "sha256:" + h.hexdigest(), st.st_size


def _sha256(path: str) -> str | None:
    fp = _fingerprint(path)
    return fp[1] if fp else None


_LITERAL = re.compile(r"'([^'\\\n]{2,})'|\"([^\"\\\n]{2,})\"")


def _distinctive(line: str) -> bool:
    s = line.strip()
    if len(s) < MIN_LINE or len(s) > 400:
        return False
    if re.match(r"^(?:import|from|#include|using|package|require|export\s+\{|\}|\)|\]|//\s*$|#\s*$)", s):
        return False
    if sum(c.isalnum() for c in s) < 16:
        return False
    # distinctive content carries data: a quoted literal of 4+ characters (not a
    # dunder name) or a number of 3+ digits; generic code lines carry none
    for m in _LITERAL.finditer(s):
        lit = m.group(1) or m.group(2) or ""
        if len(lit) >= 4 and not re.fullmatch(r"__\w+__", lit):
            return True
    return bool(re.search(r"(?<![\w.])\d[\d_.,]{2,}\d?(?![\w])", s) and re.search(r"\d{3}", s))


def protected_files(workspace: str, protect: Iterable[str], files: list[str] | None = None) -> list[str]:
    globs = tuple(protect)
    return [r for r in (walk_files(workspace) if files is None else files) if P.match_any(r, globs)]


def extract_canaries(
    workspace: str,
    protected: list[str],
    exclude_text: Iterable[str] = (),
    unchanged_only: set[str] | None = None,
    per_file: int = 200,
    files: list[str] | None = None,
) -> list[Canary]:
    """Canaries from the ``protected`` files of ``workspace``.

    Lines that also occur in an unprotected file (only those in
    ``unchanged_only`` when given: files the run did not change) or in any of
    ``exclude_text`` (the task text) are not distinctive and are dropped.
    """
    prot = set(protected)
    common: set[str] = set()
    for rel in walk_files(workspace) if files is None else files:
        if rel in prot or (unchanged_only is not None and rel not in unchanged_only):
            continue
        text = _read_text(os.path.join(workspace, rel))
        if text:
            common.update(l.strip() for l in text.splitlines() if len(l.strip()) >= MIN_LINE)
    for t in exclude_text:
        if t:
            common.update(l.strip() for l in t.splitlines())
    exclude_blob = "\n".join(t for t in exclude_text if t)
    out: list[Canary] = []
    seen: set[str] = set()
    for rel in protected:
        text = _read_text(os.path.join(workspace, rel))
        if not text:
            continue
        mine: list[Canary] = []
        for i, line in enumerate(text.splitlines(), 1):
            for m in _MARKER.finditer(line):
                tok = m.group(0)
                if tok not in seen and tok not in exclude_blob:
                    seen.add(tok)
                    mine.append(Canary(tok, rel, i, "marker"))
            s = line.strip()
            if _distinctive(s) and s not in common and s not in seen:
                seen.add(s)
                mine.append(Canary(s, rel, i, "line"))
        mine.sort(key=lambda c: (c.kind != "marker", -len(c.text)))
        out.extend(mine[:per_file])
    return out


def snapshot(workspace: str, protect: Iterable[str] = P.DEFAULT_PROTECT, task_text: str | None = None) -> dict[str, Any]:
    """A before-run manifest of ``workspace``: hashes of the protected and
    gate files, and the protected files' canaries.

    Symlinks are never followed (a link's target text is hashed, ``kind:
    "symlink"``), special files never opened (``kind: "fifo"`` ...), and only
    regular files give canaries, so nothing outside the workspace ends up in
    the manifest. A walk cut at its cap is written with ``"complete": false``
    and the reason; such a manifest is refused by ``--before``.
    """
    globs = tuple(protect)
    files: dict[str, Any] = {}
    prot: list[str] = []
    listing = list_files(workspace)
    unreadable = []
    for rel in listing.files:
        g = P.match_any(rel, globs)
        gate = P.is_gate_file(rel)
        if not g and not gate:
            continue
        fp = _fingerprint(os.path.join(workspace, rel))
        if fp is None:
            unreadable.append(rel)
            continue
        kind, sha, size = fp
        files[rel] = {"sha256": sha, "size": size, "set": "protected" if g else "gate"}
        if kind != "file":
            files[rel]["kind"] = kind
        elif g:
            prot.append(rel)
    canaries = extract_canaries(workspace, prot, [task_text or ""], files=listing.files)
    doc: dict[str, Any] = {
        "schema": MANIFEST_SCHEMA,
        "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "workspace": os.path.abspath(workspace),
        "protect": list(globs),
        "files": files,
        "canaries": [c.to_dict() for c in canaries],
    }
    problems = ([listing.incomplete_reason] if not listing.complete else []) + [f"{r}: unreadable" for r in unreadable[:20]]
    if problems:
        doc["complete"] = False
        doc["problems"] = problems
    return doc


@dataclass(slots=True)
class Manifest:
    """A before-run manifest as read: the file hashes, canaries and globs, or why it is unusable."""

    path: str
    files: dict[str, Any] = field(default_factory=dict)
    canaries: list[Canary] = field(default_factory=list)
    protect: tuple[str, ...] = ()
    problem: str | None = None


def load_manifest(path: str) -> Manifest:
    """Read a before-run manifest; a bad one has ``problem`` set (the run then fails closed)."""
    doc, diags = load_json(path, 256 << 20)
    m = Manifest(path)
    if doc is MISSING:
        m.problem = "; ".join(d.message for d in diags) or "unreadable manifest"
        return m
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        m.problem = f"not a {MANIFEST_SCHEMA} manifest (no files map)"
        return m
    if doc.get("schema") not in (None, MANIFEST_SCHEMA):
        m.problem = f"unknown manifest schema {doc.get('schema')!r}"
        return m
    if doc.get("complete") is False:
        probs = doc.get("problems")
        m.problem = "the snapshot did not cover the workspace" + (f": {probs[0]}" if isinstance(probs, list) and probs else "")
        return m
    for rel, info in doc["files"].items():
        sha = info.get("sha256") if isinstance(info, dict) else info if isinstance(info, str) else None
        if not isinstance(sha, str):
            m.problem = f"manifest entry {rel!r} has no sha256"
            return m
        m.files[rel] = {"sha256": sha if ":" in sha else "sha256:" + sha, "set": info.get("set", "protected") if isinstance(info, dict) else "protected"}
    for c in doc.get("canaries") or []:
        if isinstance(c, dict) and isinstance(c.get("text"), str):
            m.canaries.append(Canary(c["text"], str(c.get("file", "?")), int(c.get("line") or 0), str(c.get("kind", "line"))))
        elif isinstance(c, str):
            m.canaries.append(Canary(c, "?", 0, "marker"))
    pr = doc.get("protect")
    if isinstance(pr, list):
        m.protect = tuple(str(x) for x in pr)
    return m


def compare_manifest(m: Manifest, workspace: str, protect: Iterable[str], files: list[str] | None = None) -> list[dict[str, Any]]:
    """Protected / gate files changed, deleted or added since the manifest
    (symlinks compared by their target, special files by their kind: none is
    followed or opened)."""
    changes = []
    for rel, info in sorted(m.files.items()):
        full = os.path.join(workspace, rel)
        if not os.path.lexists(full):
            changes.append({"file": rel, "change": "deleted", "set": info.get("set")})
            continue
        now = _sha256(full)
        if now != info["sha256"]:
            changes.append({"file": rel, "change": "modified", "set": info.get("set"), "before": info["sha256"], "after": now})
    globs = tuple(protect) + m.protect
    for rel in walk_files(workspace) if files is None else files:
        if rel in m.files:
            continue
        g = P.match_any(rel, globs)
        gate = P.is_gate_file(rel)
        if g or gate:
            changes.append({"file": rel, "change": "added", "set": "protected" if g else "gate"})
    return changes


class CanaryMatcher:
    """Every canary in a text in one pass, whatever the number of canaries.

    With ``L`` the shortest canary length (at least 8), ``s = min(16, L - 4)``
    and ``K = L - s + 1``, the text is sampled every ``s`` characters: any occurrence of
    a canary spans a sample whose ``K`` characters are the canary's own at an
    offset below ``s``. Each canary indexes those ``s`` grams; a sampled gram
    names (offset, length) pairs, and one slice and one set lookup per pair
    confirm a canary exactly. The cost grows with the text, not with text x
    canaries, and a gram that many similar canaries share costs its distinct
    (offset, length) pairs, not its canaries. Canaries shorter than 8
    characters are searched directly.
    """

    MIN = 8

    def __init__(self, texts: list[str]) -> None:
        self.by_text: dict[str, list[int]] = {}
        self.short: list[tuple[str, list[int]]] = []
        for i, t in enumerate(texts):
            self.by_text.setdefault(t, []).append(i)
        long_ = [t for t in self.by_text if len(t) >= self.MIN]
        short = {t for t in self.by_text if len(t) < self.MIN}
        self.short = [(t, self.by_text[t]) for t in self.by_text if t in short]
        self.index: dict[str, set[int]] = {}
        self.k = self.step = 0
        if long_:
            low = min(len(t) for t in long_)
            self.step = min(16, low - 4)
            self.k = low - self.step + 1
            k, step, index = self.k, self.step, self.index
            for t in long_:
                n = len(t)
                for o in range(step):  # the gram at offset o, with (offset, length) packed in one int
                    g = t[o : o + k]
                    lst = index.get(g)
                    if lst is None:
                        index[g] = {(o << 20) | n}
                    else:
                        lst.add((o << 20) | n)
            # one entry per (offset, length): a gram many similar canaries share costs its
            # distinct lengths at most, never the number of canaries
            for g, entries in index.items():
                index[g] = tuple(entries)  # type: ignore[assignment]

    def find(self, text: str) -> list[int]:
        """Indices of the canaries that occur in ``text``, ascending."""
        found: set[str] = set()
        out: set[int] = set()
        for t, ids in self.short:
            if t in text:
                out.update(ids)
        if self.index:
            k, step, index, by_text = self.k, self.step, self.index, self.by_text
            for p in range(0, len(text) - k + 1, step):
                b = index.get(text[p : p + k])
                if b is None:
                    continue
                for packed in b:
                    start = p - (packed >> 20)
                    if start < 0:
                        continue
                    cand = text[start : start + (packed & 0xFFFFF)]
                    if cand in by_text and cand not in found:
                        found.add(cand)
                        out.update(by_text[cand])
        return sorted(out)


def find_canaries(canaries: list[Canary], texts: Iterable[tuple[Any, str]], matcher: CanaryMatcher | None = None) -> list[tuple[Canary, Any]]:
    """Every (canary, where) pair whose canary text occurs in one of ``texts``
    (``(where, text)``), texts in order and canaries in list order within
    each; one pass per text (:class:`CanaryMatcher`, built here unless the
    caller passes the one for these ``canaries``), never every canary against
    every text."""
    if not canaries:
        return []
    if matcher is None:
        matcher = CanaryMatcher([c.text for c in canaries])
    hits = []
    for where, text in texts:
        if not text:
            continue
        for i in matcher.find(text):
            hits.append((canaries[i], where))
    return hits


def workspace_test_file_count(workspace: str, exclude: set[str] | None = None, files: list[str] | None = None) -> int:
    """How many test source files the workspace holds (``exclude``: paths not to count)."""
    exclude = exclude or set()
    return sum(1 for r in (walk_files(workspace) if files is None else files)
               if r not in exclude and P.is_test_file(r) and r.endswith((".py", ".js", ".ts", ".go", ".rs", ".rb", ".java")))

