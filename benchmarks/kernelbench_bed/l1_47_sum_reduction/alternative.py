"""Correct alternative: the reduced dimension moved last and summed by a matrix product with a ones vector."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1)
        ones = torch.ones(moved.shape[-1], 1, dtype=x.dtype, device=x.device)
        return torch.matmul(moved, ones).movedim(-1, self.dim)
