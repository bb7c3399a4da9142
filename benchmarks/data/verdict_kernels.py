"""Candidates of exactly known relative cost for benchmarks/verdicts_under_load.py.

Each does the same matrix product ``repeats`` times and returns it, so all are correct against
the baseline; the work is 1x (baseline and its identical twin), 1.1x and 3x. Sizes come from
``MAGPIE_VERDICT_N`` (matrix side) and the device from the kernel config.
"""

import os

import torch

N = int(os.environ.get("MAGPIE_VERDICT_N", "128"))
BASE_REPEATS = 10


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def _work(a, b, repeats):
    c = a @ b
    for _ in range(repeats - 1):
        c = a @ b
    return c


def base(a, b):
    return _work(a, b, BASE_REPEATS)


def twin(a, b):
    return _work(a, b, BASE_REPEATS)


def ten_percent(a, b):
    return _work(a, b, BASE_REPEATS + 1)


def triple(a, b):
    return _work(a, b, 3 * BASE_REPEATS)
