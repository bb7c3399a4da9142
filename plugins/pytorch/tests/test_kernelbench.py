"""KernelBench files without a YAML: recognition, the kernelbench: block, train mode, presets and messages."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from magpie_kernels_pytorch.kernelbench import KernelBenchBlock, block_for_sources, kernels_of

from magpie_core.config.errors import ConfigError
from magpie_core.config.kernel import KernelConfig, KernelConfigFile
from magpie_core.pipelines.kernel_files import kernel_file_from_sources, prepare_kernel_file
from magpie_core.reports import EvaluationTask, StageStatus

DATA = Path(__file__).parent / "data" / "kernelbench"


@pytest.fixture
def problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test problems copied into a fresh folder that is also the working directory (as for a user)."""
    for file in DATA.glob("*.py"):
        shutil.copy(file, tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_kernelbench_files_are_recognised_and_written_out(problem: Path) -> None:
    file = kernel_file_from_sources(["relu_reference.py", "relu_clamp.py", "relu_wrong.py"], None)
    assert file is not None and not file.plugin_blocks()  # the block is written out, once
    ref, clamp, wrong = file.all_kernels()
    assert file.baseline == "relu_reference" and file.correctness is not None and file.correctness.trials == 5
    assert (ref.entry, clamp.entry) == ("relu_reference.py:Model", "relu_clamp.py:ModelNew")
    assert {k.reference for k in (ref, clamp, wrong)} == {"relu_reference.py:Model"}
    assert clamp.get_inputs == "relu_reference.py:get_inputs"
    assert clamp.get_init_inputs == "relu_reference.py:get_init_inputs"
    assert clamp.options == {"module_mode": "train", "tolerance": "kernelbench"}
    assert len(prepare_kernel_file(file, problem).all_kernels()) == 3  # preparing again adds nothing


def test_other_files_are_left_alone_and_a_lone_solution_asks_for_its_problem(problem: Path) -> None:
    (problem / "vector_add.hip").write_text("__global__ void k() {}\n")
    (problem / "plain.py").write_text("def f(x):\n    return x\n")
    assert block_for_sources(["vector_add.hip"]) is None
    assert block_for_sources(["plain.py"]) is None
    assert kernel_file_from_sources(["relu_reference.py"], "hip") is None  # --type hip: not ours
    with pytest.raises(ConfigError, match="give the reference first"):
        block_for_sources(["relu_clamp.py"])
    # a problem and a solution, then a file that is neither: named, not taken for an AMD Magpie (--type hip) source
    for files in (["relu_reference.py", "relu_clamp.py", "plain.py"], ["relu_reference.py", "plain.py"]):
        with pytest.raises(ConfigError, match="not a KernelBench solution: no `class ModelNew`") as err:
            block_for_sources(files)
        assert err.value.file == "plain.py"


def test_a_missing_entry_or_a_syntax_error_is_a_failed_compile_that_names_the_nearest_name(problem: Path) -> None:
    """Like a missing file (KernelBench's ``compiled: false``), found by reading the file, not importing it."""
    from magpie_kernels_pytorch.static_check import problem as static_problem

    (problem / "k.py").write_text("import torch\nif True:\n    def softmax_manual(x):\n        return x\n")
    (problem / "broken.py").write_text("def f(x:\n    return x\n")
    (problem / "star.py").write_text("from math import *\n")

    def found(entry: str) -> str | None:
        return static_problem(KernelConfig(type="pytorch", entry=entry), [problem])

    assert found("k.py:softmax_manual") is None and found("k.py:torch") is None and found("star.py:sqrt") is None
    assert (
        found("k.py:softmax_nosuch")
        == f"entry: {problem / 'k.py'} defines no 'softmax_nosuch' (did you mean 'softmax_manual'?)"
    )
    assert found("broken.py:f") == f"entry: {problem / 'broken.py'}:1: SyntaxError: '(' was never closed"
    kernels = [
        {"id": i, "type": "pytorch", "entry": f"k.py:{f}"} for i, f in (("a", "softmax_manual"), ("b", "nosuch"))
    ]
    file = KernelConfigFile.model_validate({"kernels": kernels})
    from magpie_core.pipelines.compare import compare

    report = compare(file, config_dir=problem, output_dir=problem / "out", measure_performance=False)
    result = report.results.kernel_results[1]
    assert result.compile.status == StageStatus.FAILED and "defines no 'nosuch'" in (result.compile.message or "")


def test_a_solutions_own_inputs_are_ignored_with_a_note_unless_asked(
    problem: Path, caplog: pytest.LogCaptureFixture
) -> None:
    block = KernelBenchBlock(reference="relu_reference.py", solutions=["relu_clamp.py"])
    with caplog.at_level(logging.WARNING, logger="magpie.pytorch"):
        clamp = kernels_of(block, "pytorch", problem)[1]
    assert clamp.get_inputs == "relu_reference.py:get_inputs"
    assert "relu_clamp.py defines its own get_inputs: ignored" in caplog.text
    asked = block.model_copy(update={"use_solution_inputs": True})
    assert kernels_of(asked, "pytorch", problem)[1].get_inputs == "relu_clamp.py:get_inputs"


def test_a_kernelbench_block_in_a_yaml_sets_mode_and_trials_of_hand_written_kernels(problem: Path) -> None:
    own = KernelConfig(id="own", type="pytorch", entry="relu_clamp.py:ModelNew", reference="relu_reference.py:Model")
    own = own.model_copy(update={"get_inputs": "relu_reference.py:get_inputs"})
    file = KernelConfigFile.model_validate({"kernels": [own.model_dump()], "kernelbench": {"mode": "eval"}})
    prepared = prepare_kernel_file(file, problem)
    assert prepared.all_kernels()[0].options == {"module_mode": "eval", "tolerance": "kernelbench"}
    assert prepared.correctness is not None and prepared.correctness.trials == 5


def test_a_missing_get_inputs_is_a_config_error_that_names_the_fix(problem: Path) -> None:
    kernel = KernelConfig(
        id="sol", type="pytorch", entry="no_inputs_solution.py:ModelNew", reference="relu_reference.py:Model"
    )
    with pytest.raises(ConfigError) as caught:
        prepare_kernel_file(KernelConfigFile(kernels=[kernel]), problem, problem / "k.yaml")
    assert "defines no get_inputs()" in str(caught.value)
    assert "get_inputs: relu_reference.py:get_inputs" in str(caught.value)


def _evaluate(problem: Path, kernel: KernelConfig) -> StageStatus:
    from magpie_kernels_pytorch.plugin import PyTorchBackend

    task = EvaluationTask(
        kernel=kernel.model_dump(mode="json", exclude_none=True),
        kernel_type="pytorch",
        config_dir=str(problem),
        workspace=str(problem),
        settings={"correctness": {"trials": 2}, "performance": {"enabled": False}},
    )
    return PyTorchBackend().evaluate(task).correctness.status


def test_modules_run_in_training_mode_as_kernelbench_runs_them(problem: Path) -> None:
    """BatchNorm written out with batch statistics matches Model in train mode (KernelBench's) and not in eval."""
    train = KernelBenchBlock(reference="bn_reference.py", solutions=["bn_batch_stats.py"])
    assert _evaluate(problem, kernels_of(train, "pytorch", problem)[1]) == StageStatus.PASSED
    evaluated = kernels_of(train.model_copy(update={"mode": "eval"}), "pytorch", problem)[1]
    assert _evaluate(problem, evaluated) == StageStatus.FAILED


def test_tolerance_presets_and_the_largest_error() -> None:
    import torch
    from magpie_kernels_pytorch.checking import Tolerance, compare_outputs

    expected = torch.zeros(4, 4)
    actual = expected.clone()
    actual[0, 1] = 2e-3  # inside KernelBench v0's 1e-2, outside HEAD's 1e-4 for fp32
    actual[2, 3] = 5e-3
    assert compare_outputs(expected, actual, Tolerance(preset="kernelbench-v0")) == []
    (problem,) = compare_outputs(expected, actual, Tolerance(preset="kernelbench"))
    assert "mismatch at index (0, 1)" in problem and "largest error at index (2, 3)" in problem
    assert "max rel err 50 " in problem  # 5e-3 / max(|0|, atol 1e-4): not 1e+30
    with pytest.raises(ValueError, match="not one of"):
        Tolerance(preset="kernelbench-v9")


def test_outputs_larger_than_a_chunk_are_judged_element_by_element() -> None:
    """A large output is compared a chunk at a time (no full-size float64 copies) with the same rule: one element
    off in the last chunk, a NaN where a number is expected, a NaN expected and given (only with equal_nan)."""
    import torch
    from magpie_kernels_pytorch import checking
    from magpie_kernels_pytorch.checking import Tolerance, compare_outputs

    expected = torch.randn(3, checking._CHUNK + 7)  # three chunks and a bit
    tol = Tolerance(atol=1e-5, rtol=1e-5)
    near = expected * (1 + 1e-6)
    assert compare_outputs(expected, near, tol) == [] and compare_outputs(expected, expected.clone(), tol) == []
    off = near.clone()
    off[2, -1] += 1.0
    (problem,) = compare_outputs(expected, off, tol)
    assert f"mismatch at index (2, {checking._CHUNK + 6})" in problem and "1 of" in problem
    off[2, -1] = float("nan")
    assert "non-finite at index" in compare_outputs(expected, off, tol)[0]
    expected[1, 3] = float("nan")
    both = expected.clone()
    assert compare_outputs(expected, both, tol) != []  # NaN != NaN unless asked for
    assert compare_outputs(expected, both, Tolerance(atol=1e-5, rtol=1e-5, equal_nan=True)) == []


def test_compare_of_kernelbench_files_needs_no_yaml(run_magpie, problem: Path) -> None:
    files = ["relu_reference.py", "relu_clamp.py", "relu_wrong.py"]
    result = run_magpie(
        ["-o", str(problem / "out"), "compare", *files, "--no-perf", "--json", "--no-html"], cwd=problem
    )
    assert result.returncode == 1, result.stderr  # relu_wrong fails its check
    results = {r["kernel_id"]: r for r in json.loads(result.stdout)["results"]["kernel_results"]}
    clamp, wrong = results["relu_clamp"]["correctness"], results["relu_wrong"]["correctness"]
    assert clamp["status"] == "passed" and clamp["trials"] == 5 and "tolerance preset 'kernelbench'" in clamp["message"]
    assert wrong["status"] == "failed" and "largest error at index" in wrong["message"]
    assert "relu_clamp.py defines its own get_inputs: ignored" in result.stderr


def test_cli_missing_get_inputs_exits_2(run_magpie, problem: Path) -> None:
    yaml = problem / "k.yaml"
    yaml.write_text(
        "kernels:\n  - id: sol\n    type: pytorch\n    entry: no_inputs_solution.py:ModelNew\n"
        "    reference: relu_reference.py:Model\n"
    )
    result = run_magpie(["-o", str(problem / "out"), "analyze", "-k", str(yaml), "--no-perf"], cwd=problem)
    assert result.returncode == 2 and "get_inputs: relu_reference.py:get_inputs" in result.stderr


def test_problem_set_runner_is_resumable_and_counts_only_verified_wins(problem: Path) -> None:
    from magpie_kernels_pytorch.kernelbench_run import Problem, fast_p, run

    (problem / "problems").mkdir()
    shutil.move(problem / "relu_reference.py", problem / "problems" / "relu.py")
    (problem / "sols" / "relu").mkdir(parents=True)
    for name in ("relu_clamp.py", "relu_wrong.py"):
        shutil.move(problem / name, problem / "sols" / "relu" / name)
    calls: list[list[str]] = []

    def fake_compare(problem: Problem) -> dict:
        """A compare report: clamp 1.6x but inside the noise (0.9-2.5), wrong rejected."""
        calls.append([s.name for s in problem.solutions])
        ids = ["relu", *(s.stem for s in problem.solutions)]
        status = {"relu": "passed", "relu_clamp": "passed", "relu_wrong": "failed"}
        ranking = [
            {"kernel_id": "relu", "median_us": 10.0, "speedup": 1.0, "verdict": "BASELINE"},
            {
                "kernel_id": "relu_clamp",
                "median_us": 6.25,
                "speedup": 1.6,
                "speedup_ci95": [0.9, 2.5],
                "verdict": "UNSTABLE",
            },
        ]
        results = [
            {"kernel_id": i, "compile": {"status": "skipped"}, "correctness": {"status": status[i]}} for i in ids
        ]
        return {"baseline_id": "relu", "ranking": ranking, "results": {"kernel_results": results}}

    rows = run(problem / "problems", problem / "sols", problem / "r.jsonl", fake_compare)
    assert calls == [["relu_clamp.py", "relu_wrong.py"]]
    assert [(r["solution"].endswith("relu_clamp.py"), r["correct"], r["compiled"]) for r in rows] == [
        (True, True, True),
        (False, False, True),
    ]
    assert fast_p(rows, verified=False) == {"fast_0": 0.5, "fast_1": 0.5, "fast_1.5": 0.5, "fast_2": 0.0}
    assert fast_p(rows, verified=True) == {"fast_0": 0.5, "fast_1": 0.0, "fast_1.5": 0.0, "fast_2": 0.0}
    assert len(run(problem / "problems", problem / "sols", problem / "r.jsonl", fake_compare)) == 2
    assert len(calls) == 1  # resumed: nothing left to run


def test_a_problem_waiting_for_its_builds_holds_no_gpu(problem: Path) -> None:
    """Issue 45, ``--gpus``: problem ``a`` waits for its builds, ``b`` is ready; on one GPU ``b`` runs meanwhile
    (``a`` waiting for a compiler while holding the GPU would leave it idle, here until ``a``'s wait gives up)."""
    import threading

    from magpie_kernels_pytorch.kernelbench_run import Problem, run

    for name in ("a", "b"):
        (problem / "problems" / name).mkdir(parents=True)
        shutil.copy(problem / "relu_reference.py", problem / "problems" / name / "reference.py")
        (problem / "sols" / name).mkdir(parents=True)
        shutil.copy(problem / "relu_clamp.py", problem / "sols" / name / "relu_clamp.py")
    b_done, order = threading.Event(), []

    def ready(p: Problem) -> None:
        if p.name == "a":
            assert b_done.wait(30), "problem b never ran while a waited for its builds"

    def fake_compare(p: Problem) -> dict:
        order.append((p.name, p.devices))
        if p.name == "b":
            b_done.set()
        results = [{"kernel_id": i, "compile": {"status": "skipped"}, "correctness": {"status": "passed"}}
                   for i in ("reference", "relu_clamp")]  # fmt: skip
        return {"baseline_id": "reference", "ranking": [], "results": {"kernel_results": results}}

    rows = run(problem / "problems", problem / "sols", problem / "r.jsonl", fake_compare, gpus=["7"], ready=ready)
    assert order == [("b", "7"), ("a", "7")] and len(rows) == 2


def test_gpus_given_as_a_count_take_the_visible_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from magpie_kernels_pytorch.kernelbench_run import local_devices

    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert local_devices("2") == ["0", "1"] and local_devices("0, 2,5") == ["0", "2", "5"] and local_devices(None) == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")  # this process may use those: a count takes from them
    assert local_devices("2") == ["4", "5"]


def test_a_failed_extension_build_says_the_first_compiler_error_else_the_exception() -> None:
    from magpie_kernels_pytorch.extensions import failure

    nvcc = (
        "RuntimeError: Error building extension 'relu': [1/3] nvcc ... -c /x/torch_extensions/relu/cuda.cu\n"
        "FAILED: cuda.cuda.o\n"
        '/x/torch_extensions/relu/cuda.cu(4): error: identifier "undefined_zero" is undefined\n'
        '/x/torch_extensions/relu/cuda.cu(9): error: expected a ";"\n'
    )
    assert failure(nvcc, "exit status 1", False) == (
        '/x/torch_extensions/relu/cuda.cu:4: error: identifier "undefined_zero" is undefined (+1 more errors)'
    )
    python = "Traceback (most recent call last):\n  raise OSError('CUDA_HOME ...')\nOSError: CUDA_HOME is not set.\n"
    assert failure(python, "exit status 1", False) == "OSError: CUDA_HOME is not set."
    assert failure("", "timed out after 600.0 s: python", True) == "timed out after 600.0 s: python"
