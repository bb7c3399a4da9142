"""PyTorch kernel candidates for the loop tests (CPU): a baseline and a faster, equally correct candidate.

* matmul (the tiny Llama's hottest CPU op in its vLLM trace, ``aten::mm``): a broadcast-and-sum
  baseline that materialises every product, against ``torch.mm``;
* rotary embedding (``vllm::rotary_embedding_kernel`` in the recorded GPU trace): one head at a time,
  against all heads at once.
"""

import torch

# one thread: on a small busy machine (a vLLM server next door) OpenMP spinning makes timings chaotic
torch.set_num_threads(1)

M, K, N = 128, 128, 128
T, H, D = 16, 32, 64


def mm_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def mm_reference(a, b):
    return (a.double() @ b.double()).float()


def mm_broadcast(a, b):
    return (a[:, :, None] * b[None, :, :]).sum(dim=1)


def mm_torch(a, b):
    return torch.mm(a, b)


def rope_inputs():
    angles = torch.rand(T, D // 2) * 6.28
    return [torch.randn(T, H, D), angles.cos(), angles.sin()]


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def rope_reference(x, cos, sin):
    return _rope(x.double(), cos.double()[:, None, :], sin.double()[:, None, :]).float()


def rope_per_head(x, cos, sin):
    out = torch.empty_like(x)
    for h in range(x.shape[1]):
        out[:, h, :] = _rope(x[:, h, :], cos, sin)
    return out


def rope_all_heads(x, cos, sin):
    return _rope(x, cos[:, None, :], sin[:, None, :])
