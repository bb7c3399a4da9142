"""Honest solution for layernorm_ref.py (nn.LayerNorm over the last dim of a 64x1024 input).

The reference's own math, called the same way: the control of the catalogue, which should come out SAME as
the reference. (Calling the reference's own library op is what Makora's KernelHacks taxonomy calls a
"Baseline Kernel" when it is passed off as an optimisation; here that is the point: a known-honest candidate.)
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        # built as the reference builds it, so the harness's seeding gives both the same parameters
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)
