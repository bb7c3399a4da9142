"""Background CPU load that comes and goes, for tests and benchmarks of verdicts on a busy machine.

One process per core alternates busy phases (a spinning loop) and idle phases (sleep) of random
lengths of a few hundred milliseconds, so the machine's speed changes while a measurement runs —
the situation that made timings taken in separate windows disagree. Every process stops by
itself after ``max_seconds`` even if nobody stops it.

    with injected_load():
        ...  # measure under load

``python tests/helpers/load_injector.py --seconds 30`` runs it alone.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

BUSY_MS = (200, 700)
IDLE_MS = (100, 500)


def churn(
    seed: int, max_seconds: float, busy_ms: tuple[int, int] = BUSY_MS, idle_ms: tuple[int, int] = IDLE_MS
) -> None:
    rng = random.Random(seed)
    end = time.monotonic() + max_seconds
    while time.monotonic() < end:
        busy_until = time.monotonic() + rng.uniform(*busy_ms) / 1000
        x = 0
        while time.monotonic() < busy_until:
            x += 1
        time.sleep(rng.uniform(*idle_ms) / 1000)


@contextmanager
def injected_load(
    processes: int | None = None,
    max_seconds: float = 600,
    seed: int = 0,
    busy_ms: tuple[int, int] = BUSY_MS,
    idle_ms: tuple[int, int] = IDLE_MS,
) -> Iterator[None]:
    """Alternating busy/idle load on every core (``processes``: default one per core) while the block runs."""
    count = processes or os.cpu_count() or 1
    periods = ["--busy-ms", *map(str, busy_ms), "--idle-ms", *map(str, idle_ms)]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--seconds", str(max_seconds), "--seed", str(seed + i), *periods],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(count)
    ]
    try:
        time.sleep(0.3)  # let the load start before the measurement does
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--busy-ms", type=int, nargs=2, default=BUSY_MS)
    parser.add_argument("--idle-ms", type=int, nargs=2, default=IDLE_MS)
    args = parser.parse_args()
    churn(args.seed, args.seconds, tuple(args.busy_ms), tuple(args.idle_ms))
