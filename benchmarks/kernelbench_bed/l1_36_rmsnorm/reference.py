import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs RMS Normalization.
    """

    def __init__(self, num_features: int, eps: float = 1e-5):
        """
        Initializes the RMSNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
            eps (float, optional): A small value added to the denominator to avoid division by zero. Defaults to 1e-5.
        """
        super(Model, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies RMS Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features, *).

        Returns:
            torch.Tensor: Output tensor with RMS Normalization applied, same shape as input.
        """
        # Calculate the RMS along the feature dimension
        rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + self.eps)

        # Normalize the input by dividing by the RMS
        return x / rms


# Sizes: KernelBench's own sizes (GPU scale) take from milliseconds to seconds per call and up to gigabytes of
# memory on a CPU; the bed's default sizes make one call ~0.1-3 ms on a 2-core CPU, so that a compare there
# takes seconds. MAGPIE_BED_SIZE=kernelbench restores KernelBench's sizes (e.g. for a GPU run at full scale).
if os.environ.get("MAGPIE_BED_SIZE") == "kernelbench":
    batch_size = 112
    features = 64
    dim1 = 512
    dim2 = 512
else:
    batch_size = 4
    features = 64
    dim1 = 32
    dim2 = 32


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
