"""A Triton kernel under the interpreter in the same compare as a torch.compile kernel (real CLI run, CPU).

A compare with a torch.compile kernel preloads torch.compile's start-up into the fork server that every worker
is forked from (``magpie_kernels_pytorch.compile_preload``). Inductor imports triton, and Triton's interpreter
works only when chosen before triton is first imported: the two kernels once broke each other this way. The
workers' exits must also leave nothing for the resource tracker to report as leaked.
"""

from __future__ import annotations

import json

from tests.conftest import DATA

KERNELS = DATA / "kernels"


def test_interpreted_triton_beside_torch_compile(run_magpie, tmp_path):
    config = tmp_path / "compare.yaml"
    config.write_text(
        f"""baseline: eager
correctness: {{trials: 1}}
performance: {{budget_seconds: 0.5, warmup_ms: 1, min_samples: 3}}
kernels:
  - {{id: eager, type: pytorch, entry: {KERNELS}/faulty.py:good, reference: {KERNELS}/faulty.py:reference}}
  - {{id: compiled, type: torch_compile, entry: {KERNELS}/faulty.py:good, reference: {KERNELS}/faulty.py:reference}}
  - id: triton
    type: triton
    entry: {KERNELS}/triton_relu.py:relu
    reference: {KERNELS}/faulty.py:reference
    get_inputs: {KERNELS}/faulty.py:get_inputs
"""
    )
    done = run_magpie(["-o", str(tmp_path / "runs"), "compare", "-k", str(config)])
    report = json.loads(next((tmp_path / "runs").rglob("compare_report.json")).read_text())
    by_id = {r["kernel_id"]: r for r in report["results"]["kernel_results"]}
    assert {k: r["correctness"]["status"] for k, r in by_id.items()} == {
        "eager": "passed",
        "compiled": "passed",
        "triton": "passed",
    }, done.stdout
    assert by_id["triton"]["environment"]["triton_interpreter"] is True
    assert "leaked" not in done.stderr, done.stderr
