"""Does not compile: an undeclared name in the C++ source (KernelBench: compiled false)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
torch::Tensor relu_forward(torch::Tensor x) {
    return torch::clamp_min(x, zero_value);
}
"""

relu = load_inline(name="relu", cpp_sources=source, functions=["relu_forward"])


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu.relu_forward(x)
