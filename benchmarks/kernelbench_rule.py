"""KernelBench's own correctness rule and timing, written for magpie's cross-check (issue 29).

For every problem x solution of a ``magpie kernelbench run`` layout (``PROBLEMS/<name>.py``,
``SOLUTIONS/<name>/*.py``) this runs what KernelBench's ``src/eval.py`` does (facts read from KernelBench at
``91bfc2cd`` -- the v0 leaderboard's version -- and at HEAD; the code is ours) and writes one JSONL row
``{problem, solution, compiled, correct, max_abs_diff, ref_ms, sol_ms, speedup, error, ...}``.

The rule (KernelBench v0, ``eval_kernel_against_ref`` + ``run_and_check_correctness``):

- ``set_seed(s)`` is ``torch.manual_seed(s)`` and ``torch.cuda.manual_seed(s)``; the base seed is 42;
- ``set_seed(42)``, ``get_init_inputs()``, tensors moved to the GPU; ``Model`` built under ``no_grad`` right after
  ``set_seed(42)``; the solution's file imported (its ``load_inline`` builds here: a failure is "not compiled");
  ``ModelNew`` built the same way (an error there: compiled, not correct). Neither model is put in eval mode;
- 5 trials; their seeds are ``torch.randint(0, 2**32 - 1, (1,))`` drawn one by one after ``torch.manual_seed(42)``;
  per trial, under ``no_grad``: ``set_seed(seed)``, ``get_inputs()`` moved to the GPU, ``set_seed(seed)`` then
  ``Model.cuda()``, ``set_seed(seed)`` then ``ModelNew.cuda()``, both run; a shape mismatch or an exception fails
  at once, otherwise ``torch.allclose(out, out_new, atol, rtol)``; correct when every trial passes;
- tolerance: ``v0`` (the leaderboard): atol = rtol = 1e-2; ``head``: KernelBench HEAD's per-dtype table
  (fp32 1e-4, fp16/bf16 1e-2);
- timing, for correct solutions: ``set_seed(42)``, ``get_inputs()`` moved to the GPU, 3 warm-up calls each followed
  by a synchronize, then 100 calls each between two CUDA events and a synchronize; the runtime is the mean in ms.
  The solution runs with autograd on (as ``eval_kernel_against_ref`` times it); the reference is timed as
  ``scripts/generate_baseline_time.py`` does, under ``no_grad``, in the same process here (KernelBench read it
  from a baseline file measured earlier). ``speedup = ref_ms / sol_ms``.

Each solution runs in processes of its own with its own ``TORCH_EXTENSIONS_DIR`` (solutions reuse extension names)
and a timeout, so a crash or a hang fails that solution alone. The builds run first, ``--jobs`` at a time (they
take CPU only); the checks and timings then run one at a time. The JSONL is appended as rows finish; a second
run skips the rows already there.

    python benchmarks/kernelbench_rule.py benchmarks/kernelbench_leaderboard/problems \\
        --solutions benchmarks/kernelbench_leaderboard/solutions --out rule.jsonl --tolerance v0
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SEED = 42
#: KernelBench's tolerance tables: v0 (the Dec 2024 leaderboard) and HEAD's get_tolerance_for_precision
TOLERANCES = {
    "v0": {"float32": 1e-2, "float16": 1e-2, "bfloat16": 1e-2},
    "head": {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2},
}
NO_GPU = "no GPU: KernelBench's eval needs CUDA (torch.cuda.is_available() is False)"
_ROW_MARK = "kernelbench-rule-row: "


# --- the parent: which pairs, their processes, the JSONL ---------------------------------------------------------


def pairs(problems_dir: Path, solutions_dir: Path) -> list[tuple[str, Path, Path]]:
    """(problem name, reference file, solution file) for every problem with solutions, sorted."""
    found = []
    for reference in sorted(problems_dir.glob("*.py")):
        for solution in sorted((solutions_dir / reference.stem).glob("*.py")):
            found.append((reference.stem, reference, solution))
    return found


def done(out: Path) -> set[tuple[str, str]]:
    if not out.is_file():
        return set()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(r["problem"], r["solution"]) for r in rows}


def extensions_dir(root: Path, problem: str, solution: Path) -> Path:
    return root / problem / solution.stem


def child(args: list[str], ext_dir: Path, timeout: float) -> tuple[int | None, str]:
    """Run this file as a worker; (exit status or None on timeout, combined output)."""
    ext_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(ext_dir)}
    try:
        done_ = subprocess.run(
            [sys.executable, __file__, *args], env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        parts = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in (e.stdout, e.stderr) if p]
        return None, "".join(parts)
    return done_.returncode, done_.stdout + done_.stderr


def last_row(output: str) -> dict[str, Any] | None:
    for line in reversed(output.splitlines()):
        if line.startswith(_ROW_MARK):
            return json.loads(line[len(_ROW_MARK) :])
    return None


def tail(output: str, lines: int = 6) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build_all(todo: list[tuple[str, Path, Path]], ext_root: Path, jobs: int, timeout: float) -> dict[Path, str]:
    """Import every solution once in its own process (its extensions build into its own folder), ``jobs`` at
    a time; the solutions whose build failed, with why (the check then records them as not compiled)."""
    failed: dict[Path, str] = {}

    def one(item: tuple[str, Path, Path]) -> None:
        problem, _, solution = item
        start = time.monotonic()
        status, output = child(
            ["--worker", "build", str(solution)], extensions_dir(ext_root, problem, solution), timeout
        )
        row = last_row(output)
        if status is None:
            failed[solution] = f"build timed out after {timeout:.0f} s"
        elif row is None or row.get("error"):
            failed[solution] = (row or {}).get("error") or f"build exited {status}: {tail(output)}"
        outcome = "failed" if solution in failed else "ok"
        log(f"build {problem}/{solution.name}: {outcome} {time.monotonic() - start:.0f} s")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, todo))
    return failed


def evaluate_all(
    todo: list[tuple[str, Path, Path]], out: Path, ext_root: Path, failed: dict[Path, str], opts: argparse.Namespace
) -> None:
    for problem, reference, solution in todo:
        base = {"problem": problem, "solution": str(solution), "tolerance": opts.tolerance}
        if solution in failed:
            row = {"compiled": False, "correct": False, "error": failed[solution]}
        else:
            args = ["--worker", "eval", str(solution), "--reference", str(reference), "--tolerance", opts.tolerance]
            args += ["--trials", str(opts.trials), "--perf-trials", str(opts.perf_trials)]
            status, output = child(args, extensions_dir(ext_root, problem, solution), opts.timeout)
            row = last_row(output) or {
                "compiled": True,
                "correct": False,
                "error": f"timed out after {opts.timeout:.0f} s"
                if status is None
                else f"worker exited {status} before a verdict: {tail(output)}",
            }
        row = {**dict.fromkeys(("max_abs_diff", "ref_ms", "sol_ms", "speedup", "error")), **base, **row}
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        log(
            f"{problem}/{solution.name}: compiled={row['compiled']} correct={row['correct']} "
            f"speedup={row['speedup']} {('error: ' + str(row['error']).splitlines()[0][:160]) if row['error'] else ''}"
        )


# --- the workers: one solution, in its own process --------------------------------------------------------------


def set_seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)


def load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def on_gpu(values: list[Any], device: Any) -> list[Any]:
    import torch

    return [v.cuda(device=device) if isinstance(v, torch.Tensor) else v for v in values]


def tolerance(preset: str, dtype: Any) -> float:
    table = TOLERANCES[preset]
    return table.get(str(dtype).removeprefix("torch."), table["float32"])


def mean_ms(fn: Any, inputs: list[Any], device: Any, warmup: int = 3, trials: int = 100) -> float:
    import torch

    for _ in range(warmup):
        fn(*inputs)
        torch.cuda.synchronize(device=device)
    times = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize(device=device)
        times.append(start.elapsed_time(end))
    return sum(times) / len(times)


def worker_build(solution: Path) -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {"compiled": False, "error": NO_GPU}
    try:
        load(solution, "kernelbench_solution")
    except Exception as e:
        return {"compiled": False, "error": f"{type(e).__name__}: {str(e)[-2000:]}"}
    return {"compiled": True, "error": None}


def worker_eval(solution: Path, reference: Path, preset: str, trials: int, perf_trials: int) -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {"compiled": False, "correct": False, "error": NO_GPU}
    device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.set_device(device)
    ref = load(reference, "kernelbench_reference")
    set_seed(SEED)
    init_inputs = on_gpu(list(ref.get_init_inputs()), device)
    with torch.no_grad():
        set_seed(SEED)
        model = ref.Model(*init_inputs)
    try:
        sol = load(solution, "kernelbench_solution")
        torch.cuda.synchronize(device=device)
    except Exception as e:
        return {"compiled": False, "correct": False, "error": f"{type(e).__name__}: {str(e)[-2000:]}"}
    try:
        with torch.no_grad():
            set_seed(SEED)
            model_new = sol.ModelNew(*init_inputs)
            torch.cuda.synchronize(device=device)
    except Exception as e:
        return {"compiled": True, "correct": False, "error": f"building ModelNew: {type(e).__name__}: {e}"}

    torch.manual_seed(SEED)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(trials)]
    worst, passed = 0.0, 0
    passed_at = dict.fromkeys(TOLERANCES, 0)  # the other table's verdict too, for the record
    with torch.no_grad():
        for trial, seed in enumerate(seeds):
            set_seed(seed)
            inputs = on_gpu(list(ref.get_inputs()), device)
            set_seed(seed)
            model = model.cuda(device=device)
            set_seed(seed)
            model_new = model_new.cuda(device=device)
            out = model(*inputs)
            torch.cuda.synchronize(device=device)
            try:
                out_new = model_new(*inputs)
                torch.cuda.synchronize(device=device)
            except Exception as e:
                return {"compiled": True, "correct": False, "error": f"trial {trial}: {type(e).__name__}: {e}"}
            if out.shape != out_new.shape:
                return {
                    "compiled": True,
                    "correct": False,
                    "error": f"trial {trial}: output shape {tuple(out_new.shape)}, expected {tuple(out.shape)}",
                }
            diff = (out.double() - out_new.double()).abs().max().item() if out.numel() else 0.0
            worst = max(worst, diff) if diff == diff else float("nan")
            for name in TOLERANCES:
                tol = tolerance(name, out.dtype)
                passed_at[name] += bool(torch.allclose(out, out_new, atol=tol, rtol=tol))
            passed = passed_at[preset]
    row: dict[str, Any] = {
        "compiled": True,
        "correct": passed == trials,
        "trials_passed": passed,
        "correct_at": {name: count == trials for name, count in passed_at.items()},
        "max_abs_diff": worst,
        "error": None if passed == trials else f"output mismatch in {trials - passed} of {trials} trials",
        "device_name": torch.cuda.get_device_name(device),
    }
    if not row["correct"]:
        return row
    set_seed(SEED)
    inputs = on_gpu(list(ref.get_inputs()), device)
    model_new = model_new.cuda(device=device)
    torch.cuda.synchronize(device=device)
    row["sol_ms"] = mean_ms(model_new, inputs, device, trials=perf_trials)
    with torch.no_grad():
        row["ref_ms"] = mean_ms(model, inputs, device, trials=perf_trials)
    row["speedup"] = row["ref_ms"] / row["sol_ms"] if row["sol_ms"] > 0 else None
    return row


def worker(opts: argparse.Namespace) -> int:
    try:
        if opts.worker == "build":
            row = worker_build(Path(opts.target))
        else:
            row = worker_eval(Path(opts.target), opts.reference, opts.tolerance, opts.trials, opts.perf_trials)
    except Exception as e:
        traceback.print_exc()
        row = {"compiled": True, "correct": False, "error": f"{type(e).__name__}: {e}"}
    print(_ROW_MARK + json.dumps(row), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path, help="the problems folder (a worker: its solution file)")
    parser.add_argument("--solutions", type=Path, help="SOLUTIONS/<problem>/*.py")
    parser.add_argument("--out", type=Path, default=Path("kernelbench_rule.jsonl"), help="appended JSONL; resumable")
    parser.add_argument("--tolerance", choices=sorted(TOLERANCES), default="v0")
    parser.add_argument("--trials", type=int, default=5, help="correctness trials (KernelBench: 5)")
    parser.add_argument("--perf-trials", type=int, default=100, help="timed calls (KernelBench: 100)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="builds at once")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per check of one solution")
    parser.add_argument("--build-timeout", type=float, default=400.0, help="seconds per build of one solution")
    parser.add_argument("--extensions", type=Path, default=Path("kernelbench_rule_extensions"), help="build root")
    parser.add_argument("--worker", choices=("build", "eval"), help=argparse.SUPPRESS)
    parser.add_argument("--reference", type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.worker:
        return worker(opts)
    if opts.solutions is None:
        parser.error("--solutions is required")
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    skip = done(opts.out)
    todo = [p for p in pairs(opts.target, opts.solutions) if (p[0], str(p[2])) not in skip]
    log(f"{len(todo)} solutions to check ({len(skip)} already in {opts.out}); tolerance {opts.tolerance}")
    ext_root = opts.extensions.resolve()
    failed = build_all(todo, ext_root, opts.jobs, opts.build_timeout)
    evaluate_all(todo, opts.out, ext_root, failed, opts)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
