"""The trace library is its own distribution: ``magpie_trace`` imports nothing of magpie-core, and the core imports
neither ``magpie_trace`` nor the compiled readers (``magpie_trace_native``); a plugin that imports the library
declares ``magpie-trace`` among its dependencies."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

TRACE_PACKAGES = ("magpie_trace", "magpie_trace_native")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_core_imports_no_trace_library() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "magpie_core").rglob("*.py"))
        if _imports(p) & set(TRACE_PACKAGES)
    ]
    assert not offenders
    assert not list((ROOT / "magpie_core").rglob("*.c")) and not (ROOT / "setup.py").exists()


def test_trace_library_stands_alone() -> None:
    code = (
        "import sys, pkgutil, importlib, magpie_trace\n"
        "for m in pkgutil.iter_modules(magpie_trace.__path__): importlib.import_module('magpie_trace.' + m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules if n.startswith('magpie')}))"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "['magpie_trace']", got.stdout


def test_plugins_that_import_the_library_declare_it() -> None:
    for pyproject in sorted([*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("magpie_*/pyproject.toml")]):
        folder = pyproject.parent
        if folder.name in TRACE_PACKAGES:
            continue
        uses = any("magpie_trace" in _imports(p) for p in (folder / "src").rglob("*.py"))
        deps = tomllib.loads(pyproject.read_text())["project"].get("dependencies", [])
        assert uses == any(d.split("[")[0].split(">")[0].strip() == "magpie-trace" for d in deps), folder.name
