"""Path sets: the operator's protected set, the gate set, test files, and
the glob matching they use.

Globs match whole path segments (``*`` never crosses ``/``, ``**`` spans any
number of segments), against the workspace-relative path, or against the
absolute path for paths outside the workspace. So ``**/holdout/**`` matches
``tests/holdout/a.py`` but never a directory called ``holdout-study``.
"""

from __future__ import annotations

import functools
import posixpath
import re

#: Protected by default: holdout and answer-key paths.
DEFAULT_PROTECT: tuple[str, ...] = (
    "**/holdout/**", "**/holdouts/**", "**/hold_out/**", "**/hold-out/**",
    "**/heldout/**", "**/held_out/**", "**/held-out/**",
    "**/holdout_tests/**", "**/holdout-tests/**", "**/hidden_tests/**", "**/hidden-tests/**",
    "**/answer_key", "**/answer_key.*", "**/answer_key/**", "**/answer-key", "**/answer-key.*", "**/answer-key/**",
    "**/answerkey", "**/answerkey.*", "**/answerkey/**", "**/answer_keys/**", "**/answer-keys/**",
    "**/withheld/**", "**/withheld_tests/**", "**/withheld-tests/**", "**/private_tests/**", "**/private-tests/**",
    "**/secret_tests/**", "**/secret-tests/**", "**/oracle/**", "**/reference_solution*", "**/reference-solution*",
    "**/*.secret",
)

#: Files whose change changes what the gate checks (any write is gate tampering).
GATE_FILES: tuple[str, ...] = (
    "**/conftest.py", "**/pytest.ini", "**/tox.ini", "**/noxfile.py", "**/.coveragerc",
    "**/sitecustomize.py", "**/usercustomize.py", "**/*.pth",
    ".github/workflows/**", "**/.github/workflows/**", "**/.gitlab-ci.yml", "**/.circleci/**", "**/Jenkinsfile",
    "**/.travis.yml", "**/azure-pipelines.yml", "**/.buildkite/**",
    "**/verify-fast", "**/verify-full", "**/verify-safety", "**/verify-fast.sh", "**/verify-full.sh", "**/verify-safety.sh",
    "**/jest.config.*", "**/vitest.config.*", "**/vitest.workspace.*", "**/karma.conf.*", "**/.mocharc*",
    "**/phpunit.xml", "**/phpunit.xml.dist", "**/run_tests.sh", "**/run-tests.sh", "**/run_tests.py",
    "**/holdout_gate.py", "**/anticheat_scan.py", "**/self_eval.py",
)

#: Shared config files that are gate files only in their test sections.
MIXED_CONFIG: tuple[str, ...] = ("**/pyproject.toml", "**/setup.cfg", "**/package.json", "**/Makefile", "**/makefile", "**/GNUmakefile", "**/Cargo.toml", "**/go.mod")

#: Test sections / keys inside the mixed config files.
TEST_CONFIG_KEYS = re.compile(
    r"\[tool\.pytest|\[tool:pytest\]|\[pytest\]|\baddopts\b|\btestpaths\b|\bpython_files\b|\bxfail_strict\b|\bfilterwarnings\b"
    r"|\[tool\.coverage|\bfail_under\b|\"test\"\s*:|\"jest\"\s*:|\"vitest\"\s*:|\"mocha\"\s*:|^\s*test\s*:|^test:|^check:"
    r"|\[tool\.tox|\[tool\.nox",
    re.M,
)

_TEST_FILE = re.compile(
    r"(^|/)(tests?|spec|specs|__tests__)/|(^|/)test_[^/]*\.py$|(^|/)[^/]*_test\.[a-z]+$|(^|/)[^/]*\.(test|spec)\.[a-z]+$|(^|/)[^/]*_spec\.rb$|(^|/)[^/]*Test\.java$"
)


# ---------------------------------------------------------------- glob matching
#
# Globs are matched by the small automata below, never by a backtracking
# regex: a pattern such as ``tests/**a**a**a...**b`` (recorded in an agent's
# command) costs O(len(path) x len(pattern)) at most.

_LIT, _ONE, _CLS, _STAR, _DSTAR, _SEGSTAR, _TAIL = range(7)


def _atoms(g: str) -> list[tuple]:
    """A glob as atoms: literal, ``?``, ``[...]``, ``*`` (within a segment),
    ``**`` (across segments), ``**/`` (whole segments) and a trailing ``/**``
    (the directory itself or anything below it)."""
    out: list[tuple] = []
    i, n = 0, len(g)
    while i < n:
        c = g[i]
        if g.startswith("**/", i):
            out.append((_SEGSTAR,))
            i += 3
        elif g.startswith("/**", i) and i + 3 == n:
            out.append((_TAIL,))
            i += 3
        elif g.startswith("**", i):
            out.append((_DSTAR,))
            i += 2
        elif c == "*":
            out.append((_STAR,))
            i += 1
        elif c == "?":
            out.append((_ONE,))
            i += 1
        elif c == "[":
            j = g.find("]", i + 2 if g.startswith("[!", i) or g.startswith("[^", i) else i + 1)
            if j < 0:
                out.append((_LIT, c))
                i += 1
                continue
            body = g[i + 1 : j]
            neg = body[:1] in ("!", "^")
            if neg:
                body = body[1:]
            chars: set[str] = set()
            ranges: list[tuple[str, str]] = []
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    ranges.append((body[k], body[k + 2]))
                    k += 3
                else:
                    chars.add(body[k])
                    k += 1
            out.append((_CLS, frozenset(chars), tuple(ranges), neg))
            i = j + 1
        else:
            out.append((_LIT, c))
            i += 1
    return out


def _cls_ok(atom: tuple, ch: str) -> bool:
    _, chars, ranges, neg = atom
    hit = ch in chars or any(a <= ch <= b for a, b in ranges)
    return hit != neg


def _step(atoms: list[tuple], states: set, ch: str) -> set:
    nxt: set = set()
    for st in states:
        i, inner = st
        if i >= len(atoms):
            if i == len(atoms) + 1:  # inside a trailing "/**": anything
                nxt.add(st)
            continue
        a = atoms[i]
        k = a[0]
        if k == _LIT:
            if ch == a[1]:
                nxt.add((i + 1, 0))
        elif k == _ONE:
            if ch != "/":
                nxt.add((i + 1, 0))
        elif k == _CLS:
            if _cls_ok(a, ch):
                nxt.add((i + 1, 0))
        elif k == _STAR:
            if ch != "/":
                nxt.add((i, 0))
        elif k == _DSTAR:
            nxt.add((i, 0))
        elif k == _SEGSTAR:
            nxt.add((i, 0) if ch == "/" else (i, 1))
        elif k == _TAIL:
            if ch == "/":
                nxt.add((len(atoms) + 1, 0))
    return _closure(atoms, nxt)


def _closure(atoms: list[tuple], states: set) -> set:
    out = set(states)
    todo = list(states)
    while todo:
        i, inner = todo.pop()
        if i < len(atoms) and not inner and atoms[i][0] in (_STAR, _DSTAR, _SEGSTAR, _TAIL):
            nx = (i + 1, 0)
            if nx not in out:
                out.add(nx)
                todo.append(nx)
    return out


def _nfa_match(atoms: list[tuple], path: str) -> bool:
    """Thompson simulation: a set of positions, one step per character."""
    states = _closure(atoms, {(0, 0)})
    for ch in path:
        states = _step(atoms, states, ch)
        if not states:
            return False
    return any(i >= len(atoms) for i, _ in states)


def _seg_match(atoms: list[tuple], s: str) -> bool:
    """One path segment against a segment pattern with ``*`` (never ``/``):
    two pointers with one backtrack point, O(len(s) x len(atoms))."""
    i = j = 0
    star_i, star_j = -1, 0
    n, m = len(s), len(atoms)
    while j < n:
        if i < m and atoms[i][0] == _STAR:
            star_i, star_j = i, j
            i += 1
            continue
        if i < m and ((atoms[i][0] == _LIT and atoms[i][1] == s[j]) or atoms[i][0] == _ONE or (atoms[i][0] == _CLS and _cls_ok(atoms[i], s[j]))):
            i += 1
            j += 1
            continue
        if star_i >= 0:
            star_j += 1
            i, j = star_i + 1, star_j
            continue
        return False
    while i < m and atoms[i][0] == _STAR:
        i += 1
    return i == m


class Glob:
    """A compiled glob: ``match(path)`` in time linear in the path times the pattern.

    A glob whose ``**`` all stand as whole segments (``**/x``, ``a/**``,
    ``a/**/b``) is matched segment by segment (``**`` segments are the stars
    of a two-pointer match over segments); any other (``a**b``) by a
    position-set automaton over characters.
    """

    __slots__ = ("glob", "required", "_segs", "_atoms")

    def __init__(self, glob: str) -> None:
        g = glob.strip()
        if g.startswith("/"):
            g = g[1:]
        self.glob = glob
        self._segs: list | None = None
        self._atoms: list[tuple] | None = None
        parts = g.split("/")
        if all(p == "**" or "**" not in p for p in parts):
            self._segs = [None if p == "**" else _atoms(p) for p in parts]
        else:
            self._atoms = _atoms(g)
        # the longest run of literal characters every match must contain (a cheap pre-check)
        best, cur = "", ""
        for a in _atoms(g):
            if a[0] == _LIT and a[1] != "/":
                cur += a[1]
                best = max(best, cur, key=len)
            else:
                cur = ""
        self.required = best

    def match(self, path: str) -> bool:
        if self.required and self.required not in path:
            return False
        if self._atoms is not None:
            return _nfa_match(self._atoms, path)
        segs = self._segs
        assert segs is not None
        parts = path.split("/")
        i = j = 0
        star_i, star_j = -1, 0
        n, m = len(parts), len(segs)
        while j < n:
            if i < m and segs[i] is None:
                star_i, star_j = i, j
                i += 1
                continue
            if i < m and _seg_match(segs[i], parts[j]):
                i += 1
                j += 1
                continue
            if star_i >= 0:
                star_j += 1
                i, j = star_i + 1, star_j
                continue
            return False
        while i < m and segs[i] is None:
            i += 1
        return i == m


@functools.lru_cache(maxsize=4096)
def compile_glob(glob: str) -> Glob:
    """The compiled form of ``glob`` (cached)."""
    return Glob(glob)


def norm(path: str) -> str:
    p = posixpath.normpath(path.replace("\\", "/"))
    return p[2:] if p.startswith("./") else p


def match(path: str, glob: str) -> bool:
    """Whether ``path`` (workspace-relative, or absolute) matches ``glob``."""
    p = norm(path)
    if p.startswith("/"):
        p = p[1:]
    return compile_glob(glob).match(p)


@functools.lru_cache(maxsize=256)
def _by_anchor(globs: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(g for g in globs if not g.startswith("/")), tuple(g for g in globs if g.startswith("/"))


def match_action_path(rel: str | None, absolute: str | None, globs) -> str | None:
    """The first glob a path matches: a glob starting with ``/`` is matched
    against the absolute path only; any other against the workspace-relative
    path (or the absolute one, for paths outside the workspace)."""
    rel_globs, abs_globs = _by_anchor(tuple(globs))
    target = rel if rel is not None else absolute
    if target and rel_globs:
        g = match_any(target, rel_globs)
        if g:
            return g
    if absolute and absolute.startswith("/") and abs_globs:
        return match_any(absolute, abs_globs)
    return None


@functools.lru_cache(maxsize=256)
def _glob_set(globs: tuple[str, ...]) -> tuple[list[Glob], re.Pattern[str] | None]:
    """The compiled globs, and (when every glob has one) an alternation of
    their required literals: a path holding none of them matches none."""
    gl = [compile_glob(g) for g in globs]
    lits = {g.required for g in gl}
    if not gl or "" in lits:
        return gl, None
    return gl, re.compile("|".join(re.escape(x) for x in sorted(lits, key=len, reverse=True)))


def match_any(path: str, globs) -> str | None:
    """The first glob of ``globs`` that ``path`` matches, or None."""
    p = norm(path)
    if p.startswith("/"):
        p = p[1:]
    gl, pre = _glob_set(tuple(globs))
    if pre is not None and pre.search(p) is None:
        return None
    for g in gl:
        if g.match(p):
            return g.glob
    return None


def is_test_file(path: str) -> bool:
    """Whether a path looks like a test file."""
    return bool(_TEST_FILE.search(norm(path)))


def is_gate_file(path: str) -> str | None:
    """The gate glob ``path`` matches (any write to it is tampering), or None."""
    return match_any(path, GATE_FILES)


def is_mixed_config(path: str) -> bool:
    return match_any(path, MIXED_CONFIG) is not None
