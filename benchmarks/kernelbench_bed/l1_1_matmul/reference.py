import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a single square matrix multiplication (C = A * B)
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs the matrix multiplication.

        Args:
            A (torch.Tensor): Input matrix A of shape (N, N).
            B (torch.Tensor): Input matrix B of shape (N, N).

        Returns:
            torch.Tensor: Output matrix C of shape (N, N).
        """
        return torch.matmul(A, B)


# Sizes: KernelBench's own sizes (GPU scale) take from milliseconds to seconds per call and up to gigabytes of
# memory on a CPU; the bed's default sizes make one call ~0.1-3 ms on a 2-core CPU, so that a compare there
# takes seconds. MAGPIE_BED_SIZE=kernelbench restores KernelBench's sizes (e.g. for a GPU run at full scale).
N = 2048 * 2 if os.environ.get("MAGPIE_BED_SIZE") == "kernelbench" else 256


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []  # No special initialization inputs needed
