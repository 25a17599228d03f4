"""The real change a run made: a unified diff from git (against a base
revision, untracked files, renames and deletions included) or, without git,
rebuilt from the record's file-editor events, and parsed into per-file line
changes for the diff rules.

Git is run read-only with respect to the workspace: the changes are staged
into a temporary index whose new objects go to a temporary object directory,
so neither the index nor ``.git/objects`` of the workspace is touched, and
hooks, fsmonitor, external diff drivers, textconv and clean filters are
switched off.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import OBSERVATION, Session

ADDED, MODIFIED, DELETED, RENAMED = "added", "modified", "deleted", "renamed"


@dataclass(slots=True)
class DiffLine:
    """One line of a hunk: ``op`` is ``+``, ``-`` or `` ``; line numbers are 1-based."""

    op: str
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass(slots=True)
class FileChange:
    """One changed file: its path (the new path for a rename), the old path,
    the change status, whether it is binary, and its hunk lines in order."""

    path: str
    status: str = MODIFIED
    old_path: str | None = None
    binary: bool = False
    lines: list[DiffLine] = field(default_factory=list)
    source: str = "git"
    event_ids: list[Any] = field(default_factory=list)

    @property
    def added(self) -> list[DiffLine]:
        return [l for l in self.lines if l.op == "+"]

    @property
    def removed(self) -> list[DiffLine]:
        return [l for l in self.lines if l.op == "-"]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "status": self.status, "added": len(self.added), "removed": len(self.removed)}
        if self.old_path:
            d["old_path"] = self.old_path
        if self.binary:
            d["binary"] = True
        if self.event_ids:
            d["event_ids"] = self.event_ids
        return d


@dataclass(slots=True)
class DiffResult:
    """The diff a certificate rests on.

    ``source`` is ``git``, ``events`` or ``none``; ``trustworthy`` says
    whether it can be relied on, ``reason`` why not (or what it is);
    ``unreconstructable`` lists shell writes an event-rebuilt diff cannot
    replay; ``text`` is the unified diff.
    """

    source: str
    trustworthy: bool
    reason: str = ""
    base: str | None = None
    files: list[FileChange] = field(default_factory=list)
    text: str = ""
    unreconstructable: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "source": self.source,
            "trustworthy": self.trustworthy,
            "reason": self.reason,
            "base": self.base,
            "files": [f.to_dict() for f in self.files],
        }
        if self.unreconstructable:
            d["unreconstructable"] = self.unreconstructable
        if self.notes:
            d["notes"] = self.notes
        return d


# ---------------------------------------------------------------- parsing

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _unquote(p: str) -> str:
    p = p.strip()
    if p.startswith('"') and p.endswith('"'):
        body = p[1:-1]
        try:
            return body.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
        except (UnicodeDecodeError, UnicodeEncodeError):
            return body
    return p


def _strip_prefix(p: str) -> str:
    p = _unquote(p)
    if p.startswith(("a/", "b/")):
        return p[2:]
    return p


def parse_unified(text: str, source: str = "git") -> list[FileChange]:
    """Per-file changes from unified diff text (git's extended headers understood).

    Hunk bodies are consumed by the counts in their ``@@`` headers, so a
    removed line that itself starts with ``-- `` is never taken for a header.
    """
    files: list[FileChange] = []
    cur: FileChange | None = None
    old_no = new_no = 0
    old_left = new_left = 0
    fresh = False  # cur was opened by "diff --git" and has seen no "---" yet
    for raw in text.split("\n"):
        if old_left > 0 or new_left > 0:
            if cur is not None and raw[:1] in ("+", "-", " ", ""):
                op = raw[:1] or " "
                if op == "+":
                    cur.lines.append(DiffLine("+", raw[1:], None, new_no))
                    new_no += 1
                    new_left -= 1
                elif op == "-":
                    cur.lines.append(DiffLine("-", raw[1:], old_no, None))
                    old_no += 1
                    old_left -= 1
                else:
                    cur.lines.append(DiffLine(" ", raw[1:], old_no, new_no))
                    old_no += 1
                    new_no += 1
                    old_left -= 1
                    new_left -= 1
                continue
            if raw.startswith("\\"):
                continue
            old_left = new_left = 0  # a short hunk: fall through to header parsing
        if raw.startswith("\\"):
            continue
        if raw.startswith("diff --git "):
            m = re.match(r'^diff --git ("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$', raw)
            path = _strip_prefix(m.group(2)) if m else raw.split(" b/", 1)[-1]
            cur = FileChange(path, MODIFIED, source=source)
            files.append(cur)
            fresh = True
            continue
        if raw.startswith("--- "):
            if cur is None or not fresh:
                cur = FileChange("", MODIFIED, source=source)
                files.append(cur)
            fresh = False
            old = raw[4:].split("\t")[0]
            if old.strip() == "/dev/null":
                cur.status = ADDED
            elif not cur.path:
                cur.path = _strip_prefix(old)
            continue
        if cur is None:
            continue
        if raw.startswith("+++ "):
            new = raw[4:].split("\t")[0]
            if new.strip() == "/dev/null":
                cur.status = DELETED
            else:
                cur.path = _strip_prefix(new)
            continue
        if raw.startswith("new file mode"):
            cur.status = ADDED
        elif raw.startswith("deleted file mode"):
            cur.status = DELETED
        elif raw.startswith("rename from "):
            cur.old_path = _unquote(raw[len("rename from "):])
            cur.status = RENAMED
        elif raw.startswith("rename to "):
            cur.path = _unquote(raw[len("rename to "):])
        elif raw.startswith("Binary files ") or raw.startswith("GIT binary patch"):
            cur.binary = True
        else:
            m = _HUNK.match(raw)
            if m:
                old_no, new_no = int(m.group(1)), int(m.group(3))
                old_left = int(m.group(2)) if m.group(2) is not None else 1
                new_left = int(m.group(4)) if m.group(4) is not None else 1
                fresh = False
    return [f for f in files if f.path]


# ---------------------------------------------------------------- git

#: Environment and cache directories: never part of the change (pytest does not
#: collect from them either). A virtualenv's ``*.pth`` files are not gate tampering.
ENV_DIRS = (".venv", "venv", ".virtualenv", ".tox", ".nox", "node_modules", "__pycache__", ".pytest_cache",
            ".mypy_cache", ".ruff_cache", ".hypothesis", "site-packages", ".eggs", "*.egg-info")


def _in_env_dir(path: str) -> bool:
    import fnmatch

    parts = path.replace("\\", "/").split("/")[:-1]
    return any(fnmatch.fnmatch(p, d) for p in parts for d in ENV_DIRS)


class _GitError(Exception):
    pass


def _git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
    })
    if extra:
        env.update(extra)
    return env


_SAFE = ["-c", "core.hooksPath=" + os.devnull, "-c", "core.fsmonitor=false", "-c", "core.quotepath=off",
         "-c", "diff.external=", "-c", "core.autocrlf=false", "-c", "safe.directory=*"]


def _git(cwd: str, *args: str, env: dict[str, str] | None = None, check: bool = True, timeout: int = 120, extra_cfg: list[str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["git", *_SAFE, *(extra_cfg or []), *args],
        cwd=cwd,
        env=_git_env(env),
        capture_output=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise _GitError(f"git {' '.join(args)}: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc


_GIT_VERSION: list[str] = []


def git_version() -> str | None:
    """The installed git's version string (cached), or None without git."""
    if not _GIT_VERSION:
        try:
            out = subprocess.run(["git", "--version"], capture_output=True, timeout=30).stdout.decode().strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        _GIT_VERSION.append(out.replace("git version ", "") or "")
    return _GIT_VERSION[0] or None


def is_git_workspace(workspace: str) -> bool:
    """Whether ``workspace`` is inside a git work tree (and git is installed)."""
    if shutil.which("git") is None or not os.path.isdir(workspace):
        return False
    try:
        p = _git(workspace, "rev-parse", "--is-inside-work-tree", check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0 and p.stdout.strip() == b"true"


def git_diff(workspace: str, base: str | None = None, force_include: list[str] | None = None) -> DiffResult:
    """The working tree of ``workspace`` against ``base`` (default ``HEAD``):
    tracked changes, untracked files, renames and deletions; ignored files
    whose paths match ``force_include`` globs are included too."""
    from .paths import match_any

    ws = os.path.abspath(workspace)
    try:
        top = _git(ws, "rev-parse", "--show-toplevel").stdout.decode().strip()
        rev = base or "HEAD"
        p = _git(top, "rev-parse", "--verify", "--quiet", rev + "^{commit}", check=False)
        if p.returncode != 0:
            if base is None:
                has_head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0
                if not has_head:
                    # every file would look added (a pre-existing conftest.py included): no base, no diff
                    return DiffResult("git", False, f"{top} has no commits and no --base was given: nothing marks the start of the run", base=None)
                else:
                    return DiffResult("git", False, "HEAD does not resolve", base=rev)
            else:
                return DiffResult("git", False, f"base revision {base!r} does not resolve to a commit in {top}", base=base)
        else:
            rev_id, rev_label = p.stdout.decode().strip(), rev
        filters = _git(top, "config", "--local", "--name-only", "--get-regexp", r"^filter\.", check=False).stdout.decode().split()
        extra_cfg: list[str] = []
        for name in sorted({f.rsplit(".", 1)[0] for f in filters if f.count(".") >= 2}):
            extra_cfg += ["-c", f"{name}.clean=cat", "-c", f"{name}.smudge=cat", "-c", f"{name}.process=", "-c", f"{name}.required=false"]
        objects = _git(top, "rev-parse", "--git-path", "objects").stdout.decode().strip()
        objects = os.path.abspath(os.path.join(top, objects))
        rel_ws = os.path.relpath(ws, top)
        pathspec = ["--", rel_ws if rel_ws != "." else "."] + [f":(exclude,glob){'' if rel_ws == '.' else rel_ws + '/'}**/{d}/**" for d in ENV_DIRS]
        with tempfile.TemporaryDirectory(prefix="trajkit-git-") as tmp:
            env = {
                "GIT_INDEX_FILE": os.path.join(tmp, "index"),
                "GIT_OBJECT_DIRECTORY": os.path.join(tmp, "objects"),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
            }
            os.makedirs(os.path.join(tmp, "objects"))
            _git(top, "read-tree", rev_id, env=env, extra_cfg=extra_cfg)
            _git(top, "add", "-A", *pathspec, env=env, extra_cfg=extra_cfg, timeout=600)
            notes = []
            if force_include:
                ign = _git(top, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", *pathspec, env=env, extra_cfg=extra_cfg).stdout
                hits = [f for f in ign.decode("utf-8", "replace").split("\0")
                        if f and not _in_env_dir(f) and match_any(os.path.relpath(os.path.join(top, f), ws), force_include)]
                if hits:
                    notes.append(f"{len(hits)} git-ignored file(s) on the gate/protected set included: {', '.join(hits[:5])}")
                    for i in range(0, len(hits), 200):
                        _git(top, "add", "-f", "--", *hits[i : i + 200], env=env, extra_cfg=extra_cfg)
            out = _git(
                top, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--relative=" + rel_ws if rel_ws != "." else "--no-relative",
                rev_id, env=env, extra_cfg=extra_cfg, timeout=600,
            ).stdout.decode("utf-8", "replace")
    except (_GitError, OSError, subprocess.SubprocessError) as e:
        return DiffResult("git", False, f"git diff failed: {e}", base=base)
    files = parse_unified(out, "git")
    return DiffResult("git", True, f"git diff against {rev_label}", base=rev_id, files=files, text=out, notes=notes)


# ---------------------------------------------------------------- rebuilt from events

def _as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def rebuild_from_events(session: Session, actions: list, workspace_rel) -> DiffResult:
    """A diff rebuilt from file-editor observations (old / new content);
    shell writes are listed as not reconstructable and make it untrustworthy.

    ``workspace_rel(path)`` maps a recorded path to a workspace-relative one.
    """
    first_old: dict[str, str | None] = {}
    last_new: dict[str, str | None] = {}
    events_of: dict[str, list[Any]] = {}
    gaps: list[dict[str, Any]] = []
    for sess in session.walk():
        for e in sess.events:
            if e.kind != OBSERVATION:
                continue
            raw = _as_dict(e.raw)
            obs = _as_dict(raw.get("observation"))
            if obs.get("kind") in ("FileEditorObservation", "PlanningFileEditorObservation"):
                cmd = obs.get("command")
                if cmd in (None, "view") or obs.get("is_error"):
                    continue
                path, old, new, prev = obs.get("path"), obs.get("old_content"), obs.get("new_content"), obs.get("prev_exist")
            elif raw.get("observation") == "edit":
                ex = _as_dict(raw.get("extras"))
                path, old, new, prev = ex.get("path"), ex.get("old_content"), ex.get("new_content"), ex.get("prev_exist")
            elif raw.get("observation") == "write":
                ex = _as_dict(raw.get("extras"))
                path, old, new, prev = ex.get("path"), None, ex.get("content"), ex.get("prev_exist")
                if new is None:
                    gaps.append({"event_id": e.id, "path": path, "why": "write observation without content"})
                    continue
            else:
                continue
            if not isinstance(path, str):
                continue
            if prev is False and old is None:
                old = ""
            if path not in first_old:
                if old is None:
                    gaps.append({"event_id": e.id, "path": path, "why": "editor observation without the old content"})
                first_old[path] = old
            if new is None:
                gaps.append({"event_id": e.id, "path": path, "why": "editor observation without the new content"})
            last_new[path] = new
            events_of.setdefault(path, []).append(e.id)
    unrec = []
    for a in actions:
        if a.op == "write" and a.via in ("shell", "code"):
            if a.path and a.rel is None and a.path.startswith("/"):
                continue  # outside the workspace (/tmp, /dev, site-packages): not part of the change
            unrec.append({"event_id": a.event_id, "step_id": a.step_id, "command": (a.command or "")[:300], "path": a.rel or a.path or a.detail.get("target")})
    files: list[FileChange] = []
    chunks: list[str] = []
    for path, old in first_old.items():
        new = last_new.get(path)
        if old is None or new is None or old == new:
            continue
        rel = workspace_rel(path) or path
        ud = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{rel}", f"b/{rel}", lineterm="", n=3))
        if not ud:
            continue
        text = f"diff --git a/{rel} b/{rel}\n" + ("new file mode 100644\n" if old == "" else "") + "\n".join(ud) + "\n"
        chunks.append(text)
        for fc in parse_unified(text, "events"):
            fc.event_ids = events_of.get(path, [])
            if old == "":
                fc.status = ADDED
            files.append(fc)
    trustworthy = not unrec and not gaps
    if unrec:
        reason = f"rebuilt from file-editor events; {len(unrec)} shell write(s) cannot be reconstructed (first: {unrec[0]['command'][:80]!r})"
    elif gaps:
        reason = f"rebuilt from file-editor events; {len(gaps)} edit(s) lack their content"
    else:
        reason = "rebuilt from file-editor events (no shell writes)"
    return DiffResult("events", trustworthy, reason, files=files, text="".join(chunks), unreconstructable=unrec + gaps)


def read_patch_file(path: str) -> DiffResult:
    """A diff supplied as a patch file (e.g. a SWE-agent submission)."""
    try:
        text = Path(path).read_text("utf-8", errors="replace")
    except OSError as e:
        return DiffResult("patch", False, f"cannot read patch {path}: {e.strerror}")
    return DiffResult("patch", True, f"patch file {path}", files=parse_unified(text, "patch"), text=text)
