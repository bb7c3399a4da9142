"""``magpie loop`` on real parts without vLLM: the conclusion's success path, bad input, and the MCP tools.

Real: two benchmark runs of magpie's fake streaming server (the "final" one configured with a faster
token rate, so its end-to-end gain is measured, not written by hand — it stands in for a server that
runs the winning kernel), the gap analysis of a recorded vLLM GPU trace with the kernel source finder
over the miniature vLLM checkout in tests/data, and ``magpie compare`` of two PyTorch rotary-embedding
variants on the CPU. The loop with the real vLLM CPU server is in test_loop_vllm.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA

KERNELS = Path(__file__).parent / "kernels"
TRACE = DATA / "traces" / "inference" / "vllm_decode_full"
SOURCES = DATA / "kernel_sources" / "vllm"


def magpie(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "magpie_core", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """``magpie ARGS`` in this process (the same entry point as the console script): (exit code, stdout, stderr)."""
    from magpie_core.cli import run

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        try:
            with warnings.catch_warnings():  # plugin commands are added again on every run(): "already taken"
                warnings.simplefilter("ignore")
                run(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out.out, out.err)

    return call


def _fake_run(out: Path, itl_ms: float) -> Path:
    """A benchmark of magpie's fake server (started and stopped by magpie), 3 repeats, each on a fresh server."""
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.interfaces import ServingFramework
    from magpie_benchmark.pipeline import run_benchmark

    class Fake(ServingFramework):
        name = "fake"

        def server_command(self, config: Any, host: str, port: int) -> list[str]:
            argv = [sys.executable, "-m", "magpie_benchmark.loadgen.fake_server", "--host", host, "--port", str(port)]
            return [*argv, "--ttft-ms", "5", "--itl-ms", str(itl_ms)]

    config = BenchmarkConfig.model_validate(
        {
            "framework": "fake",
            "model": "fake-model",
            "run_mode": "local",
            "run_kind": "measurement",
            "repeats": 3,
            "restart_between_repeats": True,
            "envs": {"CONC": 4, "ISL": 16, "OSL": 16, "NUM_PROMPTS": 8, "RANDOM_RANGE_RATIO": 0},
            "load": {"progress": False},
            "gpu_selection": {"devices": None},
            "stop_grace_s": 5,
        }
    )
    report = run_benchmark(config, out, framework_component=Fake())
    assert report.success, report.errors
    return Path(report.workspace_dir) / "benchmark_report.json"


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("loop_parts")
    gap = magpie("gap", str(TRACE), "-o", str(out / "gap"), "--top-k", "30", "--find-kernel-sources",
                 "--kernel-source-repos", str(SOURCES), "--json")  # fmt: skip
    assert gap.returncode == 0, gap.stderr
    # min_effect 0.5: the candidate is ~12x faster; a busy machine still gets a trusted verdict at that size
    compare = magpie("compare", "-k", str(KERNELS / "compare_rope.yaml"), "-o", str(out / "cmp"), "--min-effect", "0.5")
    assert compare.returncode == 0, compare.stdout + compare.stderr
    # baseline and final at the same time (two threads, two servers): on a busy machine, runs measured at
    # different times get no verdict (the load may explain the change); runs measured together do
    with ThreadPoolExecutor(2) as pool:
        base = pool.submit(_fake_run, out / "base", 8)
        final = pool.submit(_fake_run, out / "final", 2)
        baseline_report, final_report = base.result(), final.result()
    return {
        "baseline": baseline_report,
        "final": final_report,
        "gap": next((out / "gap").glob("gap_*/gap_analysis.json")),
        "compare": next((out / "cmp").glob("compare_*/compare_report.json")),
    }


def test_every_condition_holds_is_success(parts: dict[str, Path], tmp_path: Path, cli: Any) -> None:
    magpie = cli
    loop = tmp_path / "loop"
    assert magpie("loop", "start", str(loop), "--name", "rope").returncode == 0
    steps = [
        ("baseline", str(parts["baseline"])),
        ("profile", str(TRACE)),
        ("analysis", str(parts["gap"])),
        ("kernel", "rotary_embedding_kernel"),
        ("compare", str(parts["compare"])),
        ("final", str(parts["final"])),
    ]
    for step, target in steps:
        done = magpie("loop", "add", str(loop), step, target)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    state = json.loads((loop / "loop.json").read_text())
    (kernel,) = state["kernels"]
    assert kernel["name"].startswith("void vllm::rotary_embedding_kernel") and kernel["source_resolution"] == "exact"
    assert state["compares"][0]["candidate_id"] == "rope_all_heads" and state["compares"][0]["verdict"] == "FASTER"
    assert state["final"]["summary"]["e2e_verdict"] == "IMPROVED"
    status = magpie("loop", "status", str(loop))
    assert status.returncode == 0 and "next:     magpie loop report DIR" in status.stdout
    done = magpie("loop", "report", str(loop), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["conclusion"] == "success" and report["failing"] == []
    assert {c["name"] for c in report["conditions"]} == {
        "correctness", "kernel_gain", "source_mapping", "same_workload", "end_to_end_gain",
    }  # fmt: skip
    md = (loop / "loop_report.md").read_text()
    assert "**Conclusion: success**" in md and "rope_all_heads" in md and "IMPROVED" in md


def test_a_hand_given_source_and_a_missing_final_name_their_conditions(
    parts: dict[str, Path], tmp_path: Path, cli: Any
) -> None:
    magpie = cli
    loop = tmp_path / "loop"
    magpie("loop", "start", str(loop))
    for step, target in (("baseline", parts["baseline"]), ("analysis", parts["gap"]), ("compare", parts["compare"])):
        assert magpie("loop", "add", str(loop), step, str(target)).returncode == 0
    done = magpie("loop", "add", str(loop), "kernel", "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
                  "--source-file", "mine.py")  # fmt: skip
    assert done.returncode == 0 and "asserted" in done.stdout
    done = magpie("loop", "report", str(loop), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["failing"] == ["source_mapping", "same_workload", "end_to_end_gain"]
    assert report["conclusion"].startswith("not a success: source_mapping (")
    assert "asserted" in report["conclusion"] and "no final re-benchmark recorded" in report["conclusion"]


def test_bad_steps_are_one_line_usage_errors(parts: dict[str, Path], tmp_path: Path, cli: Any) -> None:
    loop = tmp_path / "loop"
    done = magpie("loop", "add", str(loop), "baseline", str(parts["baseline"]))  # the console script, for real
    assert done.returncode == 2 and "no loop here" in done.stderr and "Traceback" not in done.stderr
    cli("loop", "start", str(loop))
    assert "already started" in cli("loop", "start", str(loop)).stderr
    cases = [
        (("baselin", str(parts["baseline"])), "unknown step 'baselin'"),
        (("baseline", str(parts["gap"])), "is not a benchmark report"),
        (("kernel", "rotary"), "not among the recorded analyses' top kernels"),
        (("compare", str(parts["baseline"])), "is not a compare report"),
        (("final", str(parts["final"])), "record the baseline first"),
        (("baseline", str(tmp_path / "missing.json")), "cannot read"),
    ]
    for args, message in cases:
        done = cli("loop", "add", str(loop), *args)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    assert json.loads((loop / "loop.json").read_text())["baseline"] is None  # nothing half-recorded


def test_the_loop_through_mcp_tools(parts: dict[str, Path], tmp_path: Path) -> None:
    mcp_testing = pytest.importorskip("magpie_mcp.testing", reason="the MCP plugin is absent")
    ws = mcp_testing.write_workspace(tmp_path / "ws", roots=[tmp_path / "ws", parts["gap"].parents[2], DATA])
    loop = str(ws / "loop")

    async def scenario(s: Any) -> None:
        call, call_error = mcp_testing.call, mcp_testing.call_error
        names = {t.name for t in (await s.list_tools()).tools}
        assert {"loop_start", "loop_add", "loop_status", "loop_report"} <= names
        await call(s, "loop_start", {"loop_dir": loop})
        added = await call(s, "loop_add", {"loop_dir": loop, "step": "baseline", "path": str(parts["baseline"])})
        assert added["recorded"].startswith("baseline: 3 repeat(s)") and "profile" in added["next"]
        await call(s, "loop_add", {"loop_dir": loop, "step": "analysis", "path": str(parts["gap"])})
        await call(s, "loop_add", {"loop_dir": loop, "step": "kernel", "kernel": "rotary_embedding_kernel"})
        status = await call(s, "loop_status", {"loop_dir": loop})
        assert status["record"]["kernels"][0]["source_resolution"] == "exact"
        assert "outside" in await call_error(s, "loop_add", {"loop_dir": loop, "step": "final", "path": "/etc/hosts"})
        assert "unknown step" in await call_error(s, "loop_add", {"loop_dir": loop, "step": "x", "path": loop})
        report = await call(s, "loop_report", {"loop_dir": loop})
        assert report["success"] is False and "correctness" in report["failing"]
        assert Path(report["report_md"]).is_file()

    mcp_testing.run_session(ws, scenario)
