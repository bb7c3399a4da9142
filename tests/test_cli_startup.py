"""What a ``magpie`` command imports before it runs: the guarantee behind its start-up cost.

Timings belong in ``benchmarks/cli_startup.py``; these tests assert the structure that makes start-up cheap,
which holds on a busy machine too: ``magpie gap`` and ``magpie inference`` import the trace library, their
own plugin and its report writer (``--help`` not even numpy), and none of the other commands' modules (the
serving stack with httpx, the benchmark and kernel config models, YAML, the other plugins' command modules);
a run that prints JSON never imports rich. Plugin commands load through the ``magpie.commands`` entry points
(:mod:`magpie_core.cli.commands`), as a third party's would. Each case runs the real CLI
(:func:`magpie_core.cli.run`) in a fresh interpreter, with every installed plugin discovered through its entry
point as for a user.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from magpie_core.cli.commands import CORE_COMMANDS, declared_commands

TRACE = Path(__file__).parent / "data" / "traces" / "inference" / "vllm_decode_full" / "graph_execution.json.gz"

#: run the CLI with argv[2:], then write the exit code and every imported module to the file argv[1]
_PROBE = """
import json, sys
from magpie_core.cli import run
code = 0
try:
    run(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

#: modules no trace command needs: other commands, the serving stack, config files, other plugins' commands
NOT_FOR_TRACES = (
    "httpx",
    "yaml",
    "magpie_benchmark.serving.prometheus",
    "magpie_benchmark.loadgen",
    "magpie_benchmark.offline",
    "magpie_benchmark.pipeline",
    "magpie_benchmark.benchmark_server",
    "magpie_benchmark.workload",
    "magpie_benchmark.measure",
    "magpie_benchmark.diagnostic",
    "magpie_benchmark.run_config",
    "magpie_benchmark.report",
    "magpie_core.pipelines.jobs",
    "magpie_core.pipelines.kernel_files",
    "magpie_core.pipelines.analyze",
    "magpie_benchmark.config",
    "magpie_core.config.kernel",
    "magpie_core.config.defaults",
    "magpie_core.config.loader",
    "magpie_benchmark.cli",
    "magpie_core.cli.kernels",
    "magpie_core.cli.gpu_info",
    "magpie_core.cli.plugins_cmd",
    "magpie_targeted_trace.cli",
    "magpie_loop.cli",
    "magpie_mcp.command",
    "magpie_report.cli",
)


def _imported(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    result = json.loads(out.read_text())
    return result["code"], set(result["modules"])


def _present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The names in ``names`` that are imported (a package counts when any of its modules is)."""
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize(
    ("command", "own"),
    [("gap", "magpie_gap_analysis.cli"), ("inference", "magpie_inference_analysis.cli")],
)
def test_trace_command_help_imports_only_its_own_plugin(tmp_path: Path, command: str, own: str) -> None:
    code, modules = _imported(tmp_path, command, "--help")
    assert code == 0
    assert own in modules
    other = {"gap": "magpie_inference_analysis.cli", "inference": "magpie_gap_analysis.cli"}[command]
    assert _present(modules, (*NOT_FOR_TRACES, other, "numpy")) == []  # help reads no trace


def test_gap_json_run_imports_no_rich_and_nothing_of_other_commands(tmp_path: Path) -> None:
    code, modules = _imported(tmp_path, "-w", "1", "-o", str(tmp_path), "gap", str(TRACE), "--json", "--no-rank-csv")
    assert code == 0
    assert "magpie_gap_analysis.pipeline" in modules and "magpie_trace.columns" in modules
    assert _present(modules, (*NOT_FOR_TRACES, "rich", "magpie_inference_analysis.cli")) == []


def test_inference_json_run_imports_no_rich_and_nothing_of_other_commands(tmp_path: Path) -> None:
    code, modules = _imported(tmp_path, "-o", str(tmp_path), "inference", str(TRACE), "--format", "json")
    assert code == 0
    assert "magpie_inference_analysis.cli" in modules
    assert _present(modules, (*NOT_FOR_TRACES, "rich", "magpie_gap_analysis.cli")) == []


#: import each plugin entry module (``magpie`` entry points, then the core's default plugins) in turn and write, for
#: each, the heavy modules that were imported by the time it had loaded
_ENTRY_PROBE = """
import importlib, importlib.metadata as md, json, sys
from magpie_core.plugins import DEFAULT_PLUGINS, ENTRY_POINT_GROUP
heavy = json.loads(sys.argv[2])
modules = [ep.value for ep in md.entry_points(group=ENTRY_POINT_GROUP)] + list(DEFAULT_PLUGINS)
found = {}
for name in modules:
    importlib.import_module(name)
    found[name] = sorted(h for h in heavy if h in sys.modules)
with open(sys.argv[1], "w") as out:
    json.dump(found, out)
"""

#: what a plugin's entry module must not import when it loads (every ``magpie`` command loads every entry module):
#: numpy, the report models with pydantic, rich, YAML, httpx, the trace columns, the demangler that runs ldconfig,
#: thread pools, statistics; hook bodies import what they use
HEAVY_AT_PLUGIN_LOAD = (
    "numpy",
    "pydantic",
    "rich",
    "yaml",
    "httpx",
    "magpie_core.reports",
    "magpie_trace.columns",
    "cxxfilt",
    "concurrent.futures",
    "statistics",
)


def test_plugin_entry_modules_import_nothing_heavy(tmp_path: Path) -> None:
    out = tmp_path / "entry.json"
    subprocess.run(
        [sys.executable, "-c", _ENTRY_PROBE, str(out), json.dumps(HEAVY_AT_PLUGIN_LOAD)],
        cwd=tmp_path,
        check=True,
        timeout=120,
    )
    found = json.loads(out.read_text())
    assert len(found) >= 20  # every first-party plugin is installed in the test environment
    assert {name: heavy for name, heavy in found.items() if heavy} == {}


def test_core_command_imports_no_plugin_command_module(tmp_path: Path) -> None:
    code, modules = _imported(tmp_path, "analyze", "--help")
    assert code == 0
    assert "magpie_core.cli.kernels" in modules
    plugin_commands = ("magpie_gap_analysis.cli", "magpie_inference_analysis.cli", *NOT_FOR_TRACES[-4:])
    assert _present(modules, (*plugin_commands, "httpx", "magpie_benchmark.cli")) == []


def test_root_help_lists_every_command(run_magpie) -> None:
    result = run_magpie(["--help"], env={"COLUMNS": "200"})
    assert result.returncode == 0
    listed = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("│ ") and len(line.split()) > 2}
    declared = {c.name for c in declared_commands()}
    assert {"gap", "inference", "mcp", "loop", "report", "targeted-trace"} <= declared
    assert set(CORE_COMMANDS) | declared <= listed


def test_unknown_command_still_gets_a_suggestion_from_lazy_commands(run_magpie) -> None:
    result = run_magpie(["anlyze"])
    assert result.returncode == 2
    assert "Did you mean 'analyze'?" in result.stderr
