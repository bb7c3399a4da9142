"""Correct alternative: the dimension moved last and reduced with torch.max(...).indices."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x.movedim(self.dim, -1), dim=-1).indices
