"""The whole loop on the CPU with the real vLLM server and the tiny Llama, and a PyTorch kernel candidate.

baseline and final: the shared A/A pair (same benchmark, 3 repeats, root conftest); profile: a real
profiled run (``run_kind: diagnostic``) whose gap analysis ranks the CPU ops of the trace; kernel:
``aten::mm`` from that analysis; compare: ``magpie compare`` of two PyTorch matmul variants. Nothing
put the candidate into the server, so the honest conclusion is "not a success", naming the source
mapping (no PyTorch checkout to map ``aten::mm`` to) and the end-to-end gain (within noise).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.vllm_cpu import benchmark_block, run_benchmark_cli

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).parent / "kernels"


def magpie(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "magpie_core", *args], capture_output=True, text=True, timeout=600)


def test_loop_on_cpu_names_what_is_not_proven(vllm_aa_reports: list[Path], tiny_llama_model: Path, tmp_path: Path):
    profiled = run_benchmark_cli(
        benchmark_block(
            tiny_llama_model,
            run_kind="diagnostic",
            gap_analysis={"enabled": True, "categories": ["cpu_op"], "top_k": 10, "find_kernel_sources": True},
            load={"diagnostic_num_prompts": 4, "progress": False},
        ),
        tmp_path / "profiled",
    )
    compare = magpie(
        "compare", "-k", str(KERNELS / "compare_mm.yaml"), "-o", str(tmp_path / "cmp"), "--min-effect", "0.5"
    )
    assert compare.returncode == 0, compare.stdout + compare.stderr
    compare_report = next((tmp_path / "cmp").glob("compare_*/compare_report.json"))

    loop = tmp_path / "loop"
    assert magpie("loop", "start", str(loop)).returncode == 0
    for args in (
        ("baseline", str(vllm_aa_reports[0])),
        ("profile", str(profiled)),  # records its gap analysis too
        ("kernel", "aten::mm"),
        ("compare", str(compare_report), "--kernel", "aten::mm"),
        ("final", str(vllm_aa_reports[1])),
    ):
        done = magpie("loop", "add", str(loop), *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)

    state = json.loads((loop / "loop.json").read_text())
    assert state["analyses"] and any(k["name"] == "aten::mm" for k in state["analyses"][0]["summary"]["top_kernels"])
    assert state["kernels"][0]["source_resolution"] != "exact"
    assert state["compares"][0]["candidate_id"] == "mm_torch"

    done = magpie("loop", "report", str(loop), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    conditions = {c["name"]: c for c in report["conditions"]}
    assert conditions["correctness"]["ok"] and conditions["same_workload"]["ok"]
    assert report["compares"][0]["verdict"] == "FASTER" and conditions["kernel_gain"]["ok"]
    assert report["failing"] == ["source_mapping", "end_to_end_gain"]
    assert "aten::mm" in conditions["source_mapping"]["detail"]
    assert conditions["end_to_end_gain"]["detail"].startswith("within noise on every metric")
    assert report["conclusion"].startswith("not a success: source_mapping (")
    assert {m["verdict"] for m in report["end_to_end"]["metrics"]} == {"WITHIN NOISE"}
