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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from . import paths as P
from ..jsonio import MISSING, load_file

MANIFEST_SCHEMA = "trajkit.before/1"
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"}
MAX_FILES = 50_000
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


def walk_files(root: str) -> Iterable[str]:
    """Workspace-relative paths of the files under ``root`` (tool and VCS directories skipped)."""
    n = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for f in sorted(files):
            n += 1
            if n > MAX_FILES:
                return
            yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TEXT_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_TEXT_BYTES or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _sha256(path: str) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return "sha256:" + h.hexdigest()


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


def protected_files(workspace: str, protect: Iterable[str]) -> list[str]:
    globs = tuple(protect)
    return [r for r in walk_files(workspace) if P.match_any(r, globs)]


def extract_canaries(
    workspace: str,
    protected: list[str],
    exclude_text: Iterable[str] = (),
    unchanged_only: set[str] | None = None,
    per_file: int = 200,
) -> list[Canary]:
    """Canaries from the ``protected`` files of ``workspace``.

    Lines that also occur in an unprotected file (only those in
    ``unchanged_only`` when given: files the run did not change) or in any of
    ``exclude_text`` (the task text) are not distinctive and are dropped.
    """
    prot = set(protected)
    common: set[str] = set()
    for rel in walk_files(workspace):
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
    gate files, and the protected files' canaries."""
    globs = tuple(protect)
    files: dict[str, Any] = {}
    prot: list[str] = []
    for rel in walk_files(workspace):
        g = P.match_any(rel, globs)
        gate = P.is_gate_file(rel)
        if not g and not gate:
            continue
        full = os.path.join(workspace, rel)
        files[rel] = {"sha256": _sha256(full), "size": os.path.getsize(full), "set": "protected" if g else "gate"}
        if g:
            prot.append(rel)
    canaries = extract_canaries(workspace, prot, [task_text or ""])
    return {
        "schema": MANIFEST_SCHEMA,
        "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "workspace": os.path.abspath(workspace),
        "protect": list(globs),
        "files": files,
        "canaries": [c.to_dict() for c in canaries],
    }


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
    doc, diags = load_file(path, 256 << 20)
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


def compare_manifest(m: Manifest, workspace: str, protect: Iterable[str]) -> list[dict[str, Any]]:
    """Protected / gate files changed, deleted or added since the manifest."""
    changes = []
    for rel, info in sorted(m.files.items()):
        full = os.path.join(workspace, rel)
        if not os.path.exists(full):
            changes.append({"file": rel, "change": "deleted", "set": info.get("set")})
            continue
        now = _sha256(full)
        if now != info["sha256"]:
            changes.append({"file": rel, "change": "modified", "set": info.get("set"), "before": info["sha256"], "after": now})
    globs = tuple(protect) + m.protect
    for rel in walk_files(workspace):
        if rel in m.files:
            continue
        g = P.match_any(rel, globs)
        gate = P.is_gate_file(rel)
        if g or gate:
            changes.append({"file": rel, "change": "added", "set": "protected" if g else "gate"})
    return changes


def find_canaries(canaries: list[Canary], texts: Iterable[tuple[Any, str]]) -> list[tuple[Canary, Any]]:
    """Every (canary, where) pair whose canary text occurs in one of ``texts`` (``(where, text)``)."""
    if not canaries:
        return []
    hits = []
    for where, text in texts:
        if not text:
            continue
        for c in canaries:
            if c.text in text:
                hits.append((c, where))
    return hits


def workspace_test_file_count(workspace: str, exclude: set[str] | None = None) -> int:
    """How many test source files the workspace holds (``exclude``: paths not to count)."""
    exclude = exclude or set()
    return sum(1 for r in walk_files(workspace)
               if r not in exclude and P.is_test_file(r) and r.endswith((".py", ".js", ".ts", ".go", ".rs", ".rb", ".java")))

