"""compare on KernelBench problems nobody tuned to (benchmarks/kernelbench_bed): the verdict guarantees.

Real compares, real worker processes, on allocation-sensitive problems (conv2d and a sum reduction under
load injected on every core while they run; matmul + residual add on the machine as it is):

- the identical copy of the reference is never FASTER or SLOWER (SAME, or UNSTABLE when the noise is
  too large to tell);
- the >= 3x slower variant is never FASTER (SLOWER, or UNSTABLE on a machine too busy to tell);
- the wrong variant is rejected by correctness and never ranked.

Without injected load the slow variant must be called SLOWER, unless the run itself reports the machine
busy or overloaded, its processes far apart, or its identical copy called different (CI machines are shared:
that report is the honest answer, a FASTER never is).
Repeated runs and the H200 are in benchmarks/kernelbench_verdicts.py (docs/benchmarks/kernelbench_bed.md).
"""

from __future__ import annotations

import pytest

from magpie_core.config.kernel import KernelConfigFile
from magpie_core.pipelines.compare import compare
from magpie_core.pipelines.kernel_files import load_kernel_file

from .conftest import ROOT
from .helpers.load_injector import injected_load

BED = ROOT / "benchmarks" / "kernelbench_bed"
#: under injected load: the conv2d once called 9.35x FASTER against itself, and a reduction; the matmul with a
#: residual add runs quiet below (every problem, repeated, in benchmarks/kernelbench_verdicts.py)
ALLOCATION_SENSITIVE = ["l1_63_conv2d", "l1_47_sum_reduction"]


def _bed_file(problem: str, keep: tuple[str, ...]) -> KernelConfigFile:
    file = load_kernel_file(BED / problem / "compare.yaml")
    return file.model_copy(update={"kernels": [k for k in file.kernels if k.id in keep]})


def _verdicts(report) -> dict[str, str | None]:
    return {e.kernel_id: e.verdict for e in report.ranking}


@pytest.mark.parametrize("problem", ALLOCATION_SENSITIVE)
def test_identical_is_never_decided_and_slow_never_faster_under_load(problem, tmp_path):
    file = _bed_file(problem, ("reference", "identical", "slow", "wrong"))
    with injected_load():
        report = compare(file, config_dir=BED / problem, output_dir=tmp_path, min_effect=0.05)
    verdicts = _verdicts(report)
    assert verdicts["identical"] in ("SAME", "UNSTABLE"), report.ranking
    assert verdicts["slow"] in ("SLOWER", "UNSTABLE"), report.ranking
    assert "wrong" not in verdicts and any(u["kernel_id"] == "wrong" for u in report.unranked)
    assert report.winner_id != "slow"
    stability = report.stability
    assert stability is not None and stability["processes"]["0"] >= 2  # the baseline in several processes
    assert stability["aa_verdict"] is not None  # the baseline's identical copy was timed and checked
    for result in report.results.kernel_results:
        if result.kernel_id != "wrong":
            assert result.performance.process_levels and len(result.performance.process_levels) >= 2
            # malloc's thresholds pinned in every process, not left to each one's history (the conv2d's 37 %)
            assert any("glibc malloc pinned" in note for note in result.performance.notes), result.performance.notes


@pytest.mark.alone  # its quiet-machine check: beside another test the run says "busy" and the check is vacuous
def test_slow_variant_is_slower_unless_the_machine_says_it_was_busy(tmp_path):
    problem = "l2_40_matmul_scale_residual"
    report = compare(
        _bed_file(problem, ("reference", "identical", "slow")), config_dir=BED / problem, output_dir=tmp_path
    )
    verdicts = _verdicts(report)
    message = report.stability["message"]
    # the run's own reports of noise: the identical copy came out different ("noise this run did not model": a
    # relu bed run on the quiet 2-core VM left a 4.7x slower variant UNSTABLE behind that floor)
    reported = ("busy", "processes disagree", "did not model")
    # or the candidate's own: a process of it or of the baseline stalled on its own (CPU time slices)
    stalled = "stalled on its own" in (next(e for e in report.ranking if e.kernel_id == "slow").verdict_reason or "")
    if not (message.startswith("UNSTABLE") or stalled or any(why in message for why in reported)):
        assert verdicts["slow"] == "SLOWER", (report.ranking, message)
    assert verdicts["slow"] != "FASTER" and verdicts["identical"] in ("SAME", "UNSTABLE")
