"""Candidates for the Ray fan-out test.

Every ``*_barrier`` candidate, on its first call, announces itself in
``$MAGPIE_BARRIER_DIR`` and waits until ``$MAGPIE_BARRIER_N`` candidates have:
run one after another, the first would wait in vain and fail; run at once
(one per declared GPU), all pass. `crashes` kills its own process.
"""

import os
import time
from pathlib import Path

import torch

_arrived = False


def _barrier(name):
    global _arrived
    if _arrived:
        return
    folder = Path(os.environ["MAGPIE_BARRIER_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(str(os.getpid()))
    deadline = time.monotonic() + float(os.environ.get("MAGPIE_BARRIER_TIMEOUT", "90"))
    want = int(os.environ["MAGPIE_BARRIER_N"])
    while len(list(folder.iterdir())) < want:
        if time.monotonic() > deadline:
            raise RuntimeError(f"barrier: only {len(list(folder.iterdir()))}/{want} candidates ran at once")
        time.sleep(0.05)
    _arrived = True


def get_inputs():
    return [torch.randn(192, 192), torch.randn(192, 192)]


def single(a, b):
    return a @ b


def single_barrier(a, b):
    _barrier("single")
    return a @ b


def heavy_barrier(a, b):
    _barrier("heavy")
    c = a @ b
    for _ in range(7):
        c = c + a @ b
    return c * 0.125


def wrong_barrier(a, b):
    _barrier("wrong")
    return a @ b + 1.0


def crashes(a, b):
    os.abort()


def heavy(a, b):
    c = a @ b
    for _ in range(7):
        c = c + a @ b
    return c * 0.125
