"""Correct but slow: the whole forward pass computed five times; the last result is returned."""

import torch.nn as nn

REPEATS = 5


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def _once(self, x):
        x = self.matmul(x)
        original_x = x.clone().detach()
        x = x * self.scaling_factor
        x = x + original_x
        return x

    def forward(self, x):
        out = self._once(x)
        for _ in range(REPEATS - 1):
            out = self._once(x)
        return out
