"""The CLI surface: version, gpu-info without a GPU, exit codes, workspaces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from magpie_core.cli.argv import expand_multi_value_options

from .conftest import ROOT


def test_version_both_ways(run_magpie):
    result = run_magpie(["--version"])
    assert result.returncode == 0 and result.stdout.startswith("magpie ")
    console_script = Path(sys.executable).parent / "magpie"
    assert console_script.exists(), "the magpie console script is installed next to the interpreter"
    direct = subprocess.run([str(console_script), "--version"], capture_output=True, text=True)
    assert direct.returncode == 0 and direct.stdout == result.stdout


def test_gpu_info_without_a_gpu_exits_zero(run_magpie):
    result = run_magpie(["gpu-info", "--json"])
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert set(info) == {"gpus", "tools", "message"}
    if not info["gpus"]:
        assert info["message"] == "no GPU found on this machine"
    tools = {t["name"] for t in info["tools"]}
    assert "triton" in tools
    text = run_magpie(["--gpu-info"])
    assert text.returncode == 0


def test_usage_errors_exit_2(run_magpie, tmp_path):
    assert run_magpie(["analyze"]).returncode == 2
    assert run_magpie(["analyze", "k.hip"]).returncode == 2  # source files need --testcase
    missing = run_magpie(["analyze", "-k", str(tmp_path / "nope.yaml")])
    assert missing.returncode == 2 and "nope.yaml: cannot read" in missing.stderr
    assert run_magpie(["no-such-command"]).returncode == 2


def test_python_files_no_plugin_takes_are_a_usage_error_not_hip_sources(run_magpie, tmp_path):
    """``.py`` files that are not KernelBench's were compiled as HIP sources (``--type``'s default)."""
    (tmp_path / "f.py").write_text("def f(x):\n    return x\n")
    result = run_magpie(["compare", str(tmp_path / "f.py"), str(tmp_path / "f.py")])
    assert result.returncode == 2 and "entry: " in result.stderr and "hip" not in result.stderr.lower()


def test_a_kernel_type_no_backend_has_names_its_line_and_the_nearest_type(run_magpie, tmp_path):
    cfg = tmp_path / "k.yaml"
    cfg.write_text("kernels:\n  - id: a\n    entry: k.py:f\n  - id: b\n    type: pytorchh\n    entry: k.py:f\n")
    result = run_magpie(["analyze", "-k", str(cfg), "--no-perf"])
    assert result.returncode == 2
    assert "k.yaml:5: kernels[1].type: no kernel backend named 'pytorchh'" in result.stderr
    assert "did you mean 'pytorch'?" in result.stderr


@pytest.mark.parametrize("command", ["analyze", "compare", "benchmark", "plugins", "mcp", "gpu-info"])
def test_every_command_has_help(run_magpie, command):
    result = run_magpie([command, "--help"], env={"COLUMNS": "160"})
    assert result.returncode == 0, result.stderr
    # an on/off flag takes no value: typer's `<bool>` beside it read as one
    assert "--help" in result.stdout and "<bool>" not in result.stdout


def test_workspace_holds_config_snapshot_report_and_logs(run_magpie, tmp_path):
    cfg = tmp_path / "k.yaml"
    cfg.write_text(f"kernel:\n  id: tc\n  type: pytorch\n  testcase_command: [{sys.executable}, -c, 'print(1)']\n")
    result = run_magpie(["-o", str(tmp_path / "out"), "analyze", "-k", str(cfg), "--no-perf"])
    assert result.returncode == 0, result.stdout + result.stderr
    (ws,) = (tmp_path / "out").iterdir()
    assert ws.name.startswith("analyze_tc_")
    assert {p.name for p in ws.iterdir()} >= {"config.yaml", "analyze_report.json", "logs", "tc"}
    report = json.loads((ws / "analyze_report.json").read_text())
    assert report["schema_version"] == "1.0" and report["mode"] == "analyze"
    assert report["results"][0]["correctness_state"] == "SUCCESS"
    assert (ws / "tc" / "testcase.log").read_text().strip().endswith("1")


def test_argv_rewrite_for_list_flags() -> None:
    argv = ["gap", "t", "--categories", "kernel", "gpu", "--top-k", "3", "--kernel-source-repos", "/a", "/b"]
    assert expand_multi_value_options(argv) == [
        "gap",
        "t",
        "--categories",
        "kernel",
        "--categories",
        "gpu",
        "--top-k",
        "3",
        "--kernel-source-repos",
        "/a",
        "--kernel-source-repos",
        "/b",
    ]
    assert expand_multi_value_options(["--categories=kernel", "--", "--categories", "a", "b"]) == [
        "--categories=kernel",
        "--",
        "--categories",
        "a",
        "b",
    ]


def test_compare_takes_processes_and_budget_on_the_command_line(run_magpie, tmp_path):
    """``--processes`` and ``--budget`` (issue 46: SAME needed a YAML for ``performance.processes``)."""
    hacks = ROOT / "plugins" / "pytorch" / "tests" / "data" / "reward_hacks"
    args = ["-o", str(tmp_path), "compare", str(hacks / "softmax_ref.py"), str(hacks / "softmax_honest.py")]
    result = run_magpie([*args, "--processes", "2", "--budget", "0.5", "--json", "--no-html"])
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["performance"]["processes"] == 2
    assert report["settings"]["performance"]["budget_seconds"] == 0.5
    assert report["stability"]["processes"]["0"] == 2


def test_a_compare_can_time_single_synchronized_calls_beside_its_blocks(run_magpie, tmp_path):
    """``performance.call_trials``: KernelBench's clock (issue 45), measured in the same run after the blocks."""
    hacks = ROOT / "plugins" / "pytorch" / "tests" / "data" / "reward_hacks"
    config = tmp_path / "c.yaml"
    config.write_text(
        f"kernelbench:\n  reference: {json.dumps(str(hacks / 'softmax_ref.py'))}\n"
        f"  solutions: [{json.dumps(str(hacks / 'softmax_honest.py'))}]\n"
        "performance:\n  budget_seconds: 0.5\n  call_trials: 20\n"
    )
    result = run_magpie(["-o", str(tmp_path), "compare", "-k", str(config), "--json", "--no-html"])
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    per_call = [r["performance"]["per_call_us"] for r in report["results"]["kernel_results"]]
    assert all(us is not None and us > 0 for us in per_call), per_call
