"""``magpie kernelbench run PROBLEMS_DIR --solutions DIR``: every problem x solution, KernelBench's outcome fields
next to magpie's interval and verdict, and fast_p with and without the verdicts.

Problems: every ``PROBLEMS_DIR/*.py`` that is a KernelBench reference (``class Model`` + ``get_inputs``), and
every ``PROBLEMS_DIR/<name>/reference.py``. Solutions of problem ``<name>``: ``DIR/<name>/*.py`` and ``DIR/<name>.py``.
One ``compare`` per problem (the reference and its pending solutions); a row per solution is appended to the
JSONL results file as each problem finishes. A second run reuses a row only when nothing it rests on changed: its
``fingerprint`` is a hash of the solution's and the reference's bytes and the run's settings (tolerance, mode,
trials, timing and correctness settings, with or without timing); an edited solution is run again, and its newer
row is the one that counts.

Problems are the items of an execution environment (``magpie -e ray kernelbench run``): one problem per GPU.
Ray gives each problem's task its own GPU (``CUDA_VISIBLE_DEVICES``); the local environment runs up to
``--workers`` problems at once in threads of this process, so the runner hands each problem a free GPU of
``--gpus`` itself and the problem's kernels run with only that GPU visible.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import queue
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from magpie_kernels_pytorch.kernelbench import KernelBenchBlock, is_reference

log = logging.getLogger("magpie.pytorch")

#: KernelBench's fast_p thresholds: correct and more than p times as fast as the reference
FAST_P = (0.0, 1.0, 1.5, 2.0)
#: what restricts a process to the GPUs it may use (NVIDIA, AMD)
VISIBLE_DEVICES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


@dataclass(frozen=True)
class Problem:
    """One problem and its pending solutions: an item an execution environment runs (picklable)."""

    name: str
    reference: Path
    #: as found under the solutions folder: the rows' ``solution`` (what a resumed run matches)
    solutions: tuple[Path, ...]
    #: the GPU(s) its kernels may see, when the runner assigns them (local); None: as the process has them
    devices: str | None = None

    def block(self) -> KernelBenchBlock:
        # absolute: the compare runs from the reference's folder, not from where the command was given
        return KernelBenchBlock(
            reference=str(self.reference.resolve()), solutions=[str(s.resolve()) for s in self.solutions]
        )


#: runs one compare of the problem's reference and solutions; answers the compare report as JSON data
Compare = Callable[[Problem], dict[str, Any]]


def problems(problems_dir: Path) -> dict[str, Path]:
    """Problem name -> reference file."""
    found = {p.stem: p for p in sorted(problems_dir.glob("*.py")) if is_reference(p)}
    found |= {p.parent.name: p for p in sorted(problems_dir.glob("*/reference.py")) if is_reference(p)}
    return found


def solutions(solutions_dir: Path, name: str) -> list[Path]:
    return sorted((solutions_dir / name).glob("*.py")) + [p for p in [solutions_dir / f"{name}.py"] if p.is_file()]


def read_rows(results: Path) -> list[dict[str, Any]]:
    if not results.is_file():
        return []
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def latest_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (problem, solution): the latest (a solution edited since is run again and appended)."""
    return list({(r["problem"], r["solution"]): r for r in rows}.values())


def fingerprint(reference: Path, solution: Path, settings: dict[str, Any]) -> str:
    """What a row rests on: the reference's and the solution's bytes and the run's settings (and whose row it is:
    two files with the same bytes have a row each)."""
    digest = hashlib.sha256(json.dumps([str(solution), settings], sort_keys=True, default=str).encode())
    for file in (reference, solution):
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:32]


def pending(
    problems_dir: Path, solutions_dir: Path, results: Path, settings: dict[str, Any] | None = None
) -> list[Problem]:
    """Every problem with solutions that ``results`` has no row of with the same :func:`fingerprint`."""
    done = {r.get("fingerprint") for r in read_rows(results)}
    found = []
    for name, reference in problems(problems_dir).items():
        todo = tuple(s for s in solutions(solutions_dir, name) if fingerprint(reference, s, settings or {}) not in done)
        if todo:
            found.append(Problem(name, reference, todo))
    return found


def row(problem: str, solution: Path, kernel_id: str, report: dict[str, Any]) -> dict[str, Any]:
    """KernelBench's fields (compiled, correct, runtime, speedup) and magpie's interval and verdict."""
    result = next(r for r in report["results"]["kernel_results"] if r["kernel_id"] == kernel_id)
    ranked = {e["kernel_id"]: e for e in report["ranking"]}
    entry, baseline = ranked.get(kernel_id, {}), ranked.get(report["baseline_id"], {})
    build = result["compile"]
    built = build["status"] != "failed"
    # a failed build's message is the compiler's first error; the correctness stage then only says "compile failed"
    message = (result["correctness"].get("message") or "") if built else (build.get("message") or "compile failed")
    correct = result["correctness"]["status"] == "passed"
    why_untimed = next((u["reason"] for u in report.get("unranked", []) if u["kernel_id"] == kernel_id), None)
    if correct and not entry and why_untimed:  # correct but without a time: say why, not just "correct"
        message = f"{message}; not timed: {why_untimed}"
    return {
        "problem": problem,
        "solution": str(solution),
        # KernelBench's "compiled": the solution built (inline extensions) and its module loaded
        "compiled": built and not message.startswith("could not load the kernel"),
        "correct": correct,
        # seconds spent building its inline extensions (None: it builds none); never part of runtime_us
        "build_s": build.get("duration_s") if build["status"] in ("passed", "failed") else None,
        "runtime_us": entry.get("median_us"),
        "ref_runtime_us": baseline.get("median_us"),
        "speedup": entry.get("speedup"),
        "speedup_ci95": entry.get("speedup_ci95"),
        # caught faking its speed or correctness (docs/kernel-evaluation.md, threat model): never a speedup
        "verdict": "REJECTED" if "REJECTED (integrity" in message else entry.get("verdict"),
        # the device time is what is timed (launches hidden); a launch-bound kernel's calls take longer end to end
        "launch_bound": next(
            (n for n in result.get("performance", {}).get("notes", []) if n.startswith("launch-bound")), None
        ),
        "message": message,
        **_kernelbench_clock(result, report, entry),
    }


def _kernelbench_clock(result: dict[str, Any], report: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """KernelBench's measurement beside magpie's (``performance.call_trials``): mean single synchronized calls,
    launches included, and whether the two clocks point different ways (a launch-bound solution, mostly)."""
    base = next(r for r in report["results"]["kernel_results"] if r["kernel_id"] == report["baseline_id"])
    own, ref = (r.get("performance", {}).get("per_call_us") for r in (result, base))
    kb = ref / own if own and ref else None
    ours = entry.get("speedup")
    disagree = kb is not None and ours is not None and (kb > 1) != (ours > 1) and entry.get("verdict") != "SAME"
    return {"kb_runtime_us": own, "kb_ref_runtime_us": ref, "kb_speedup": kb, "clocks_disagree": disagree}


def run_problem(compare: Compare, problem: Problem) -> list[dict[str, Any]]:
    """The rows of one problem (runs where the environment put it: a thread here, a Ray task on some node)."""
    start = time.perf_counter()
    report = compare(problem)
    ids = [k["kernel_id"] for k in report["results"]["kernel_results"]][1:]  # the reference is first
    where = {
        "host": socket.gethostname(),
        "devices": problem.devices or os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES"),
        # where a problem's time goes (issue 45's pace): its whole compare, and the interleaved timing within it
        "problem_s": round(time.perf_counter() - start, 3),
        "problem_timing_s": (report.get("stability") or {}).get("elapsed_s"),
    }
    return [
        row(problem.name, solution, kernel_id, report) | where
        for solution, kernel_id in zip(problem.solutions, ids, strict=True)
    ]


def stamped(fn: Callable[[Problem], list[dict[str, Any]]], settings: dict[str, Any]) -> Callable[..., Any]:
    """``fn`` whose rows carry their :func:`fingerprint` (taken before the run: a file edited meanwhile is run
    again next time)."""

    def run_stamped(problem: Problem) -> list[dict[str, Any]]:
        prints = [fingerprint(problem.reference, s, settings) for s in problem.solutions]
        return [r | {"fingerprint": f} for r, f in zip(fn(problem), prints, strict=True)]

    return run_stamped


class DevicePool:
    """The GPUs of this machine that local problems take turns on: one problem per GPU at a time."""

    def __init__(self, devices: list[str]) -> None:
        self.free: queue.Queue[str] = queue.Queue()
        for device in devices:
            self.free.put(device)

    @contextmanager
    def take(self) -> Iterator[str]:
        device = self.free.get()
        try:
            yield device
        finally:
            self.free.put(device)

    def wrap(self, fn: Callable[[Problem], list[dict[str, Any]]]) -> Callable[[Problem], list[dict[str, Any]]]:
        def on_a_free_device(problem: Problem) -> list[dict[str, Any]]:
            with self.take() as device:
                return fn(replace(problem, devices=device))

        return on_a_free_device


def _once_ready(
    ready: Callable[[Problem], None], fn: Callable[[Problem], list[dict[str, Any]]]
) -> Callable[[Problem], list[dict[str, Any]]]:
    def when_ready(problem: Problem) -> list[dict[str, Any]]:
        ready(problem)
        return fn(problem)

    return when_ready


def local_devices(gpus: str | None) -> list[str]:
    """``--gpus``: a count (``4``: the first four visible GPUs) or a list of ids (``0,2,5``)."""
    if not gpus:
        return []
    if gpus.isdigit():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES")
        ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
        count = int(gpus)
        return ids[:count] if len(ids) >= count else [str(i) for i in range(count)]
    return [g.strip() for g in gpus.split(",") if g.strip()]


def run(
    problems_dir: Path,
    solutions_dir: Path,
    results: Path,
    compare: Compare,
    *,
    environment: str = "local",
    workers: int = 1,
    gpus: list[str] | None = None,
    gpus_per_problem: float = 1.0,
    options: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str, list[dict[str, Any]]], None] | None = None,
    ready: Callable[[Problem], None] | None = None,
) -> list[dict[str, Any]]:
    """Every pending problem x solution, each problem's rows appended to ``results`` as it finishes; every row of
    the set (the latest per solution), those not run now marked ``reused``.

    ``environment``: where problems run (``local``, ``ray``, ...), ``workers`` at a time; ``gpus``: the local
    GPUs problems take turns on (one problem per GPU; the local environment assigns none itself); ``settings``:
    what the rows' fingerprints hold besides the files; ``ready``: returns once a problem can run (its solutions
    built), called before the problem takes a GPU, so no GPU waits for a compiler while another problem is ready.
    """
    from magpie_core.plugins import get_plugin_manager

    todo, fresh = pending(problems_dir, solutions_dir, results, settings), set()
    if todo:
        env = get_plugin_manager().get("environment", environment)
        env = env.with_options(options) if options else env
        fn: Callable[[Problem], list[dict[str, Any]]] = stamped(functools.partial(run_problem, compare), settings or {})
        if gpus and environment == "local":
            # twice as many problems under way as GPUs when some wait for builds: those wait without a GPU, and
            # the GPUs go to problems that are ready
            fn, workers = DevicePool(gpus).wrap(fn), len(gpus) * (2 if ready is not None else 1)
        if ready is not None:
            fn = _once_ready(ready, fn)

        def finished(index: int, rows: Any) -> None:
            problem = todo[index]
            if isinstance(rows, BaseException):  # not recorded: a resumed run tries the problem again
                log.warning("problem %s did not run: %s: %s", problem.name, type(rows).__name__, rows)
                return
            with results.open("a") as out:
                for r in rows:
                    out.write(json.dumps(r) + "\n")
            fresh.update(r["fingerprint"] for r in rows)
            if progress is not None:
                progress(problem.name, rows)

        env.map(fn, todo, workers=workers, gpus_per_item=gpus_per_problem, on_result=finished)
    wanted = {(name, str(s)) for name in problems(problems_dir) for s in solutions(solutions_dir, name)}
    rows = [r for r in latest_rows(read_rows(results)) if (r["problem"], r["solution"]) in wanted]
    return [r | {"reused": r.get("fingerprint") not in fresh} for r in rows]


def fast_p(rows: Iterable[dict[str, Any]], verified: bool) -> dict[str, float]:
    """The share of rows that are correct and faster than p times the reference.

    ``verified``: a speedup counts only when magpie's 95% interval lies above p (and, above 1, the verdict is
    FASTER): a "win" inside the noise is not a win. KernelBench's own fast_p compares the point estimate.
    """
    rows = list(rows)
    shares = {}
    for p in FAST_P:
        wins = [r for r in rows if r["correct"] and _faster(r, p, verified)]
        shares[f"fast_{p:g}"] = len(wins) / len(rows) if rows else 0.0
    return shares


def _faster(r: dict[str, Any], p: float, verified: bool) -> bool:
    if p == 0:
        return True  # fast_0: correct at all
    if not verified:
        return r["speedup"] is not None and r["speedup"] > p
    ci = r.get("speedup_ci95")
    return r.get("verdict") == "FASTER" and ci is not None and ci[0] > p


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """fast_p over every row and per problem, plain and verified (the command's output and its report)."""
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_problem.setdefault(r["problem"], []).append(r)
    return {
        "rows": rows,
        "fast_p": fast_p(rows, False),
        "fast_p_verified": fast_p(rows, True),
        "fast_p_kernelbench_clock": fast_p([r | {"speedup": r.get("kb_speedup")} for r in rows], False),
        "per_problem": {
            name: {"solutions": len(own), "fast_p": fast_p(own, False), "fast_p_verified": fast_p(own, True)}
            for name, own in by_problem.items()
        },
    }
