"""The ``ray`` environment on a real local Ray cluster (loopback, declared GPUs, no GPU needed).

The cluster is started by these tests with ``ray.init(address="local")`` and
3 declared GPUs; candidates are CPU PyTorch kernels. Fan-out is proved, not
timed: the candidates meet at a barrier that only opens when all three run at
once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from magpie_core.config.kernel import KernelConfig, KernelConfigFile
from magpie_core.pipelines.compare import compare
from magpie_core.pipelines.jobs import run_jobs
from magpie_core.pipelines.kernel_files import kernel_jobs
from magpie_core.plugins import get_plugin_manager
from magpie_core.runtime.workspace import create_workspace
from tests.conftest import DATA

ray = pytest.importorskip("ray", reason="the ray plugin (plugins/ray, magpie-env-ray) is not installed")

KERNELS = DATA / "kernels"
HACKS = Path(__file__).parents[2] / "pytorch" / "tests" / "data" / "reward_hacks"
GPUS = 3
PERF = {"budget_seconds": 1, "min_samples": 10, "warmup_ms": 5, "timeout_seconds": 120, "rounds": 2}


@pytest.fixture(scope="module")
def cluster():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(
        address="local",
        num_cpus=2,
        num_gpus=GPUS,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        log_to_driver=False,
        logging_level="WARNING",
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _fanout_file(barrier: Path, n: int) -> KernelConfigFile:
    env = {"MAGPIE_BARRIER_DIR": str(barrier), "MAGPIE_BARRIER_N": str(n)}

    def k(kid: str, fn: str) -> KernelConfig:
        return KernelConfig(id=kid, type="pytorch", entry=f"fanout.py:{fn}", env=env)

    return KernelConfigFile(
        kernels=[
            k("single", "single"),
            k("single_b", "single_barrier"),
            k("heavy_b", "heavy_barrier"),
            k("wrong_b", "wrong_barrier"),
        ],
        performance=PERF,
    )


def test_jobs_fan_out_one_candidate_per_gpu(cluster, tmp_path):
    """analyze's and whole rounds' path: one Ray task per kernel, as many at once as there are GPUs."""
    file = _fanout_file(tmp_path / "barrier", GPUS)
    ws = create_workspace(tmp_path / "out", "analyze", "fanout")
    results = run_jobs(kernel_jobs(file, KERNELS, ws, measure_performance=False), "ray", GPUS, None)
    # all three barrier candidates arrived: they ran at the same time, one per declared GPU
    assert sorted(p.name for p in (tmp_path / "barrier").iterdir()) == ["heavy", "single", "wrong"]
    assert [r.correctness.status.value for r in results] == ["passed"] * 4  # each ran (no reference to check)


def test_compare_runs_its_checks_and_blocks_in_one_task(cluster, tmp_path):
    """The referee's side goes with the candidates: one Ray task checks and times them all in interleaved blocks,
    with the verdicts a local compare of the same file gives (the same assertions hold there)."""
    report = compare(
        _fanout_file(tmp_path / "barrier", 1),
        config_dir=KERNELS,
        output_dir=tmp_path / "ray",
        environment="ray",
        min_effect=0.25,
    )
    statuses = {r.kernel_id: r.correctness.status.value for r in report.results.kernel_results}
    assert statuses == {"single": "passed", "single_b": "passed", "heavy_b": "passed", "wrong_b": "failed"}
    by_id = {e.kernel_id: e for e in report.ranking}
    # orderings only through verdicts the statistics stand behind: the 8x-work candidate is never
    # FASTER, the identical one never FASTER or SLOWER (UNSTABLE: the machine was too busy to say)
    assert by_id["heavy_b"].verdict in ("SLOWER", "UNSTABLE"), report.stability
    assert by_id["single_b"].verdict in ("SAME", "UNSTABLE"), report.stability
    assert [u["kernel_id"] for u in report.unranked] == ["wrong_b"]
    assert report.settings["timing"] == "interleaved blocks, in one 'ray' task"
    saved = json.loads((Path(report.workspace) / "compare_report.json").read_text())
    assert saved["settings"]["environment"] == "ray" and saved["stability"]["blocks"] > 0  # blocks, not rounds
    assert [r["kernel_id"] for r in saved["results"]["kernel_results"]] == ["single", "single_b", "heavy_b", "wrong_b"]


def test_hacks_a_whole_round_let_through_are_caught_on_the_cluster(cluster, tmp_path, run_magpie):
    """gc_expected, counter and patch_compare were FASTER 34x, 27x and 7x when every kernel checked and timed itself
    in its own Ray task (2-core CPU); in one task of blocks their verdicts rest on no process of theirs."""
    files = [HACKS / f"softmax_{name}.py" for name in ("ref", "honest", "gc_expected", "counter", "patch_compare")]
    proc = run_magpie(
        ["-e", "ray", "-o", str(tmp_path / "out"), "compare", *map(str, files), "--json", "--no-html"],
        env={"RAY_USAGE_STATS_ENABLED": "0", "RAY_ADDRESS": cluster},
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["settings"]["timing"] == "interleaved blocks, in one 'ray' task"
    rows = {r["kernel_id"]: r["correctness"] for r in report["results"]["kernel_results"]}
    assert rows["softmax_honest"]["status"] == "passed", rows["softmax_honest"]
    for hack in ("gc_expected", "counter", "patch_compare"):
        assert rows[f"softmax_{hack}"]["status"] != "passed", (hack, rows[f"softmax_{hack}"])
    assert {e["kernel_id"] for e in report["ranking"]} <= {"softmax_ref", "softmax_honest"}
    refused = run_magpie(["-e", "ray", "compare", *map(str, files[:3]), "--timing", "rounds"], cwd=tmp_path)
    assert refused.returncode == 2 and "cannot fake" in refused.stderr, refused.stderr[-2000:]


def _crash_on_two(x: int) -> int:
    if x == 2:
        os.abort()
    return x * 10


def test_a_task_whose_worker_dies_fails_alone(cluster):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    env = get_plugin_manager().get("environment", "ray").with_options({"ray_config": {"num_cpus_per_task": 0}})
    results = env.map(_crash_on_two, [1, 2, 3], gpus_per_item=1)
    assert results[0] == 10 and results[2] == 30
    assert isinstance(results[1], BaseException)
    assert "Ray task failed" in str(results[1])
    # tasks that could never be scheduled come back as failures, not as a hang
    too_many = env.map(_crash_on_two, [1], gpus_per_item=GPUS + 1)
    assert "the Ray cluster has 3" in str(too_many[0])


def _wait_unless_stopped(folder: str) -> str:
    if not folder:
        return "at once"
    try:  # an interrupt right after "started" is written still finds the cleanup below
        (Path(folder) / "started").write_text("")
        for _ in range(1200):  # 120 s in short sleeps, as magpie's own waits are
            time.sleep(0.1)
        return "waited"
    finally:  # a cancelled task gets a KeyboardInterrupt: its cleanup runs
        (Path(folder) / "stopped").write_text("")


def _until(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.exists()


# A known, unexplained flake (2026-12-06 evening): in both full parallel runs and once in its own pytest process
# right after them, the cancelled task never cleaned up within a minute (Ray's cancel did not reach it, or it was not
# delivered as a KeyboardInterrupt), while the file alone (three times), beside three CPU hogs, and after the
# in-process compares passed. Until that is found, a pass is not required: a run that leaves the task running is a
# bug of magpie's Ray environment (ray.cancel without force), said in docs/benchmarks/test_suite_time.md
@pytest.mark.alone
@pytest.mark.xfail(strict=False, reason="Ray's cancel of a running task sometimes never reaches it: not explained")
def test_an_interrupted_run_stops_the_tasks_it_started(cluster, tmp_path):
    """Ctrl-C while a task runs on the cluster: the task is cancelled (and cleans up), not left running."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    env = get_plugin_manager().get("environment", "ray").with_options({"ray_config": {"num_cpus_per_task": 0}})

    def interrupt(index: int, result: object) -> None:  # Ctrl-C once the second task runs
        assert _until(tmp_path / "started", 60), "the second task never started"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        env.map(_wait_unless_stopped, ["", str(tmp_path)], on_result=interrupt)  # the first ends at once
    # within a minute (beside the vLLM tests on 2 cores, 30 s once passed without the cleanup), not the task's 120 s
    assert _until(tmp_path / "stopped", 60), "the task still runs on the cluster after the interrupt"


def test_cli_compare_reaches_the_cluster_from_yaml_and_a_crashing_candidate_fails_alone(cluster, tmp_path, run_magpie):
    config = tmp_path / "compare_ray.yaml"
    config.write_text(
        f"""
ray_config:
  cluster_address: "{cluster}"
performance: {json.dumps(PERF)}
kernels:
  - {{id: base, type: pytorch, entry: {KERNELS}/fanout.py:single, working_dir: {KERNELS}}}
  - {{id: crashes, type: pytorch, entry: {KERNELS}/fanout.py:crashes, working_dir: {KERNELS}}}
  - {{id: quad, type: pytorch, entry: {KERNELS}/fanout.py:heavy, working_dir: {KERNELS}}}
"""
    )
    proc = run_magpie(
        ["compare", "-k", str(config), "-o", str(tmp_path / "out"), "--json"],
        env={"RAY_USAGE_STATS_ENABLED": "0", "RAY_ADDRESS": ""},
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["settings"]["environment"] == "ray"
    states = {r["kernel_id"]: r["correctness"]["status"] for r in report["results"]["kernel_results"]}
    assert states == {"base": "passed", "crashes": "error", "quad": "passed"}
    crash = next(r for r in report["results"]["kernel_results"] if r["kernel_id"] == "crashes")
    assert "SIGABRT" in crash["correctness"]["message"]
    assert [e["kernel_id"] for e in report["ranking"]] == ["base", "quad"]


def test_benchmark_config_runs_as_a_ray_task_with_its_gpus(cluster, tmp_path, fake_stream_server):
    """run_mode: ray — the benchmark (here against a fake streaming server, external mode inside
    the task) runs as one Ray task asking for TP GPUs; the report comes back as a local run's."""
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.pipeline import run_benchmark_on_environment

    def cfg(tp: int) -> BenchmarkConfig:
        return BenchmarkConfig.model_validate(
            {
                "framework": "fake",
                "model": "fake-model",
                "run_mode": "ray",
                "run_kind": "measurement",
                "base_url": fake_stream_server,
                "envs": {"TP": tp, "CONC": 4, "ISL": 16, "OSL": 8, "NUM_PROMPTS": 12, "RANDOM_RANGE_RATIO": 0},
                "load": {"progress": False},
            }
        )

    report = run_benchmark_on_environment(cfg(2), tmp_path, "ray")
    assert report.success, report.errors
    assert report.run_mode == "ray" and report.throughput["completed_requests"] == 12
    assert Path(report.workspace_dir, "benchmark_report.json").exists()
    too_big = run_benchmark_on_environment(cfg(GPUS + 1), tmp_path, "ray")
    assert not too_big.success and f"needs {GPUS + 1} GPU(s) but the Ray cluster has {GPUS}" in too_big.errors[0]


def test_kernelbench_problems_run_as_ray_tasks_one_gpu_each(cluster, tmp_path):
    """``magpie -e ray kernelbench run``: each problem one task on one declared GPU, rows written by the driver."""
    import shutil

    from magpie_kernels_pytorch.kernelbench_cli import CompareProblem
    from magpie_kernels_pytorch.kernelbench_run import run

    kernelbench = Path(__file__).parents[2] / "pytorch" / "tests" / "data" / "kernelbench"
    for name, solution in (("relu_a", "relu_clamp.py"), ("relu_b", "relu_wrong.py")):
        (tmp_path / "problems").mkdir(exist_ok=True)
        shutil.copy(kernelbench / "relu_reference.py", tmp_path / "problems" / f"{name}.py")
        (tmp_path / "solutions" / name).mkdir(parents=True)
        shutil.copy(kernelbench / solution, tmp_path / "solutions" / name / solution)
    rows = run(
        tmp_path / "problems",
        tmp_path / "solutions",
        tmp_path / "r.jsonl",
        CompareProblem(tmp_path / "out", measure_performance=False),
        environment="ray",
        workers=2,
        gpus_per_problem=1,
    )
    assert sorted((r["problem"], r["correct"]) for r in rows) == [("relu_a", True), ("relu_b", False)]
    # Ray gave each task one of the cluster's declared GPUs, and the row says which
    assert all(r["devices"] in {str(i) for i in range(GPUS)} for r in rows), rows
