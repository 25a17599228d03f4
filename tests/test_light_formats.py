"""Detection stays light: every command imports every format's module to
detect, so a format's module (its face: the Format, fingerprints and
``sniff``) must not pull in its reader, rich, click or the consumers.

Each built-in format (every row of ``registry.BUILTIN_FORMATS``, so formats
added later are covered without editing this file) declares ``read`` as a
``registry.lazy("module:attr")``; these tests run real subprocesses and read
``sys.modules`` after loading every format and detecting every shipped
example, and check that no module a format declares lazily was imported,
nor any module on the deny list below. The startup cost this guards is
measured in ``benchmarks/bench_startup.py`` (issue 15: ``trajkit steps`` on a
small run at most 2x ``import trajkit``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trajkit import registry

#: Packages detection never needs: terminal output, the CLI framework, the
#: step renderer and every consumer. A format's face may import the model,
#: diagnostics, jsonio, the reading toolkit's io/probe, the registry and its
#: tool table (vocab), nothing more.
DENIED = (
    "rich", "click", "trajkit.steps", "trajkit.rl", "trajkit.export", "trajkit.certify", "trajkit.view",
    "trajkit.corpus", "trajkit.spec", "trajkit.bench", "trajkit.cli", "trajkit.reading.builder",
    "trajkit.reading.pairing",
)

_PROBE = r"""
import json, sys
from pathlib import Path
from trajkit import registry
from trajkit.reading.probe import Probe
name = sys.argv[1]
fmt = registry.get_format(name)  # imports this format's module alone
for example in fmt.examples:  # what detection asks of the format: its sniff, on every fingerprint
    for fp in fmt.fingerprints:
        try:
            fmt.sniff(Probe(), Path(example), fp)
        except Exception:
            pass
print(json.dumps({"modules": sorted(sys.modules), "problems": [d.message for d in registry.load_problems()]}))
"""


def _loaded_after(code: str, *args: str) -> dict:
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _lazy_modules(fmt: registry.Format) -> set[str]:
    """The modules ``fmt`` names in its lazy capabilities."""
    out = set()
    for attr in ("read", "find_sessions", "summarize", "views", "context", "model_calls", "members"):
        v = getattr(fmt, attr)
        if isinstance(v, registry.lazy):
            out.add(v.ref.partition(":")[0])
    return out


def _under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _heavy(name: str) -> list[str]:
    """What loading format ``name`` alone and detecting each of its examples
    imported that detection must not: denied packages, and the modules any
    built-in format declares lazily (its own reader included)."""
    got = _loaded_after(_PROBE, name)
    assert not got["problems"], got["problems"]
    readers = set().union(*(_lazy_modules(registry.get_format(n)) for n in registry.BUILTIN_FORMATS))
    return [m for m in got["modules"] if _under(m, DENIED) or m in readers]


def test_every_builtin_format_reads_through_a_lazy_reader():
    builtins = [registry.get_format(name) for name in registry.BUILTIN_FORMATS]
    assert len(builtins) == len(registry.BUILTIN_FORMATS) >= 3
    for fmt in builtins:
        assert isinstance(fmt.read, registry.lazy), f"{fmt.name}: read must be registry.lazy('module:attr'), not {fmt.read!r}"
        face = registry.BUILTIN_FORMATS[fmt.name].partition(":")[0]
        for mod in _lazy_modules(fmt):
            assert mod != face, f"{fmt.name}: {mod} is the face itself; the lazy reader must be another module"


def test_loading_and_detecting_each_format_imports_no_reader_no_rich_no_click():
    bad = {}
    for name in registry.BUILTIN_FORMATS:
        heavy = _heavy(name)
        if heavy:
            bad[name] = heavy
    assert not bad, f"detection imported reader-side modules: {bad}"


_STEPS = r"""
import json, sys
from trajkit.cli import run
try:
    run(["steps", *sys.argv[1:], "--json"])
except SystemExit as e:
    assert not e.code, e.code
print()
print(json.dumps({"modules": sorted(sys.modules), "problems": []}))
"""


@pytest.mark.parametrize("name", list(registry.BUILTIN_FORMATS))
def test_steps_on_an_example_loads_only_what_its_own_reader_needs(name):
    """A whole ``trajkit steps --json`` on the format's first example: its
    reader loads, and detection (every format's sniff on that path) adds no
    module a format declares lazily beyond what the same command loads when
    told the format (``--format``, no detection); rich never loads."""
    fmt = registry.get_format(name)
    example = fmt.examples[0]
    detected = set(_loaded_after(_STEPS, example)["modules"])
    told = set(_loaded_after(_STEPS, example, "--format", name)["modules"])
    assert fmt.read.ref.partition(":")[0] in detected
    readers = set().union(*(_lazy_modules(registry.get_format(n)) for n in registry.BUILTIN_FORMATS))
    assert not (detected - told) & readers, sorted((detected - told) & readers)
    assert not [m for m in detected if _under(m, ("rich",))]


def test_the_probe_sees_a_heavy_face(tmp_path):
    """The check can fail: a plugin-style format whose face imports its
    reader (and rich) is caught by the same probe."""
    pkg = tmp_path / "heavyfmt"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import rich.console\n"
        "from trajkit.registry import Format, Reject, lazy\n"
        "from . import reader\n"
        "FORMAT = Format(name='heavy', description='x', fingerprints=('heavy.json',), priority=1,\n"
        "                sniff=lambda p, c, f: Reject('no'), read=lazy('heavyfmt.reader:read'))\n"
    )
    (pkg / "reader.py").write_text("def read(root, options):\n    raise NotImplementedError\n")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import json\n"
        "from trajkit import registry\n"
        "from trajkit.registry import FormatEntry, _load\n"
        "fmt = _load(FormatEntry('heavy', 'heavyfmt:FORMAT', 'test'))\n"
        "print(json.dumps({'modules': sorted(sys.modules), 'problems': [], 'ref': fmt.read.ref}))\n"
    )
    got = _loaded_after(code)
    loaded = got["modules"]
    assert "heavyfmt.reader" in loaded and any(_under(m, DENIED) for m in loaded)


_FIND = r"""
import json, sys
from trajkit import registry
fmt = registry.get_format(sys.argv[1])
found = [str(p) for example in fmt.examples for p in fmt.find_sessions(example)]
print(json.dumps({"modules": sorted(sys.modules), "found": found}))
"""


def test_listing_claude_code_sessions_imports_no_reader():
    """Discovery walks with ``find_sessions``: Claude Code's is a light module
    (layout only), so a walk does not import the transcript reader."""
    got = _loaded_after(_FIND, "claude-code")
    assert got["found"], "the shipped examples hold sessions"
    heavy = [m for m in got["modules"] if m in ("trajkit.formats.claude_code.reader", "trajkit.formats.claude_code.session")
             or _under(m, ("trajkit.steps", "trajkit.reading.builder", "rich", "click"))]
    assert not heavy, heavy


@pytest.mark.parametrize("name", ["codex", "gemini-cli"])
def test_listing_codex_and_gemini_sessions_imports_no_reader(name: str):
    """Codex's and Gemini CLI's ``find_sessions`` are light modules too
    (``finding.py``): a discovery, which asks every format to walk each given
    folder, imports neither reader (nor the session builder, steps, hashlib)."""
    got = _loaded_after(_FIND, name)
    assert got["found"], "the shipped examples hold sessions"
    heavy = [m for m in got["modules"] if m.endswith(".reader") and m.startswith("trajkit.formats.")
             or _under(m, ("trajkit.steps", "trajkit.reading.builder", "hashlib", "rich", "click"))]
    assert not heavy, heavy
