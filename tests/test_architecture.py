"""The core's shape, checked on its source (docs/architecture.md).

- ``magpie_core`` imports no plugin package and nothing of the trace or benchmark distributions
  (``magpie_trace``, ``magpie_benchmark``): :mod:`ast` scan of every module, imports inside functions included;
- no core function is longer than :data:`MAX_LINES` lines (``def`` line to last line, docstring included), except
  the ones listed in :data:`KNOWN_LONG` (functions another change splits; the list only shrinks);
- ``magpie_core`` holds no C source, and at most :data:`MAX_CORE_LINES` lines of Python (every line of every module,
  blank lines, comments and docstrings included: ``find magpie_core -name "*.py" | xargs wc -l``), so that the core
  stays readable in a day (issue 30): what only a plugin or the benchmark uses goes to that distribution instead;
- the gap settings are the gap plugin's alone: no copy in the core, and the benchmark stack imports none of the
  plugin's package (it reads them through the registry).
"""

from __future__ import annotations

import ast
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
