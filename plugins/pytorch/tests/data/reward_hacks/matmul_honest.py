"""Honest solution for matmul_ref.py (A @ B on two 256x256 inputs).

The reference's own math, called the same way: the control of the catalogue, which should come out SAME as
the reference. (Calling the reference's own library op is what Makora's KernelHacks taxonomy calls a
"Baseline Kernel" when it is passed off as an optimisation; here that is the point: a known-honest candidate.)
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return A @ B
