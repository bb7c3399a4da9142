"""A BatchNorm problem: in training mode (KernelBench's) the batch's statistics normalise; in eval mode the
running ones (0 and 1 at construction) do, so the two modes give different outputs."""

import torch
import torch.nn as nn

features = 8


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(32, features) * 3 + 1]


def get_init_inputs():
    return [features]
