"""Correct but slow: the same softmax computed five times; the last result is returned."""

import torch
import torch.nn as nn

REPEATS = 5


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.softmax(x, dim=1)
        for _ in range(REPEATS - 1):
            out = torch.softmax(x, dim=1)
        return out
