"""fp16 GEMM variants: cuBLAS through torch.matmul, a Triton tiled matmul, and a split-K
version that does the same FLOPs in two launches plus an add (more memory traffic)."""

import torch

M = N = K = 4096


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)]


def reference(a, b):
    return (a.float() @ b.float()).to(torch.float16)


def matmul_torch(a, b):
    return a @ b


def matmul_split_k(a, b):
    half = a.shape[1] // 2
    return (a[:, :half].float() @ b[:half].float() + a[:, half:].float() @ b[half:].float()).to(torch.float16)
