"""Wrong: a clamp with an upper bound of 0.5 (like a mistyped ReLU6). KernelBench's inputs are torch.rand,
all >= 0, so a mistake that only touches negative values would pass; this one changes values above 0.5."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=0.0, max=0.5)
