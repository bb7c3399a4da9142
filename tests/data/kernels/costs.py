"""Candidates of known relative cost: `double_work` does the same work twice."""

import torch


def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]


def reference(a, b):
    return a @ b


def single_work(a, b):
    return a @ b


def single_work_again(a, b):
    return torch.matmul(a, b)


def double_work(a, b):
    c = a @ b
    c2 = a @ b
    return (c + c2) * 0.5
