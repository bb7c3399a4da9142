"""Correctness gates, isolation and the testcase_command path of analyze (real runs on the CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from magpie_core.config.kernel import KernelConfig, KernelConfigFile
from magpie_core.pipelines.analyze import analyze
from magpie_core.reports import StageStatus
from tests.conftest import DATA

KERNELS = DATA / "kernels"
FAST_PERF = {"enabled": False}


def _analyze(
    tmp_path: Path,
    kernels: list[dict],
    performance: dict | None = None,
    correctness: dict | None = None,
    workers: int = 1,
):
    file = KernelConfigFile(
        kernels=[KernelConfig(**k) for k in kernels],
        performance=performance or FAST_PERF,
        correctness=correctness,
    )
    report = analyze(
        file, config_dir=KERNELS, output_dir=tmp_path, workers=workers, measure_performance=bool(performance)
    )
    return {r.kernel_id: r for r in report.results}


def _pt(name: str, **extra) -> dict:
    return {"id": name, "type": "pytorch", "entry": f"faulty.py:{name}", "reference": "faulty.py:reference", **extra}


def test_correctness_gates_catch_each_fault(tmp_path):
    names = ["good", "wrong_values", "partial_write", "nan_output", "wrong_shape", "wrong_dtype", "raises"]
    names.append("kept_buffer")
    zeros = _pt("kept_zeros", reference="faulty.py:zeros_reference")
    results = _analyze(tmp_path, [*map(_pt, names), zeros], workers=2)
    assert results["good"].correctness.status == StageStatus.PASSED
    assert results["kept_zeros"].correctness.status == StageStatus.PASSED  # one tensor every call, never overwritten
    assert results["good"].correctness.trials == 3
    msg = {n: results[n].correctness.message for n in names}
    for name in names[1:]:
        assert results[name].correctness.status == StageStatus.FAILED, name
        assert not results[name].passed
    assert "mismatch at index (3, 7)" in msg["wrong_values"] and "1 of 8192 elements" in msg["wrong_values"]
    assert (
        "non-finite at index (0, 100)" in msg["partial_write"]
        and "unwritten outputs read as NaN" in msg["partial_write"]
    )
    assert "non-finite at index (10, 10)" in msg["nan_output"] and "got nan" in msg["nan_output"]
    assert "shape mismatch: expected (64, 128), got (64, 64)" in msg["wrong_shape"]
    assert "dtype mismatch: expected torch.float32, got torch.float64" in msg["wrong_dtype"]
    assert "RuntimeError: kernel bug: bad launch config" in msg["raises"] and "faulty.py" in msg["raises"]
    # right when returned, overwritten by the next call: said so, not only "mismatch"
    assert "outputs of trials 0 and 1 share memory" in msg["kept_buffer"], msg["kept_buffer"]


def test_inplace_output_arguments_are_poisoned(tmp_path):
    common = {
        "get_inputs": "get_inplace_inputs",
        "reference": "faulty.py:inplace_reference",
        "options": {"output_args": [1]},
    }
    results = _analyze(
        tmp_path,
        [
            {"id": "ok", "type": "pytorch", "entry": "faulty.py:inplace_good", **common},
            {"id": "partial", "type": "pytorch", "entry": "faulty.py:inplace_partial", **common},
        ],
    )
    assert results["ok"].correctness.status == StageStatus.PASSED
    assert results["partial"].correctness.status == StageStatus.FAILED
    assert "non-finite at index (32, 0)" in results["partial"].correctness.message


def test_crash_and_hang_fail_alone(tmp_path):
    results = _analyze(
        tmp_path,
        [_pt("crashes"), _pt("hangs"), _pt("good")],
        correctness={"timeout_seconds": 8},
        performance={"timeout_seconds": 1, "budget_seconds": 0.5, "warmup_ms": 1, "min_samples": 5},
    )
    assert results["crashes"].correctness.status == StageStatus.ERROR
    assert "killed by SIGABRT" in results["crashes"].correctness.message
    assert results["hangs"].correctness.status == StageStatus.ERROR
    assert "timed out after" in results["hangs"].correctness.message
    assert results["good"].passed and results["good"].performance.timing.samples >= 5


def test_execution_is_not_correctness_without_a_check(tmp_path):
    results = _analyze(
        tmp_path, [{"id": "unchecked", "type": "pytorch", "entry": "faulty.py:good", "get_inputs": "get_inputs"}]
    )
    r = results["unchecked"]
    # No reference: the kernel itself must still produce finite, fully written outputs, and the report says so.
    assert r.correctness.method.startswith("self")
    results = _analyze(tmp_path, [{"id": "no_check", "type": "pytorch", "testcase_command": None}])
    assert results["no_check"].correctness.status == StageStatus.NOT_RUN
    assert not results["no_check"].passed


def test_testcase_command_path(tmp_path):
    ok = [sys.executable, "-c", "import sys; sys.exit(0)"]
    bad = [sys.executable, "-c", "import sys; print('max error 0.3'); sys.exit(3)"]
    results = _analyze(
        tmp_path,
        [
            {"id": "passes", "type": "pytorch", "testcase_command": [ok, ok]},
            {"id": "fails", "type": "pytorch", "testcase_command": [ok, bad]},
            {
                "id": "env_and_dir",
                "type": "pytorch",
                "working_dir": str(KERNELS),
                "env": {"MAGPIE_T": "7"},
                "testcase_command": [
                    sys.executable,
                    "-c",
                    "import os,sys; sys.exit(0 if os.environ['MAGPIE_T']=='7' and os.path.exists('faulty.py') else 1)",
                ],
            },
        ],
    )
    assert results["passes"].correctness.status == StageStatus.PASSED
    assert results["passes"].correctness.method == "testcase_command"
    assert results["fails"].correctness.status == StageStatus.FAILED
    assert (
        "exit status 3" in results["fails"].correctness.message
        and "max error 0.3" in results["fails"].correctness.message
    )
    assert results["env_and_dir"].correctness.status == StageStatus.PASSED


def test_compile_command_failure_stops_the_kernel(tmp_path):
    results = _analyze(
        tmp_path,
        [
            {
                "id": "broken_build",
                "type": "pytorch",
                "compile_command": [sys.executable, "-c", "raise SystemExit('error: x.cu:12: bad')"],
                "entry": "faulty.py:good",
                "reference": "faulty.py:reference",
            }
        ],
    )
    r = results["broken_build"]
    assert r.compile.status == StageStatus.FAILED and "x.cu:12" in r.compile.log
    assert r.correctness.status == StageStatus.SKIPPED and r.compiling_state == "FAILED"


def test_triton_interpreter_path(tmp_path):
    results = _analyze(
        tmp_path,
        [
            {
                "id": "triton_ok",
                "type": "triton",
                "entry": "triton_relu.py:relu",
                "reference": "faulty.py:reference",
                "get_inputs": "faulty.py:get_inputs",
            },
            {
                "id": "triton_tail_bug",
                "type": "triton",
                "entry": "triton_relu.py:relu_buggy",
                "reference": "faulty.py:reference",
                "get_inputs": "faulty.py:get_inputs",
            },
        ],
        performance={"budget_seconds": 0.5, "warmup_ms": 1, "min_samples": 3},
    )
    ok = results["triton_ok"]
    assert ok.correctness.status == StageStatus.PASSED
    assert ok.environment["triton_interpreter"] is True
    assert ok.performance.timing_meaningful is False
    assert any("interpreter, timings not meaningful" in n for n in ok.performance.notes)
    bug = results["triton_tail_bug"]
    assert bug.correctness.status == StageStatus.FAILED
    assert "non-finite at index (63, 28)" in bug.correctness.message  # flat 8092 = first of the last 100


def test_analyze_cli_exit_codes(run_magpie, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(
        "performance:\n  enabled: false\n"
        f"kernel:\n  id: g\n  type: pytorch\n  entry: {KERNELS}/faulty.py:good\n"
        f"  reference: {KERNELS}/faulty.py:reference\n"
    )
    assert run_magpie(["-o", str(tmp_path), "analyze", "-k", str(good)]).returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("faulty.py:good", "faulty.py:wrong_values"))
    result = run_magpie(["-o", str(tmp_path), "analyze", "-k", str(bad)])
    assert result.returncode == 1 and "mismatch at index (3, 7)" in result.stdout
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("kernel:\n  id: u\n  type: no_such_backend\n  testcase_command: ./x\n")
    result = run_magpie(["-o", str(tmp_path), "analyze", "-k", str(unknown)])
    assert result.returncode == 2 and "no kernel backend named 'no_such_backend' is installed" in result.stderr
    typo = tmp_path / "typo.yaml"
    typo.write_text("kernel:\n  id: u\n  entyr: x\n")
    result = run_magpie(["analyze", "-k", str(typo)])
    assert (
        result.returncode == 2
        and "typo.yaml:3: kernel.entyr: unknown key 'entyr' (did you mean 'entry'?)" in result.stderr
    )


def test_a_failure_points_at_the_candidates_own_line(tmp_path):
    """An exception raised deep inside torch is reported at the candidate's file and line."""
    import importlib.util

    import torch
    from magpie_kernels_pytorch.harness import _error_text

    source = tmp_path / "candidate.py"
    source.write_text("import torch\n\n\ndef kernel(a):\n    return torch.cat([a, 'not a tensor'])\n")
    spec = importlib.util.spec_from_file_location("candidate", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(TypeError) as raised:
        module.kernel(torch.ones(2))
    assert _error_text(raised.value).endswith(f"at {source}:5")
