"""Kernels with known faults, for the correctness-gate tests."""

import os
import time

import torch


def get_inputs():
    return [torch.randn(64, 128)]


def reference(x):
    return torch.relu(x)


def good(x):
    return torch.clamp_min(x, 0.0)


def wrong_values(x):
    out = torch.relu(x)
    out[3, 7] += 0.5
    return out


def partial_write(x):
    out = torch.empty_like(x)
    out[:, :100] = torch.relu(x[:, :100])
    return out


def nan_output(x):
    out = torch.relu(x)
    out[10, 10] = float("nan")
    return out


_KEPT = {}


def kept_buffer(x):
    """Right when returned, in one buffer kept across calls: the next call overwrites it."""
    out = _KEPT.setdefault("relu", torch.empty_like(x))
    return torch.clamp_min(x, 0.0, out=out)


def zeros_reference(x):
    return torch.zeros(x.shape[0], 1)


def kept_zeros(x):
    """One cached tensor returned by every call: shared, and still right (nothing overwrites it)."""
    return _KEPT.setdefault("zeros", torch.zeros(x.shape[0], 1))


def wrong_shape(x):
    return torch.relu(x)[:, :64]


def wrong_dtype(x):
    return torch.relu(x).double()


def raises(x):
    raise RuntimeError("kernel bug: bad launch config")


def crashes(x):
    os.abort()


def hangs(x):
    time.sleep(3600)


def inplace_good(x, out):
    torch.relu(x, out=out) if False else out.copy_(torch.relu(x))


def inplace_partial(x, out):
    out[:32].copy_(torch.relu(x[:32]))


def get_inplace_inputs():
    x = torch.randn(64, 128)
    return [x, torch.zeros_like(x)]


def inplace_reference(x, out):
    out.copy_(torch.relu(x))
