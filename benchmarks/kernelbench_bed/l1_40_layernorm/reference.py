import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs Layer Normalization.
    """

    def __init__(self, normalized_shape: tuple):
        """
        Initializes the LayerNorm layer.

        Args:
            normalized_shape (tuple): Shape of the input tensor to be normalized.
        """
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Layer Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (*, normalized_shape).

        Returns:
            torch.Tensor: Output tensor with Layer Normalization applied, same shape as input.
        """
        return self.ln(x)


# Sizes: KernelBench's own sizes (GPU scale) take from milliseconds to seconds per call and up to gigabytes of
# memory on a CPU; the bed's default sizes make one call ~0.1-3 ms on a 2-core CPU, so that a compare there
# takes seconds. MAGPIE_BED_SIZE=kernelbench restores KernelBench's sizes (e.g. for a GPU run at full scale).
if os.environ.get("MAGPIE_BED_SIZE") == "kernelbench":
    batch_size = 16
    features = 64
    dim1 = 256
    dim2 = 256
else:
    batch_size = 4
    features = 16
    dim1 = 64
    dim2 = 64


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [(features, dim1, dim2)]
