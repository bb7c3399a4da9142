"""Inputs and reference for the CUDA matmul examples (fp32, N x N, row-major).

The launchers write into ``c`` (argument 2, ``options.output_args: [2]``), which
the harness NaN-fills before each run, so an unwritten element fails.
"""

import torch

N = 2048


def get_inputs():
    a = torch.randn(N, N, dtype=torch.float32)
    b = torch.randn(N, N, dtype=torch.float32)
    c = torch.empty(N, N, dtype=torch.float32)
    return [a, b, c, N]


def reference(a, b, c, n):
    c.copy_(a.double().matmul(b.double()).float())
    return c
