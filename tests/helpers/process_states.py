"""Per-process slow-down states for simulated compares (tests and benchmarks/precision_scale_simulation.py)."""

from __future__ import annotations

import numpy as np


def two_states(rng: np.random.Generator, n: int, switch: float) -> np.ndarray:
    """A process's slow-down per block: 1x or 6.2x, flipped with probability ``switch`` per block — a 2-thread CPU
    matmul on a busy 2-core machine, its threads on one CPU or two (docs/benchmarks/kernelbench_bed.md)."""
    flips = np.cumsum(rng.random(n) < switch) + rng.integers(0, 2)
    return np.where(flips % 2 == 0, 1.0, 6.2)
