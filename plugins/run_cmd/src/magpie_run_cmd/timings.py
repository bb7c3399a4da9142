"""xDiT's result file, ``timings.json``, and the metrics AMD Magpie derives from it.

The file is a JSON list of per-iteration wall times in seconds (xDiT already leaves out the first,
warm-up iteration when there is more than one). AMD Magpie derives, with ``batch_size`` and
``num_inference_steps`` read from the command's ``--batch_size`` / ``--num_inference_steps``:

- ``latency_per_image_s = mean / batch_size``, ``images_per_sec = batch_size / mean``,
  ``steps_per_sec = num_inference_steps / mean`` (0 when the steps are not given);
- mean, median, p99 (nearest rank over ``n - 1``) and population std of the iterations;
- the report's ``throughput`` block: ``request_throughput`` = ``output_throughput`` = images/s,
  ``completed_requests`` = iterations x batch size, ``duration_seconds`` = sum of the iterations;
- its ``latency`` block: ``e2el`` mean/median/p99/std of one iteration, in milliseconds.

Unlike AMD Magpie, which skips entries that are not numbers, any bad entry is an error naming the
file and the entry: a number silently left out would change every metric.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULT_FILE = "timings.json"


class ResultError(ValueError):
    """The result file is missing or malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Shape:
    """How many images one iteration makes, and the denoising steps per image (None: not given)."""

    batch_size: int = 1
    num_inference_steps: int | None = None


def read_timings(path: Path) -> list[float]:
    """The per-iteration seconds in ``path``; :class:`ResultError` naming the file and entry otherwise."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultError(f"{path}: not found: the command wrote no {path.name}") from None
    except OSError as exc:
        raise ResultError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: line {exc.lineno}, column {exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(data, list):
        raise ResultError(f"{path}: expected a JSON list of per-iteration seconds, found a {type(data).__name__}")
    if not data:
        raise ResultError(f"{path}: the list is empty: no iteration was timed")
    out = []
    for i, value in enumerate(data):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise ResultError(f"{path}: [{i}]: {value!r} is not a positive number of seconds")
        out.append(float(value))
    return out


def flag_value(argv: list[str], name: str) -> str | None:
    """The value of ``--name value`` or ``--name=value`` in ``argv`` (xDiT accepts ``-`` and ``_`` alike);
    the last one given wins, as with argparse."""
    spellings = {name, name.replace("_", "-"), name.replace("-", "_")}
    found = None
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in spellings:
            found = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return found


def shape_of(argv: list[str]) -> Shape:
    """Batch size and steps from the command's flags; :class:`ResultError` naming the flag when not an integer."""
    values: dict[str, int | None] = {}
    for flag in ("--batch_size", "--num_inference_steps"):
        raw = flag_value(argv, flag)
        if raw is None:
            values[flag] = None
            continue
        try:
            number = int(raw)
        except ValueError:
            raise ResultError(f"benchmark.run_cmd: {flag} {raw!r} is not an integer") from None
        if number < 1:
            raise ResultError(f"benchmark.run_cmd: {flag} {raw!r} must be at least 1")
        values[flag] = number
    return Shape(values["--batch_size"] or 1, values["--num_inference_steps"])


def _p99(sorted_s: list[float]) -> float:
    """AMD Magpie's p99: nearest rank over ``n - 1`` intervals."""
    return sorted_s[min(len(sorted_s) - 1, round(0.99 * (len(sorted_s) - 1)))]


def metrics(timings: list[float], shape: Shape) -> dict[str, Any]:
    """AMD Magpie's ``raw_result`` of an offline diffusion run."""
    import statistics  # here: the run_cmd plugin's entry module (loaded by every magpie command) imports this one

    mean = statistics.fmean(timings)
    return {
        "timings_s": timings,
        "iterations": len(timings),
        "batch_size": shape.batch_size,
        "num_inference_steps": shape.num_inference_steps,
        "mean_iteration_s": mean,
        "median_iteration_s": statistics.median(timings),
        "p99_iteration_s": _p99(sorted(timings)),
        "std_iteration_s": statistics.pstdev(timings),
        "latency_per_image_s": mean / shape.batch_size,
        "images_per_sec": shape.batch_size / mean,
        "steps_per_sec": (shape.num_inference_steps / mean) if shape.num_inference_steps else 0.0,
    }


def report_blocks(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report's ``throughput`` and ``latency`` blocks (AMD Magpie's mapping of images/s and iterations)."""
    timings = raw["timings_s"]
    throughput = {
        "request_throughput": raw["images_per_sec"],
        "output_throughput": raw["images_per_sec"],
        "completed_requests": raw["iterations"] * raw["batch_size"],
        "duration_seconds": sum(timings),
        "unit": "images/s",
    }
    latency = {
        "e2el": {
            "mean_ms": raw["mean_iteration_s"] * 1000.0,
            "median_ms": raw["median_iteration_s"] * 1000.0,
            "p99_ms": raw["p99_iteration_s"] * 1000.0,
            "std_ms": raw["std_iteration_s"] * 1000.0,
        }
    }
    return throughput, latency
