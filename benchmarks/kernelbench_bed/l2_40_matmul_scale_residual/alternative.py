"""Correct alternative: scaling and residual add folded into one multiplication by (1 + scaling_factor)."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        return self.matmul(x) * (1.0 + self.scaling_factor)
