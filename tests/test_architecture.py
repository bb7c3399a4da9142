"""The core's shape, checked on its source (docs/architecture.md).

- ``magpie_core`` imports no plugin package and nothing of the trace or benchmark distributions
  (``magpie_trace``, ``magpie_benchmark``): :mod:`ast` scan of every module, imports inside functions included;
- no core function is longer than :data:`MAX_LINES` lines (``def`` line to last line, docstring included), except
  the ones listed in :data:`KNOWN_LONG` (functions another change splits; the list only shrinks);
- ``magpie_core`` holds no C source, and at most :data:`MAX_CORE_LINES` lines of Python (every line of every module,
  blank lines, comments and docstrings included: ``find magpie_core -name "*.py" | xargs wc -l``), so that the core
  stays readable in a day (issue 30): what only a plugin or the benchmark uses goes to that distribution instead;
- the gap settings are the gap plugin's alone: no copy in the core, and the benchmark stack imports none of the
  plugin's package (it reads them through the registry);
- the product code (the core and every distribution's package, not tests or benchmarks) has no import cycle: every
  import statement counts, inside functions too, except under ``if TYPE_CHECKING:``; the cycles in
  :data:`KNOWN_CYCLES` are the ones left for now (the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

CORE = ROOT / "magpie_core"
MAX_LINES = 60
MAX_CORE_LINES = 8000
#: top-level packages the core must not import: every plugin distribution's, and the trace and benchmark ones
OUTSIDE = {"magpie_trace", "magpie_benchmark"} | {
    package.name
    for pattern in ("plugins/*/src/*", "magpie_*/src/*")
    for package in ROOT.glob(pattern)
    if (package / "__init__.py").is_file()
}
#: (file, function) -> why it may be longer than MAX_LINES for now
KNOWN_LONG = {}


def _modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_core_imports_no_plugin_and_no_trace_or_benchmark_distribution() -> None:
    assert {"magpie_gap_analysis", "magpie_kernels_pytorch", "magpie_mcp", "magpie_vllm"} <= OUTSIDE
    found = {
        _rel(path): sorted(n for n in _imported(ast.parse(path.read_text())) if n.split(".")[0] in OUTSIDE)
        for path in _modules()
    }
    assert {path: names for path, names in found.items() if names} == {}


def long_functions(limit: int = MAX_LINES) -> dict[tuple[str, str], int]:
    """Every function and method of the core longer than ``limit`` lines -> its length."""
    found = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found[(_rel(path), node.name)] = length
    return found


def test_no_core_function_is_longer_than_60_lines() -> None:
    over = {key: length for key, length in long_functions().items() if key not in KNOWN_LONG}
    assert over == {}, f"split these (file, function) -> lines: {over}"


def test_the_known_long_functions_are_still_there_or_gone_from_the_list() -> None:
    """An entry of KNOWN_LONG whose function got short (or whose file is gone) is taken off the list."""
    long = long_functions()
    stale = [key for key in KNOWN_LONG if (ROOT / key[0]).is_file() and key not in long]
    assert stale == []


def test_the_core_has_no_c_source() -> None:
    assert sorted(_rel(p) for p in CORE.rglob("*.c")) == []


def test_the_core_stays_under_its_line_budget() -> None:
    lines = sum(len(path.read_text().splitlines()) for path in _modules())
    assert lines <= MAX_CORE_LINES, f"magpie_core has {lines} lines of Python (budget {MAX_CORE_LINES})"


def test_the_gap_settings_are_the_gap_plugins_alone() -> None:
    """The gap analysis settings (model and flags) live in the gap plugin (magpie_gap_analysis.config / .options);
    the core keeps no copy, and others read them through the registry (its ``gap_analysis`` config block)."""
    assert not (CORE / "config" / "gap.py").exists() and not (CORE / "cli" / "gap_options.py").exists()
    for root in (CORE, ROOT / "magpie_benchmark" / "src"):
        users = {
            _rel(path)
            for path in sorted(root.rglob("*.py"))
            if any(n.split(".")[0] == "magpie_gap_analysis" for n in _imported(ast.parse(path.read_text())))
        }
        assert users == set()


#: the product's packages: the core and every distribution's (``magpie_*/src/*``, ``plugins/*/src/*``), not their tests
PACKAGES = [
    CORE,
    *sorted(
        package
        for pattern in ("magpie_*/src/*", "plugins/*/src/*")
        for package in ROOT.glob(pattern)
        if (package / "__init__.py").is_file()
    ),
]
#: import cycles allowed for now (their modules) -> why, and the way out; the list only shrinks (a cycle that
#: gains a module is a new one). Empty: the last three (config, the CLI shell, the harness) were broken in issue 47.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def _product_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of :data:`PACKAGES` (a package is its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            parts = path.relative_to(package.parent).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, at any depth, except in the body of an ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        for stmt in child.orelse if isinstance(child, ast.If) and _is_type_checking(child) else [child]:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                yield stmt
            else:
                yield from _import_nodes(stmt)


def _deepest(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a product module (``a.b.C`` -> ``a.b``), or None."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def _edges(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules ``module`` imports. ``import a.b`` and ``from a.b import c`` are an edge to the deepest
    module they name (``a.b.c`` where ``c`` is a submodule, else ``a.b``), not to the enclosing packages'
    ``__init__`` they also run: those would make every package that re-exports its submodules a cycle."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" if alias.name != "*" else base for alias in node.names]
        found.update(target for name in names if (target := _deepest(name, modules)) not in (None, module))
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan's, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def import_cycles() -> list[list[str]]:
    """Every import cycle of the product code: the strongly connected components of its module import graph."""
    modules = _product_modules()
    return _cycles({module: _edges(module, path, modules) for module, path in modules.items()})


def test_no_import_cycles() -> None:
    """No two product modules import each other, directly or around a loop. Every import statement counts, at
    module level or inside a function (a function-level import only hides a cycle until the function runs), except
    those under ``if TYPE_CHECKING:``, which are for annotations only and never run. Tests and benchmarks are not
    product code and are not scanned."""
    cycles = [cycle for cycle in import_cycles() if frozenset(cycle) not in KNOWN_CYCLES]
    assert cycles == [], "import cycles, one per line (break each: move the shared piece down):\n" + "\n".join(
        ", ".join(cycle) for cycle in cycles
    )


def test_the_known_cycles_are_still_there_or_gone_from_the_list() -> None:
    cycles = {frozenset(cycle) for cycle in import_cycles()}
    assert [sorted(known) for known in KNOWN_CYCLES if known not in cycles] == []


#: the core's layers, lowest first: a module may import its own layer and those below, never one above
#: (``api``: the plugin API and shared types at the package's top level: hookspecs, interfaces, plugins, reports, ...)
CORE_LAYERS = ["runtime", "api", "config", "machine", "measurement", "pipelines", "builtins", "cli", "__main__"]


def _core_layer(module: str) -> str:
    part = module.split(".")[1] if "." in module else ""
    return part if part in CORE_LAYERS else "api"


def test_the_cores_layers_only_point_down() -> None:
    """Layers as folders (issue 47): an import from a lower layer of the core into a higher one is an arrow back
    up (the report that recorded GPU state through the vendor plugins, the runtime that asked the plugin manager)."""
    modules = _product_modules()
    upward = sorted(
        f"{module} -> {target}"
        for module, path in modules.items()
        if module.startswith("magpie_core")
        for target in _edges(module, path, modules)
        if target.startswith("magpie_core")
        and CORE_LAYERS.index(_core_layer(target)) > CORE_LAYERS.index(_core_layer(module))
    )
    assert upward == [], "imports that point up the core's layers:\n" + "\n".join(upward)
