"""Correct alternative: Layer Normalization written out (mean, biased variance, rsqrt, affine)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dims = tuple(range(-len(self.ln.normalized_shape), 0))
        mean = x.mean(dim=dims, keepdim=True)
        centered = x - mean
        var = centered.square().mean(dim=dims, keepdim=True)
        return centered * torch.rsqrt(var + self.ln.eps) * self.ln.weight + self.ln.bias
