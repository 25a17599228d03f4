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


@functools.lru_cache(maxsize=4096)
def _glob_re(glob: str) -> re.Pattern[str]:
    g = glob.strip()
    if g.startswith("/"):
        g = g[1:]
    i, n, out = 0, len(g), []
    while i < n:
        c = g[i]
        if g.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif g.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = g.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = g[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    pat = "".join(out)
    if g.endswith("/**"):
        # "dir/**" also names the directory itself
        pat = pat[: -len(".*")].rstrip("/") + "(?:/.*)?" if pat.endswith("/.*") else pat
    return re.compile(f"^(?:{pat})$")


def norm(path: str) -> str:
    p = posixpath.normpath(path.replace("\\", "/"))
    return p[2:] if p.startswith("./") else p


def match(path: str, glob: str) -> bool:
    """Whether ``path`` (workspace-relative, or absolute) matches ``glob``."""
    p = norm(path)
    if p.startswith("/"):
        p = p[1:]
    return bool(_glob_re(glob).match(p))


@functools.lru_cache(maxsize=256)
def _combined(globs: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(_glob_re(g).pattern for g in globs) or "(?!)")


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


def match_any(path: str, globs) -> str | None:
    """The first glob of ``globs`` that ``path`` matches, or None."""
    globs = tuple(globs)
    p = norm(path)
    if p.startswith("/"):
        p = p[1:]
    if not _combined(globs).match(p):
        return None
    for g in globs:
        if _glob_re(g).match(p):
            return g
    return None


def is_test_file(path: str) -> bool:
    """Whether a path looks like a test file."""
    return bool(_TEST_FILE.search(norm(path)))


def is_gate_file(path: str) -> str | None:
    """The gate glob ``path`` matches (any write to it is tampering), or None."""
    return match_any(path, GATE_FILES)


def is_mixed_config(path: str) -> bool:
    return match_any(path, MIXED_CONFIG) is not None
