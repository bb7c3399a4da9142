"""Check the KernelBench test bed without running magpie: for every problem folder, the identical, alternative
and slow variants match the reference (torch.allclose, atol=rtol=1e-4; integer outputs exactly), the wrong
variant does not, every ModelNew gets the reference's weights under the same seed, and the slow variant is at
least 3x slower than the reference (one thread, interleaved timing loops measured in thread CPU time, median
over rounds).

    python benchmarks/kernelbench_bed/verify.py [PROBLEM ...]

Prints a table; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

BED = Path(__file__).resolve().parent
VARIANTS = ("identical", "alternative", "slow", "wrong")
ATOL = RTOL = 1e-4
TRIALS = 2  # input sets, as in compare.yaml's correctness.trials
MIN_SLOWDOWN = 3.0
ROUNDS = 9  # timing rounds; each times a loop of reference calls and a loop of slow calls
LOOP_SECONDS = 0.005  # target length of one reference loop


def seed_all(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def load(path: Path, tag: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kernelbench_bed_{tag}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(cls: type[torch.nn.Module], get_init_inputs: Callable[[], list[Any]]) -> torch.nn.Module:
    seed_all(0)  # the same seed before every construction, as magpie does
    return cls(*get_init_inputs()).eval()


def outputs_match(expected: Any, got: Any) -> bool:
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(outputs_match(e, g) for e, g in zip(expected, got, strict=True))
        )
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.dtype != expected.dtype:
        return False
    if expected.is_floating_point():
        return torch.allclose(got, expected, atol=ATOL, rtol=RTOL)
    return torch.equal(got, expected)


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    pa, pb = list(a.parameters()), list(b.parameters())
    return len(pa) == len(pb) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(pa, pb, strict=True))


def per_call_seconds(fn: Callable[[], Any], calls: int) -> float:
    """CPU time of this thread per call: with torch.set_num_threads(1) all the work runs in this thread, and time
    the scheduler gives other processes on a shared machine is not counted."""
    start = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - start) / calls / 1e9


def time_against(ref: Callable[[], Any], others: Sequence[Callable[[], Any]]) -> tuple[float, list[float]]:
    """Median per-call time of ``ref`` and median over rounds of each other's time / ref's time (paired per round,
    so load that changes between rounds cancels)."""
    for fn in (ref, *others):
        per_call_seconds(fn, 3)  # warm-up
    calls = max(3, int(LOOP_SECONDS / max(per_call_seconds(ref, 3), 1e-7)))
    ref_times: list[float] = []
    ratios: list[list[float]] = [[] for _ in others]
    for _ in range(ROUNDS):
        t_ref = per_call_seconds(ref, calls)
        ref_times.append(t_ref)
        for i, fn in enumerate(others):
            ratios[i].append(per_call_seconds(fn, calls) / t_ref)
    return statistics.median(ref_times), [statistics.median(r) for r in ratios]


def check_problem(folder: Path) -> tuple[dict[str, Any], list[str]]:
    name = folder.name
    failures: list[str] = []
    ref_mod = load(folder / "reference.py", f"{name}_reference")
    reference = build(ref_mod.Model, ref_mod.get_init_inputs)
    models = {v: build(load(folder / f"{v}.py", f"{name}_{v}").ModelNew, ref_mod.get_init_inputs) for v in VARIANTS}
    row: dict[str, Any] = {"problem": name}
    for variant, model in models.items():
        if not same_weights(reference, model):
            failures.append(f"{name}/{variant}: weights differ from the reference's under the same seed")
    input_sets = []
    for trial in range(TRIALS):
        seed_all(trial)  # magpie: correctness.seed (0) + trial
        input_sets.append(ref_mod.get_inputs())
    with torch.inference_mode():
        for variant, model in models.items():
            matches = []
            for inputs in input_sets:
                expected = reference(*inputs)
                try:
                    matches.append(outputs_match(expected, model(*inputs)))
                except Exception as exc:  # a variant that raises fails, the wrong one included (it must run)
                    failures.append(f"{name}/{variant}: raised {type(exc).__name__}: {exc}")
                    matches.append(False)
            if variant == "wrong":
                ok = not any(matches)
                row[variant] = "rejected" if ok else "NOT rejected"
                if not ok:
                    failures.append(f"{name}/wrong: matched the reference in {sum(matches)} of {TRIALS} trials")
            else:
                ok = all(matches)
                row[variant] = "match" if ok else "MISMATCH"
                if not ok:
                    failures.append(f"{name}/{variant}: does not match the reference (atol=rtol={ATOL:g})")
        inputs = input_sets[0]
        ref_s, (alt_ratio, slow_ratio) = time_against(
            lambda: reference(*inputs),
            [lambda: models["alternative"](*inputs), lambda: models["slow"](*inputs)],
        )
    row["ref_ms"] = ref_s * 1e3
    row["alt_x"] = alt_ratio
    row["slow_x"] = slow_ratio
    if slow_ratio < MIN_SLOWDOWN:
        failures.append(f"{name}/slow: only {slow_ratio:.2f}x the reference's time (need >= {MIN_SLOWDOWN:g}x)")
    return row, failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", nargs="*", help="problem folders (default: all)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    folders = [BED / p for p in args.problems] or sorted(p.parent for p in BED.glob("*/reference.py"))
    header = (
        f"{'problem':32} {'identical':9} {'alternative':11} {'slow':8} {'wrong':12} "
        f"{'ref ms':>7} {'alt/ref':>7} {'slow/ref':>8}"
    )
    print(header)
    print("-" * len(header))
    failures: list[str] = []
    start = time.perf_counter()
    for folder in folders:
        row, problem_failures = check_problem(folder)
        failures += problem_failures
        print(
            f"{row['problem']:32} {row['identical']:9} {row['alternative']:11} {row['slow']:8} {row['wrong']:12} "
            f"{row['ref_ms']:7.3f} {row['alt_x']:6.2f}x {row['slow_x']:7.2f}x",
            flush=True,
        )
    print(
        f"\n{len(folders)} problems in {time.perf_counter() - start:.1f} s (1 thread; thread CPU time per call; "
        f"x = time relative to the reference, median over {ROUNDS} paired rounds)"
    )
    for failure in failures:
        print(f"FAIL {failure}")
    print("OK" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
