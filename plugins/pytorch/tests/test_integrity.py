"""The pieces the trusted side rests on (magpie_kernels_pytorch.integrity), each on its own.

The whole path — a referee process, spot checks of timed launches, frozen workers — runs end to end against the
reward-hack catalogue in test_reward_hacks.py; these tests pin down what it relies on: that the referee rebuilds
exactly the input values a timed launch saw, that the drawn elements compare what they should, and that a patched
clock or a lazy output is seen.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
import torch
from magpie_kernels_pytorch import harness, integrity, timers
from magpie_kernels_pytorch.integrity import (
    FreshInputs,
    IntegrityError,
    Tamper,
    load_handover,
    plain_problems,
    same,
    sampled,
    save_handover,
)


@pytest.mark.parametrize(("copies", "batch", "count"), [(8, 3, 5), (9, 9, 2), (1, 4, 3), (16, 1, 20)])
def test_the_referee_rebuilds_exactly_what_every_timed_launch_saw(copies: int, batch: int, count: int) -> None:
    """As HarnessSession.sample drives it: for every timed launch of a slot, the values its copy held when it ran
    (and still holds when the batch is captured, at its end) are what FreshInputs.rebuilt makes of the refresh sent
    before its batch, alone; a launch the refresh did not cover is refused."""
    torch.manual_seed(0)
    inputs = [torch.randn(6, 97), torch.arange(12), 3]
    fresh, seen = FreshInputs(inputs, copies), {}
    for slot in (11, 12345):
        first = slot % copies
        for k in range(count):
            lo, hi = 1 + k * batch, 1 + (k + 1) * batch
            refresh = fresh.refresh(secrets.randbits(62), first, lo, hi)
            for launch in range(lo, hi):
                seen[launch] = [
                    v.clone() if isinstance(v, torch.Tensor) else v for v in fresh.sets[(first + launch) % copies]
                ]
            for launch in range(lo, hi):
                assert same(fresh.rebuilt(refresh, launch), seen[launch]), (slot, launch)
            for outside in (lo - 1, hi):
                with pytest.raises(IntegrityError, match="did not cover"):
                    fresh.rebuilt(refresh, outside)
        total = 1 + count * batch
        changed = ~torch.isclose(seen[total - 1][0], inputs[0])
        assert 0 < int(changed.sum()) <= -(-inputs[0].numel() // integrity.CHUNK_DIVISOR)  # a chunk, not everything
        assert torch.equal(seen[total - 1][1], inputs[1])  # integers keep their values


def test_structured_inputs_keep_their_values() -> None:
    symmetric = torch.randn(8, 8)
    symmetric = symmetric + symmetric.T
    probabilities = torch.softmax(torch.randn(4, 10), dim=1)
    fresh = FreshInputs([symmetric, probabilities], 4)
    assert not fresh.active


def test_drawn_elements_compare_shape_and_values_and_catch_a_stale_chunk() -> None:
    out = torch.randn(300, 300)
    stale = out.clone()
    stale.view(-1)[5000 : 5000 + out.numel() // 61] *= 0.9
    assert same(sampled(out, 7), sampled(out.clone(), 7))
    assert not same(sampled(out, 7), sampled(stale, 7))  # 1,024 draws land in the stale 1/61
    assert not same(sampled(out, 7), sampled(out.reshape(900, 100), 7))  # the shape is compared too
    small = torch.randn(10)
    assert torch.equal(sampled(small, 3)[1], small)  # a small tensor is compared whole


class Lazy(torch.Tensor):
    """A tensor subclass, as a lazy output would be (module level: a handover file must be able to name it)."""


def test_only_plain_dense_tensors_are_outputs(tmp_path: Path) -> None:
    lazy = torch.randn(3).as_subclass(Lazy)
    assert plain_problems(lazy) and plain_problems([torch.randn(2), lazy])
    assert plain_problems(torch.randn(4, 4).to_sparse())
    assert not plain_problems((torch.randn(2), {"a": torch.randn(1)}))
    file = tmp_path / "handover.pt"
    torch.save({"outputs": lazy, "inputs_after": []}, file)
    with pytest.raises(IntegrityError, match="not plain tensors"):
        load_handover(str(file))
    written = save_handover(str(tmp_path), "check", [torch.randn(2)], [torch.randn(2)])
    assert set(load_handover(written)) == {"outputs", "inputs_after", "reused"}
    assert not Path(written).exists()  # the referee removes what it read


def test_a_patched_clock_is_seen_and_changes_nothing_in_magpies_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    tamper = Tamper()
    assert tamper.changes() == []
    real = time.perf_counter_ns
    monkeypatch.setattr(time, "perf_counter_ns", lambda: real() // 3)
    assert "time.perf_counter_ns" in tamper.changes()
    assert timers._now is real  # bound when magpie loaded: the patch does not reach the clock

    def fake_code() -> None:
        pass

    monkeypatch.setattr(timers.CpuClock.time_batch, "__code__", fake_code.__code__, raising=True)
    assert "CpuClock.time_batch" in tamper.changes()  # same function object, other code
    # the harness's own functions, which it hands over (it imports integrity, not the other way round)
    watching = Tamper(harness._watched())
    monkeypatch.setattr(harness.HarnessSession, "sample", lambda self: None)
    assert watching.changes() == ["HarnessSession.sample"]


@pytest.mark.parametrize("shape", [(1024, 1024), (256, 256), (64, 3, 30, 30), (7, 100), (5, 40), (3,)])
def test_fresh_values_reach_every_row_and_column_and_no_whole_row(shape: tuple[int, ...]) -> None:
    """A contiguous chunk changed a few rows of a matrix, and a kernel that kept its last inputs and output updated
    the product from those rows alone: right, and FASTER 3.39x on a 1024x1024 matmul (``matmul_incremental.py``). The
    comb changes ~1/61 of the elements in every row of the last dimension (61 or longer) and, across rows, every
    column; it never changes a whole row (a row scaled as a whole leaves a normalisation's output unchanged)."""
    x = torch.randn(shape)
    fresh = FreshInputs([x], 3)
    for seed in (1, 12345, 2**40 + 7):
        fresh.refresh(seed, 0, 0, 3)
        changed = fresh.sets[1][0] != x
        rows = changed.reshape(-1, shape[-1])
        assert 0 < int(changed.sum()) <= max(1, x.numel() // 61) + 16
        assert not bool(rows.all(dim=1).any()) or shape[-1] == 1
        if shape[-1] >= 61:
            assert bool(rows.any(dim=1).all()), "a row the comb missed"
        if len(shape) == 2 and shape[-1] >= 61 and shape[0] >= 61:
            assert bool(rows.any(dim=0).all()), "a column the comb missed"


OUTER = """
import torch
import torch.nn as nn


class {name}(nn.Module):
    def forward(self, a, b):
        return {body}


def get_inputs():
    return [torch.randn(2048), torch.randn(2048)]


def get_init_inputs():
    return []
"""


def test_a_batch_holds_no_more_outputs_than_the_copy_memory(tmp_path: Path) -> None:
    """Every output of a batch is held until the batch is captured: an outer product's 16 MiB output and 40 MiB for
    the copies allow 2 launches a batch (the copies' memory again, at most), and the verdicts stand."""
    from magpie_core.pipelines.compare import compare
    from magpie_core.pipelines.kernel_files import load_kernel_file, prepare_kernel_file

    (tmp_path / "ref.py").write_text(OUTER.format(name="Model", body="torch.outer(a, b)"))
    (tmp_path / "new.py").write_text(OUTER.format(name="ModelNew", body="a[:, None] * b[None, :]"))
    config = tmp_path / "compare.yaml"
    config.write_text(
        "kernelbench:\n  reference: ref.py\n  solutions: [new.py]\n"
        "performance:\n  budget_seconds: 1\n  copy_memory_mib: 40\n  processes: 2\n"
    )
    file = prepare_kernel_file(load_kernel_file(config), tmp_path, config)
    report = compare(file, config_dir=tmp_path, output_dir=tmp_path / "out")
    for row in report.results.kernel_results:
        assert row.correctness.status.value == "passed", row.correctness
        assert 1 <= (row.performance.batch_size or 0) <= 2, (row.kernel_id, row.performance.batch_size)


KEPT_OUTPUT = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, a, b):
        if self.out is None:
            self.out = torch.empty(a.shape[0], b.shape[0])
        return torch.mul(a[:, None], b[None, :], out=self.out)  # right when returned; the next call writes over it
"""


def test_an_output_buffer_kept_across_calls_fails_the_check_and_says_why(tmp_path: Path) -> None:
    """A solution that returns one buffer from every call (as a CUDA graph's static output is) has every earlier
    output overwritten by the time the referee reads them: it fails, and the message says why (it once read as a
    plain mismatch on trial 0, each output having been right when returned)."""
    from magpie_core.pipelines.compare import compare
    from magpie_core.pipelines.kernel_files import load_kernel_file, prepare_kernel_file

    (tmp_path / "ref.py").write_text(OUTER.format(name="Model", body="torch.outer(a, b)"))
    (tmp_path / "kept.py").write_text(KEPT_OUTPUT)
    config = tmp_path / "compare.yaml"
    config.write_text("kernelbench:\n  reference: ref.py\n  solutions: [kept.py]\n")
    file = prepare_kernel_file(load_kernel_file(config), tmp_path, config)
    report = compare(file, config_dir=tmp_path, output_dir=tmp_path / "out", measure_performance=False)
    row = next(r for r in report.results.kernel_results if r.kernel_id == "kept")
    assert row.correctness.status.value == "failed", row.correctness
    assert "REJECTED" not in row.correctness.message  # honest arithmetic, a broken contract: failed, not a cheat
    assert "share memory: a later call wrote over an earlier call's output" in row.correctness.message
