"""Vector add in PyTorch and Triton, for `magpie analyze` (see analyze.yaml)."""

import torch

N = 1 << 20


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def reference(x, y):
    return x + y


def add_torch(x, y):
    return torch.add(x, y)
