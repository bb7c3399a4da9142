"""``magpie kernelbench run PROBLEMS_DIR --solutions DIR``: every problem x solution, KernelBench's outcome fields
next to magpie's interval and verdict, and fast_p with and without the verdicts.

Problems: every ``PROBLEMS_DIR/*.py`` that is a KernelBench reference (``class Model`` + ``get_inputs``), and
every ``PROBLEMS_DIR/<name>/reference.py``. Solutions of problem ``<name>``: ``DIR/<name>/*.py`` and ``DIR/<name>.py``.
One ``compare`` per problem (the reference and its pending solutions); a row per solution is appended to the
JSONL results file as each problem finishes, and a second run skips the rows already there (resumable).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from magpie_kernels_pytorch.kernelbench import KernelBenchBlock, is_reference

#: KernelBench's fast_p thresholds: correct and more than p times as fast as the reference
FAST_P = (0.0, 1.0, 1.5, 2.0)

#: runs one compare of a kernel file built from the block; answers the compare report as JSON data
Compare = Callable[[KernelBenchBlock, Path], dict[str, Any]]


def problems(problems_dir: Path) -> dict[str, Path]:
    """Problem name -> reference file."""
    found = {p.stem: p for p in sorted(problems_dir.glob("*.py")) if is_reference(p)}
    found |= {p.parent.name: p for p in sorted(problems_dir.glob("*/reference.py")) if is_reference(p)}
    return found


def solutions(solutions_dir: Path, name: str) -> list[Path]:
    return sorted((solutions_dir / name).glob("*.py")) + [p for p in [solutions_dir / f"{name}.py"] if p.is_file()]


def done_pairs(results: Path) -> set[tuple[str, str]]:
    if not results.is_file():
        return set()
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return {(row["problem"], row["solution"]) for row in rows}


def row(problem: str, solution: Path, kernel_id: str, report: dict[str, Any]) -> dict[str, Any]:
    """KernelBench's fields (compiled, correct, runtime, speedup) and magpie's interval and verdict."""
    result = next(r for r in report["results"]["kernel_results"] if r["kernel_id"] == kernel_id)
    ranked = {e["kernel_id"]: e for e in report["ranking"]}
    entry, baseline = ranked.get(kernel_id, {}), ranked.get(report["baseline_id"], {})
    message = result["correctness"].get("message") or ""
    return {
        "problem": problem,
        "solution": str(solution),
        # KernelBench's "compiled": the solution built and its module loaded
        "compiled": result["compile"]["status"] != "failed" and not message.startswith("could not load the kernel"),
        "correct": result["correctness"]["status"] == "passed",
        "runtime_us": entry.get("median_us"),
        "ref_runtime_us": baseline.get("median_us"),
        "speedup": entry.get("speedup"),
        "speedup_ci95": entry.get("speedup_ci95"),
        "verdict": entry.get("verdict"),
        "message": message,
    }


def run(problems_dir: Path, solutions_dir: Path, results: Path, compare: Compare) -> list[dict[str, Any]]:
    """Every pending problem x solution, each problem's rows appended to ``results`` as it finishes."""
    done = done_pairs(results)
    for name, reference in problems(problems_dir).items():
        pending = [s for s in solutions(solutions_dir, name) if (name, str(s)) not in done]
        if not pending:
            continue
        # absolute: the compare runs from the reference's folder, not from where the command was given
        block = KernelBenchBlock(reference=str(reference.resolve()), solutions=[str(s.resolve()) for s in pending])
        report = compare(block, reference.parent)
        ids = [k["kernel_id"] for k in report["results"]["kernel_results"]][1:]  # the reference is first
        with results.open("a") as out:
            for solution, kernel_id in zip(pending, ids, strict=True):
                out.write(json.dumps(row(name, solution, kernel_id, report)) + "\n")
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


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
