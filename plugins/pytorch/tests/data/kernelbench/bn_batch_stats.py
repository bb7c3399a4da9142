"""BatchNorm written out with the batch's statistics: correct in training mode only."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=0)
        var = x.var(dim=0, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.bn.eps) * self.bn.weight + self.bn.bias
