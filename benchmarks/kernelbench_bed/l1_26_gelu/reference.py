import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a GELU activation.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies GELU activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: Output tensor with GELU applied, same shape as input.
        """
        return torch.nn.functional.gelu(x)


# Sizes: KernelBench's own sizes (GPU scale) take from milliseconds to seconds per call and up to gigabytes of
# memory on a CPU; the bed's default sizes make one call ~0.1-3 ms on a 2-core CPU, so that a compare there
# takes seconds. MAGPIE_BED_SIZE=kernelbench restores KernelBench's sizes (e.g. for a GPU run at full scale).
if os.environ.get("MAGPIE_BED_SIZE") == "kernelbench":
    batch_size = 4096
    dim = 393216
else:
    batch_size = 64
    dim = 8192


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []  # No special initialization inputs needed
