"""Correct: ReLU as an inline C++ extension named ``relu`` (the shape of model-written KernelBench solutions,
with ``cpp_sources`` only so that it builds and runs on CPU)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
torch::Tensor relu_forward(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    return out;
}
"""

relu = load_inline(name="relu", cpp_sources=source, functions=["relu_forward"], extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu.relu_forward(x)
