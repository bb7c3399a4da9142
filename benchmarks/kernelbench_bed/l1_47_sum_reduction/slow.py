"""Correct but slow: the same sum computed five times; the last result is returned."""

import torch
import torch.nn as nn

REPEATS = 5


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.sum(x, dim=self.dim, keepdim=True)
        for _ in range(REPEATS - 1):
            out = torch.sum(x, dim=self.dim, keepdim=True)
        return out
