"""A/A case: an exact copy of the reference Model (same ops, same order) under the name ModelNew."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """
    Simple model that performs a Softmax activation.
    """

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Softmax activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features).

        Returns:
            torch.Tensor: Output tensor with Softmax applied, same shape as input.
        """
        return torch.softmax(x, dim=1)
