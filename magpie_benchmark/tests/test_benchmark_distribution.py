"""magpie-benchmark is a distribution like any plugin: the core imports none of it, ``magpie benchmark`` arrives
through ``magpie_register_commands``, and the benchmark reaches the gap and targeted-trace plugins (and reads their
settings) through the registry, never by importing their packages."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import magpie_benchmark
import magpie_core

CORE = Path(magpie_core.__file__).parent
BENCHMARK = Path(magpie_benchmark.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (at any depth of the file: function bodies and TYPE_CHECKING blocks too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_core_imports_nothing_of_the_benchmark() -> None:
    offenders = {
        str(path.relative_to(CORE)): sorted(m for m in _imports(path) if m.split(".")[0] == "magpie_benchmark")
        for path in CORE.rglob("*.py")
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_the_benchmark_imports_no_other_plugin_package() -> None:
    allowed = {"magpie_core", "magpie_benchmark"}
    offenders = {
        str(path.relative_to(BENCHMARK)): sorted(
            m for m in _imports(path) if m.startswith("magpie_") and m.split(".")[0] not in allowed
        )
        for path in BENCHMARK.rglob("*.py")
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_benchmark_command_and_blocks_come_from_their_plugins(run_magpie) -> None:
    listed = {p["name"]: p for p in json.loads(run_magpie(["plugins", "--json"]).stdout)}
    assert listed["benchmark"]["distribution"] == "magpie-benchmark"
    assert listed["benchmark"]["components"]["command"] == ["benchmark"]
    assert "benchmark.gap_analysis" in listed["gap"]["components"]["config_block"]
    assert "benchmark.profiler.targeted_trace" in listed["targeted_trace"]["components"]["config_block"]
