"""Correct, like relu_inline.py; its build does not end before problem ``relu_a``'s row is in the results file
(``MAGPIE_TEST_RESULTS``), waiting up to 120 s: a run that built every solution before any problem ran would wait
the whole time (the build's import says which in ``waited_for_a.txt`` beside it)."""

import os
import time
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

results = Path(os.environ.get("MAGPIE_TEST_RESULTS", "/nonexistent"))
deadline = time.monotonic() + 120
while time.monotonic() < deadline and '"problem": "relu_a"' not in (results.read_text() if results.is_file() else ""):
    time.sleep(0.1)
marker = Path(__file__).parent / "waited_for_a.txt"
if not marker.exists():  # the build imports the file first; the check's workers import it again later
    marker.write_text("seen" if time.monotonic() < deadline else "timed out")

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
