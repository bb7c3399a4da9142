"""Correct but slow: the same argmax computed five times; the last result is returned."""

import torch
import torch.nn as nn

REPEATS = 5


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.argmax(x, dim=self.dim)
        for _ in range(REPEATS - 1):
            out = torch.argmax(x, dim=self.dim)
        return out
