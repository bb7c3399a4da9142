"""Correct but slow: the same RMSNorm computed five times; the last result is returned."""

import torch
import torch.nn as nn

REPEATS = 5


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def _once(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + self.eps)
        return x / rms

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self._once(x)
        for _ in range(REPEATS - 1):
            out = self._once(x)
        return out
