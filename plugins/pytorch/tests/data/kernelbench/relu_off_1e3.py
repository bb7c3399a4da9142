"""ReLU 0.1 % off: correct at KernelBench v0's 1e-2 (the leaderboards'), wrong at HEAD's fp32 1e-4."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 1.001
