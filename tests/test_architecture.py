"""The import graph among trajkit's own modules, read from the source (ast),
never by importing it.

- At module level (the imports that run when a module is first imported:
  top-level statements, class bodies, ``if``/``try`` blocks) there is no
  cycle. A cycle there is an ordering trap: which module finishes first
  depends on who imported whom first.
- ``trajkit.diagnostics`` is a leaf: it imports nothing from trajkit, so any
  layer can report problems.
- Counting the imports inside functions too (lazy imports), the only cycles
  are the ones listed in :data:`KNOWN_LAZY_CYCLES`, each with its reason.

An import names the module it loads: ``from .a import b`` is an edge to
``a`` (and to ``a.b`` when that is a module); ``from . import b`` is an edge
to the package's ``b`` module when there is one, else to the package
itself. A string naming a trajkit module (``"trajkit.formats.openhands_v0:FORMAT"``
in the registry, ``"trajkit.cli.steps_cmd:steps_cmd"`` in the CLI's lazy verbs)
is a function-level edge: it is imported by name with ``importlib`` on first
use. The implicit import of a parent package (Python runs ``pkg/__init__``
before ``pkg.mod``) is not an edge: it is how packages work, not a choice a
module makes.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PKG = "trajkit"

#: Function-level (or by-name) imports that close a cycle, as (importer,
#: imported module or fnmatch pattern) with the reason each is kept. With
#: these edges taken out, the whole graph (lazy imports included) has no cycle.
KNOWN_LAZY_EDGES: dict[tuple[str, str], str] = {
    ("trajkit.registry", "trajkit.formats.*"): (
        "registration: the registry loads each built-in format by name (BUILTIN_FORMATS) on first "
        "use, and a format module builds its Format from the registry's types at import time. The "
        "registry is fully initialised before it loads a format, so this is no ordering trap; entry "
        "points (issue 9, item 3) keep the same shape."
    ),
}

_BY_NAME = re.compile(r"^(trajkit(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::[A-Za-z_][A-Za-z0-9_]*)?$")


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted((SRC / PKG).rglob("*.py")):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The trajkit modules an import statement loads (explicitly)."""
    found: list[str] = []
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name == PKG or a.name.startswith(PKG + "."):
                name = a.name
                while name not in MODULES and "." in name:
                    name = name.rsplit(".", 1)[0]
                found.append(name)
        return found
    if node.level:
        base = module if _is_package(module) else module.rsplit(".", 1)[0]
        for _ in range(node.level - 1):
            base = base.rsplit(".", 1)[0]
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
        if not (target == PKG or target.startswith(PKG + ".")):
            return found
    for a in node.names:
        sub = f"{target}.{a.name}"
        if sub in MODULES:
            found.append(sub)
        elif target in MODULES:
            found.append(target)
    if not node.names and target in MODULES:  # pragma: no cover - not valid Python
        found.append(target)
    return found


def _imports(module: str) -> tuple[set[str], set[str]]:
    """(module-level targets, function-level targets) of ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"), str(MODULES[module]))
    top: set[str] = set()
    lazy: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (lazy if in_function else top).update(t for t in _targets(module, child) if t != module)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                m = _BY_NAME.match(child.value)
                if m and m.group(1) in MODULES and m.group(1) != module:
                    lazy.add(m.group(1))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, lazy


GRAPH = {m: _imports(m) for m in MODULES}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle path (first node repeated at the end) per strongly connected
    component with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    components.append(sorted(comp))
    return [_path_in(comp, edges) for comp in components]


def _path_in(comp: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A cycle through ``comp[0]`` inside the component (breadth-first, shortest)."""
    members = set(comp)
    start = comp[0]
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(edges[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, start]
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"no cycle found in component {comp}")  # pragma: no cover


def test_the_graph_sees_every_package_and_the_known_edges():
    # The parser must see what the source says, or the other tests prove nothing.
    assert {"trajkit", "trajkit.diagnostics", "trajkit.model", "trajkit.cli", "trajkit.cli._common",
            "trajkit.spec.asf", "trajkit.spec.asf.codec", "trajkit.bench.ctb", "trajkit.export.codetracer"} <= set(MODULES)
    top, _ = GRAPH["trajkit.jsonio"]
    assert "trajkit.diagnostics" in top
    top, _ = GRAPH["trajkit.model"]
    assert "trajkit.diagnostics" in top
    _, lazy = GRAPH["trajkit.model"]
    assert "trajkit.jsonio" in lazy  # model decodes lazily through jsonio
    top, _ = GRAPH["trajkit.spec.asf.verify"]
    assert {"trajkit.spec.asf.codec", "trajkit.spec.asf.entries", "trajkit.spec.asf.context"} <= top
    top, _ = GRAPH["trajkit.export.to_atif"]
    assert {"trajkit.spec.asf", "trajkit.spec.asf.context"} <= top
    _, lazy = GRAPH["trajkit.registry"]
    assert "trajkit.formats.openhands_v0" in lazy  # loaded by name (BUILTIN_FORMATS)
    _, lazy = GRAPH["trajkit.cli.app"]
    assert {"trajkit.cli.read", "trajkit.cli.steps_cmd", "trajkit.cli.rl"} <= lazy  # lazy verbs, by name


def test_cycle_finder_finds_a_planted_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"} - {"e"}}
    assert _cycles(edges) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_at_module_level():
    cycles = _cycles({m: top for m, (top, _) in GRAPH.items()})
    assert not cycles, "module-level import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_diagnostics_is_a_leaf():
    top, lazy = GRAPH["trajkit.diagnostics"]
    assert not top and not lazy, f"trajkit.diagnostics imports {sorted(top | lazy)}"


def test_cli_modules_never_import_the_cli_package():
    back = {m: sorted(t for t in (top | lazy) if t == "trajkit.cli")
            for m, (top, lazy) in GRAPH.items() if m.startswith("trajkit.cli.")}
    assert not any(back.values()), f"cli modules importing trajkit.cli: {back}"


def _known(importer: str, imported: str) -> bool:
    return any(importer == i and fnmatch.fnmatchcase(imported, pattern) for i, pattern in KNOWN_LAZY_EDGES)


def test_lazy_import_cycles_are_only_the_known_ones():
    lazy_only = {m: lazy - top for m, (top, lazy) in GRAPH.items()}
    for (importer, pattern), reason in KNOWN_LAZY_EDGES.items():
        assert reason
        assert any(fnmatch.fnmatchcase(t, pattern) for t in lazy_only[importer]), (
            f"{importer} -> {pattern} is listed in KNOWN_LAZY_EDGES but is no longer a lazy import: remove it")
    edges = {m: {t for t in top | lazy if t in top or not _known(m, t)} for m, (top, lazy) in GRAPH.items()}
    cycles = _cycles(edges)
    assert not cycles, "import cycles through function-level imports:\n" + "\n".join(" -> ".join(c) for c in cycles)
    # Each exception is needed: in the whole graph one of its edges lies on a cycle.
    full = {m: top | lazy for m, (top, lazy) in GRAPH.items()}
    for importer, pattern in KNOWN_LAZY_EDGES:
        targets = [t for t in lazy_only[importer] if fnmatch.fnmatchcase(t, pattern)]
        assert any(importer in _reachable(full, t) for t in targets), (
            f"{importer} -> {pattern} lies on no cycle: remove it from KNOWN_LAZY_EDGES")


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
