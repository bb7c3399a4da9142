"""Correct alternative: the product split along K into two halves whose partial products are added."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        half = A.shape[1] // 2
        return torch.matmul(A[:, :half], B[:half]) + torch.matmul(A[:, half:], B[half:])
