"""Row-wise softmax variants for `magpie compare` (see compare.yaml).

`softmax_partial_write` is deliberately wrong: it leaves the second half of
the rows unwritten. magpie poisons outputs, so those rows read as NaN and the
variant fails correctness instead of passing by accident.
"""

import torch

ROWS, COLS = 512, 1024


def get_inputs():
    return [torch.randn(ROWS, COLS, dtype=torch.float32)]


def reference(x):
    return torch.softmax(x.double(), dim=-1).to(x.dtype)


def softmax_eager(x):
    return torch.softmax(x, dim=-1)


def softmax_manual(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def softmax_partial_write(x):
    out = torch.empty_like(x)
    half = x.shape[0] // 2
    out[:half] = torch.softmax(x[:half], dim=-1)
    return out


def get_inputs_large():
    """GPU-sized input: 8192 x 4096 fp32 (128 MiB in, 128 MiB out; ~60 us on an H200)."""
    return [torch.randn(8192, 4096, dtype=torch.float32)]
