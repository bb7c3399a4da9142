import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a Gemm, multiplies the result, and applies LeakyReLU.
    """

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = self.leaky_relu(x)
        return x


# Sizes: KernelBench's own sizes (GPU scale) take from milliseconds to seconds per call and up to gigabytes of
# memory on a CPU; the bed's default sizes make one call ~0.1-3 ms on a 2-core CPU, so that a compare there
# takes seconds. MAGPIE_BED_SIZE=kernelbench restores KernelBench's sizes (e.g. for a GPU run at full scale).
if os.environ.get("MAGPIE_BED_SIZE") == "kernelbench":
    batch_size = 1024
    in_features = 8192
    out_features = 8192
else:
    batch_size = 64
    in_features = 512
    out_features = 512
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
