"""The real change a run made: a unified diff from git (against a base
revision, untracked files, renames and deletions included) or, without git,
rebuilt from the record's file-editor events, and parsed into per-file line
changes for the diff rules.

Git never runs the workspace's code and never reads a working-tree file:
the files are hashed here (symlinks as their target, special files never
opened), the changed blobs go to a temporary object directory, the tree is
built in a temporary index and two trees are diffed, with every config
source that could start a program (filters, textconv, external diff, hooks,
fsmonitor, pager; from any include, the worktree config, the global or
system config or ``GIT_*`` variables) out of reach, and replace objects off
(replace refs and grafts are reported as tampering). Neither the index,
``.git/objects`` nor the refs of the workspace are touched.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import stat
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
    tampering: list[dict[str, Any]] = field(default_factory=list)

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
        if self.tampering:
            d["tampering"] = self.tampering
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


def _env_dir_name(name: str) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(name, d) for d in ENV_DIRS)


def _in_env_dir(path: str) -> bool:
    return any(_env_dir_name(p) for p in path.replace("\\", "/").split("/")[:-1])


class _GitError(Exception):
    pass


def _git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git process: no ``GIT_*`` variable of the caller
    (``GIT_CONFIG_*``, ``GIT_EXTERNAL_DIFF``, ``GIT_DIR`` ...), no system or
    global configuration, no replace objects, no pager, no prompt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("PAGER", "XDG_CONFIG_HOME")}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_SYSTEM": os.devnull,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_ALLOW_PROTOCOL": "",
        "LC_ALL": "C",
    })
    if extra:
        env.update(extra)
    return env


#: Command-line configuration outranks every config file (include.path,
#: includeIf, config.worktree): nothing that runs a program or writes beside
#: the repository is left on. The diff itself never makes git read a working
#: tree file's content (files are hashed here), so no filter can run either.
_SAFE = ["--no-pager", "-c", "core.hooksPath=" + os.devnull, "-c", "core.fsmonitor=false", "-c", "core.quotepath=off",
         "-c", "diff.external=", "-c", "core.autocrlf=false", "-c", "core.untrackedCache=false", "-c", "core.splitIndex=false",
         "-c", "core.attributesFile=" + os.devnull, "-c", "core.excludesFile=" + os.devnull, "-c", "core.pager=cat",
         "-c", "core.sshCommand=false", "-c", "core.askPass=false", "-c", "credential.helper=", "-c", "protocol.allow=never",
         "-c", "log.showSignature=false", "-c", "index.sparse=false", "-c", "core.sparseCheckout=false",
         "-c", "gc.auto=0", "-c", "maintenance.auto=false"]


def _git(cwd: str, *args: str, env: dict[str, str] | None = None, check: bool = True, timeout: int = 120,
         stdin: bytes | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["git", *_SAFE, *args],
        cwd=cwd,
        env=_git_env(env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise _GitError(f"git {' '.join(args[:4])}{' ...' if len(args) > 4 else ''}: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc


_GIT_VERSION: list[str] = []


def git_version() -> str | None:
    """The installed git's version string (cached), or None without git."""
    if not _GIT_VERSION:
        try:
            out = subprocess.run(["git", "--version"], capture_output=True, timeout=30, env=_git_env()).stdout.decode().strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        _GIT_VERSION.append(out.replace("git version ", "") or "")
    return _GIT_VERSION[0] or None


def is_git_workspace(workspace: str) -> bool:
    """Whether ``workspace`` is inside a git work tree (and git is installed)."""
    if shutil.which("git") is None or not os.path.isdir(workspace):
        return False
    try:
        p = _git(os.path.realpath(workspace), "rev-parse", "--is-inside-work-tree", check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    if p.returncode != 0 and b"dubious ownership" in p.stderr:
        return True  # a repository git refuses: git_diff says so (never a silent fallback to the record)
    return p.returncode == 0 and p.stdout.strip() == b"true"


_NULL_OIDS = {"sha1": b"0" * 40, "sha256": b"0" * 64}


@dataclass(slots=True)
class _Tree:
    """The working tree as git would stage it, built here without running git on it."""

    entries: dict[bytes, tuple[bytes, bytes]] = field(default_factory=dict)  # top-relative path -> (mode, oid)
    to_write: dict[bytes, tuple[str, bytes]] = field(default_factory=dict)  # oid -> (kind, source path or link target)
    special: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kept_gitlinks: list[str] = field(default_factory=list)


def _blob_oid(algo: str, data_iter, size: int) -> bytes:
    import hashlib

    h = hashlib.new(algo)
    h.update(b"blob %d\0" % size)
    for chunk in data_iter:
        h.update(chunk)
    return h.hexdigest().encode()


def _read_regular(path: bytes, limit: int, chunk: int = 1 << 20):
    """The bytes of a regular file, opened without following a symlink and
    without blocking, at most ``limit`` bytes (its size when it was opened)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{os.fsdecode(path)} is not a regular file")
        left = min(limit, st.st_size)
        while left > 0:
            b = os.read(fd, min(chunk, left))
            if not b:
                break
            left -= len(b)
            yield b
    finally:
        os.close(fd)


def _file_oid(algo: str, path: bytes, size: int) -> bytes:
    got = 0

    def it():
        nonlocal got
        for b in _read_regular(path, size):
            got += len(b)
            yield b

    oid = _blob_oid(algo, it(), size)
    if got != size:
        raise OSError(f"{os.fsdecode(path)} changed while it was read")
    return oid


def _write_object(objdir: str, algo: str, oid: bytes, kind: str, src: bytes, size: int) -> None:
    import zlib

    d = os.path.join(objdir, oid[:2].decode())
    os.makedirs(d, exist_ok=True)
    dest = os.path.join(d, oid[2:].decode())
    if os.path.exists(dest):
        return
    comp = zlib.compressobj(1)
    parts = [comp.compress(b"blob %d\0" % size)]
    if kind == "link":
        parts.append(comp.compress(src))
        check = _blob_oid(algo, [src], size)
    else:
        data = []

        def it():
            for b in _read_regular(src, size):
                data.append(len(b))
                parts.append(comp.compress(b))
                yield b

        check = _blob_oid(algo, it(), size)
        if sum(data) != size:
            raise OSError(f"{os.fsdecode(src)} changed while it was read")
    if check != oid:
        raise OSError(f"{os.fsdecode(src)} changed while it was read")
    parts.append(comp.flush())
    with open(dest + ".tmp", "wb") as f:
        f.write(b"".join(parts))
    os.replace(dest + ".tmp", dest)


def _scan_tree(top: bytes, ws_rel: bytes, algo: str, base: dict[bytes, tuple[bytes, bytes]], filemode: bool) -> _Tree:
    """Hash the files under ``top/ws_rel`` as git would stage them (no filters,
    symlinks stored as their target, never followed; FIFOs, sockets and devices
    listed, never opened); ``.git`` entries, environment directories and
    submodules of the base are left out."""
    out = _Tree()
    prefix = b"" if ws_rel in (b"", b".") else ws_rel + b"/"
    stack = [prefix]
    while stack:
        rel_dir = stack.pop()
        full_dir = os.path.join(top, rel_dir) if rel_dir else top
        try:
            with os.scandir(full_dir) as it:
                ents = sorted(it, key=lambda e: e.name)
        except OSError as e:
            out.problems.append(f"cannot list {os.fsdecode(rel_dir) or '.'}: {e.strerror}")
            continue
        for ent in ents:
            name = ent.name
            if name == b".git":
                continue
            rel = rel_dir + name
            try:
                st = ent.stat(follow_symlinks=False)
            except OSError as e:
                out.problems.append(f"cannot stat {os.fsdecode(rel)}: {e.strerror}")
                continue
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                if _env_dir_name(os.fsdecode(name)):
                    continue
                if base.get(rel, (b"",))[0] == b"160000":
                    out.entries[rel] = base[rel]
                    out.kept_gitlinks.append(os.fsdecode(rel))
                    continue
                stack.append(rel + b"/")
            elif stat.S_ISLNK(mode):
                try:
                    target = os.readlink(os.path.join(top, rel))
                except OSError as e:
                    out.problems.append(f"cannot read the link {os.fsdecode(rel)}: {e.strerror}")
                    continue
                oid = _blob_oid(algo, [target], len(target))
                out.entries[rel] = (b"120000", oid)
                if base.get(rel) != (b"120000", oid):
                    out.to_write[oid] = ("link", target)
            elif stat.S_ISREG(mode):
                fmode = b"100755" if mode & stat.S_IXUSR else b"100644"
                if not filemode and rel in base and base[rel][0] in (b"100644", b"100755"):
                    fmode = base[rel][0]
                try:
                    oid = _file_oid(algo, os.path.join(top, rel), st.st_size)
                except OSError as e:
                    out.problems.append(f"cannot read {os.fsdecode(rel)}: {e.strerror or e}")
                    continue
                out.entries[rel] = (fmode, oid)
                if base.get(rel, (b"", b""))[1] != oid:
                    out.to_write[oid] = ("file", os.path.join(top, rel))
            else:
                kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
                out.special.append(f"{os.fsdecode(rel)} ({kind})")
    return out


def git_diff(workspace: str, base: str | None = None, force_include: list[str] | None = None) -> DiffResult:
    """The working tree of ``workspace`` against ``base`` (default ``HEAD``):
    tracked changes, untracked files, renames and deletions; ignored files
    whose paths match ``force_include`` globs are included too.

    git only ever reads objects, refs and ignore rules here: the working
    tree's files are hashed in this process (no clean filter, no textconv,
    no fsmonitor can run), the new objects go to a temporary object
    directory and the tree is built in a temporary index, and the diff is
    between two trees. ``refs/replace/*`` and ``info/grafts`` are reported as
    ``tampering`` (git is run with replace objects off).
    """
    from .paths import match_any

    ws = os.path.realpath(workspace)
    try:
        p = _git(ws, "rev-parse", "--show-toplevel", "--git-common-dir", "--show-object-format", timeout=60)
        lines = p.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 3:
            raise _GitError(f"unexpected git rev-parse output: {p.stdout[:200]!r}")
        top = os.path.realpath(lines[0])
        common = os.path.realpath(os.path.join(ws, lines[1]))
        algo = lines[2].strip()
        if algo not in _NULL_OIDS:
            return DiffResult("git", False, f"unsupported git object format {algo!r}", base=base)
        if os.path.commonpath([ws, top]) != top:
            return DiffResult("git", False, f"git names {top} as the work tree, which does not hold {ws} (core.worktree?)", base=base)
        rev = base or "HEAD"
        p = _git(top, "rev-parse", "--verify", "--quiet", rev + "^{commit}", check=False)
        if p.returncode != 0:
            if base is None:
                has_head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0
                if not has_head:
                    # every file would look added (a pre-existing conftest.py included): no base, no diff
                    return DiffResult("git", False, f"{top} has no commits and no --base was given: nothing marks the start of the run", base=None)
                return DiffResult("git", False, "HEAD does not resolve", base=rev)
            return DiffResult("git", False, f"base revision {base!r} does not resolve to a commit in {top}", base=base)
        rev_id, rev_label = p.stdout.decode().strip(), rev
        tampering = []
        refs = _git(top, "for-each-ref", "--format=%(refname) %(objectname)", "refs/replace/").stdout.decode("utf-8", "replace").split("\n")
        refs = [r for r in refs if r.strip()]
        if refs:
            tampering.append({"what": "replace-refs", "refs": refs[:20], "count": len(refs),
                              "message": f"{len(refs)} git replace ref(s) (refs/replace/*) swap objects: {refs[0]}"})
        grafts = os.path.join(common, "info", "grafts")
        if os.path.lexists(grafts):
            tampering.append({"what": "grafts", "file": grafts, "message": f"a git grafts file rewrites history: {grafts}"})
        btop = os.fsencode(top)
        rel_ws = os.path.relpath(ws, top)
        brel = b"" if rel_ws == "." else os.fsencode(rel_ws).replace(os.sep.encode(), b"/")
        listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", rev_id, timeout=300).stdout
        base_entries: dict[bytes, tuple[bytes, bytes]] = {}
        for rec in listing.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            mode, _typ, oid = meta.split(b" ")
            base_entries[path] = (mode, oid)
        fm = _git(top, "config", "--bool", "core.filemode", check=False).stdout.strip()
        tree = _scan_tree(btop, brel, algo, base_entries, fm != b"false")
        if tree.problems:
            return DiffResult("git", False, f"the working tree could not be read completely: {tree.problems[0]}", base=rev_id)
        notes: list[str] = []
        # ignore rules (read by git: .gitignore files and info/exclude, which must be regular files
        # or git would block on them), for untracked files only
        for rel in [r for r in tree.special if r.split(" (")[0].rsplit("/", 1)[-1] in (".gitignore", ".gitattributes")]:
            return DiffResult("git", False, f"{rel} is not a regular file: git would block reading it", base=rev_id)
        excl = os.path.join(common, "info", "exclude")
        if os.path.lexists(excl) and not os.path.isfile(excl):
            return DiffResult("git", False, f"{excl} is not a regular file: git would block reading it", base=rev_id)
        pathspec = ["--", rel_ws if rel_ws != "." else "."] + [f":(exclude,glob){'' if rel_ws == '.' else rel_ws + '/'}**/{d}/**" for d in ENV_DIRS]
        with tempfile.TemporaryDirectory(prefix="trajkit-git-") as tmp:
            env = {
                "GIT_INDEX_FILE": os.path.join(tmp, "index"),
                "GIT_OBJECT_DIRECTORY": os.path.join(tmp, "objects"),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(common, "objects"),
            }
            os.makedirs(os.path.join(tmp, "objects"))
            ign = _git(top, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", *pathspec, env=env, timeout=300).stdout
            ignored = {x for x in ign.split(b"\0") if x}
            forced = []
            entries = {}
            for path, ent in tree.entries.items():
                if path in ignored and path not in base_entries:
                    rel = os.path.relpath(os.path.join(top, os.fsdecode(path)), ws)
                    if not (force_include and match_any(rel, force_include)):
                        continue
                    forced.append(os.fsdecode(path))
                entries[path] = ent
            if forced:
                notes.append(f"{len(forced)} git-ignored file(s) on the gate/protected set included: {', '.join(forced[:5])}")
            if tree.special:
                notes.append(f"{len(tree.special)} special file(s) not read (git stores none): {', '.join(tree.special[:5])}")
            if tree.kept_gitlinks:
                notes.append(f"{len(tree.kept_gitlinks)} submodule(s) of the base not compared: {', '.join(tree.kept_gitlinks[:5])}")
            lines_in: list[bytes] = []
            null = _NULL_OIDS[algo]
            for path, (mode, oid) in base_entries.items():
                if (brel and not (path + b"/").startswith(brel + b"/")) or _in_env_dir(os.fsdecode(path[len(brel) + 1 if brel else 0:])):
                    continue
                if path not in entries:
                    lines_in.append(b"0 " + null + b"\t" + path + b"\0")
            for path, (mode, oid) in entries.items():
                if base_entries.get(path) != (mode, oid):
                    kind, src = tree.to_write.get(oid, ("", b""))
                    if kind:
                        size = len(src) if kind == "link" else os.lstat(src).st_size
                        _write_object(os.path.join(tmp, "objects"), algo, oid, kind, src, size)
                    lines_in.append(mode + b" " + oid + b"\t" + path + b"\0")
            _git(top, "read-tree", rev_id, env=env)
            if lines_in:
                _git(top, "update-index", "-z", "--index-info", env=env, stdin=b"".join(lines_in), timeout=300)
            new_tree = _git(top, "write-tree", env=env, timeout=300).stdout.decode().strip()
            out = _git(
                top, "diff-tree", "-r", "-p", "-M", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
                "--relative=" + rel_ws if rel_ws != "." else "--no-relative", rev_id, new_tree, env=env, timeout=600,
            ).stdout.decode("utf-8", "replace")
    except (_GitError, OSError, subprocess.SubprocessError, ValueError) as e:
        if "dubious ownership" in str(e):
            return DiffResult("git", False, f"git refuses {ws}: the repository is owned by another user, and certify does not "
                              "override safe.directory (its config could run code); certify as the repository's owner", base=base)
        return DiffResult("git", False, f"git diff failed: {e}", base=base)
    files = parse_unified(out, "git")
    return DiffResult("git", True, f"git diff against {rev_label}", base=rev_id, files=files, text=out, notes=notes, tampering=tampering)


# ---------------------------------------------------------------- rebuilt from events

def rebuild_from_events(session: Session, actions: list, workspace_rel) -> DiffResult:
    """A diff rebuilt from the file edits the reader found (``Event.edit``:
    old / new content); shell writes are listed as not reconstructable and
    make it untrustworthy.

    ``workspace_rel(path)`` maps a recorded path to a workspace-relative one.
    """
    final = [e for sess in session.walk() for e in sess.events if e.edit is not None and e.edit.final and e.edit.patch]
    if final:
        # the harness's own diff of the whole run (a submission patch): shell writes are in it
        text = final[-1].edit.patch  # type: ignore[union-attr]
        files = parse_unified(text, "events")
        for fc in files:
            fc.event_ids = [final[-1].id]
        return DiffResult("events", True, "the harness's own diff of the run (its submission patch)", files=files, text=text)
    first_old: dict[str, str | None] = {}
    last_new: dict[str, str | None] = {}
    events_of: dict[str, list[Any]] = {}
    gaps: list[dict[str, Any]] = []
    for sess in session.walk():
        for e in sess.events:
            if e.kind != OBSERVATION:
                continue
            edit = e.edit
            if edit is None:
                continue
            path, old, new, prev = edit.path, edit.old, edit.new, edit.existed
            if edit.whole:
                old = None
                if new is None:
                    gaps.append({"event_id": e.id, "path": path, "why": "write observation without content"})
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
        first = (unrec[0]["command"] or "").split("\n", 1)[0][:80]  # as written: no repr re-quoting
        reason = f"rebuilt from file-editor events; {len(unrec)} shell write(s) cannot be reconstructed (first: {first})"
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
