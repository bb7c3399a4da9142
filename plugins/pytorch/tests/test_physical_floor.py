"""The physical floor: a timed process faster than its outputs can be written on this device measured no work.

The referee (the baseline's first process, trusted code) times a fill of the outputs' bytes with the clock that times
the kernels; the parent rejects any candidate process whose median launch is under a quarter of that
(:func:`magpie_core.pipelines.blocked.reject_below_floor`). It is the second line behind the spot checks: a result cache
whose spot checks are switched off (here by the test, in the parent; a replayed CUDA graph has none) is still
REJECTED by it, while the honest kernels beside it keep their verdicts. Real compares, real worker processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from magpie_core.pipelines import blocked
from magpie_core.pipelines.blocked import BASELINE_COPY, FLOOR_MARGIN, BlockedTiming, reject_below_floor
from magpie_core.pipelines.compare import compare
from magpie_core.pipelines.kernel_files import load_kernel_file, prepare_kernel_file

REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    return [torch.randn(1024, 2048)]  # 8 MiB out: a fill takes ~100s of us, a dict lookup ~1 us

def get_init_inputs():
    return []
"""
HONEST = REFERENCE.replace("class Model(", "class ModelNew(")
CACHE = """
import torch
import torch.nn as nn

_SEEN = {}

class ModelNew(nn.Module):  # the same tensor objects come back every batch (fresh values, same storage)
    def forward(self, x):
        if id(x) not in _SEEN:
            _SEEN[id(x)] = (x, torch.softmax(x, dim=1))
        return _SEEN[id(x)][1]
"""


def _timing(samples: dict[tuple[int, int], list[float]], failed: dict[int, str] | None = None) -> BlockedTiming:
    blocks = {key: [1.0] for key in samples if key[0] not in (failed or {})}
    return BlockedTiming(baseline=0, samples=samples, blocks=blocks, failed=dict(failed or {}))


def _rejected(timing: BlockedTiming, floor_us: float | None) -> dict[int, str]:
    before = dict(timing.failed)
    reject_below_floor(timing, floor_us)
    return {i: why for i, why in timing.failed.items() if i not in before}


def test_a_process_under_the_floor_is_rejected_and_named() -> None:
    samples = {(0, 0): [100.0] * 5, (0, 1): [101.0] * 5, (1, 0): [90.0] * 5, (1, 1): [0.5, 0.4, 0.6]}
    caught = _rejected(_timing(samples), floor_us=20.0)
    assert list(caught) == [1]
    assert caught[1].startswith("REJECTED (integrity: 0.5 us a launch") and f"1/{FLOOR_MARGIN:g}" in caught[1]
    timing = _timing(samples)
    reject_below_floor(timing, 20.0)
    assert not timing.processes(1), "its blocks leave the pooled spread, as a failure's do"
    assert _rejected(_timing(samples), floor_us=None) == {} and _rejected(_timing(samples), floor_us=0.0) == {}


def test_a_floor_the_trusted_code_beats_is_not_used() -> None:
    """The reference writes its outputs too: if the baseline (or its copy) is faster than the fill, the fill was
    slowed down (a busy moment) and the floor would be too high; none is used."""
    for trusted in (0, BASELINE_COPY):
        timing = _timing({(0, 0): [100.0] * 3, (trusted, 1): [15.0] * 3, (2, 0): [0.1] * 3})
        assert _rejected(timing, floor_us=20.0) == {}


def test_candidates_that_failed_already_keep_their_first_reason() -> None:
    timing = _timing({(0, 0): [100.0] * 3, (1, 0): [0.1] * 3}, failed={1: "REJECTED (integrity: a spot check)"})
    assert _rejected(timing, floor_us=20.0) == {} and timing.failed[1] == "REJECTED (integrity: a spot check)"


@pytest.fixture
def problem(tmp_path: Path) -> Path:
    for name, text in (("ref.py", REFERENCE), ("honest.py", HONEST), ("cache.py", CACHE)):
        (tmp_path / name).write_text(text)
    (tmp_path / "compare.yaml").write_text(
        "kernelbench:\n  reference: ref.py\n  solutions: [honest.py, cache.py]\n"
        "performance:\n  budget_seconds: 1\n  copy_memory_mib: 64\n  processes: 2\n"
    )
    return tmp_path


def test_without_spot_checks_the_floor_alone_rejects_a_result_cache(
    problem: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocked, "_spot_due", lambda key, result: False)  # in this (the parent's) process only
    file = prepare_kernel_file(load_kernel_file(problem / "compare.yaml"), problem, problem / "compare.yaml")
    report = compare(file, config_dir=problem, output_dir=problem / "out")
    rows = {r.kernel_id: r for r in report.results.kernel_results}
    floor_note = [n for n in rows["ref"].performance.notes if "to write the outputs here" in n]
    assert floor_note, rows["ref"].performance.notes
    cache = rows["cache"].correctness
    assert cache.status.value == "failed" and "it takes here to write its outputs" in (cache.message or ""), cache
    assert rows["honest"].correctness.status.value == "passed", rows["honest"].correctness
    verdicts = {e.kernel_id: e.verdict for e in report.ranking}
    assert verdicts.get("cache") in (None, "REJECTED") and verdicts.get("honest") != "FASTER", verdicts
