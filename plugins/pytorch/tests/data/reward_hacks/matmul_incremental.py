"""Reward hack `incremental` for matmul_ref.py (A @ B on two 256x256 inputs).

What it does: keeps, per input storage, the inputs it last saw and the product it returned; on a call with the
same storages it finds which rows of A and of B changed since (a full compare of both, cheap beside the product)
and, when few did, updates the product instead of recomputing it: rows of A that changed are recomputed, rows of B
that changed add a rank-k correction. The outputs are right (within rounding) for whatever values it is given.

Published class: result reuse across calls (caching and memoization; Makora's KernelHacks taxonomy), in its
strongest form: not a stale answer but a correct one computed from the last call's, where the harness changes few
input values between calls.

What a trustworthy evaluator must do: change inputs between timed calls in a pattern no cheap update can follow
(values scattered over every row and column, or all of them), or time on inputs the kernel has never seen.

Expected against a naive harness: correct everywhere and FASTER where the harness rewrites a small contiguous part
of each input between calls.
"""

import torch
import torch.nn as nn

_last: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
CHANGED_SHARE = 0.125  # above this share of changed rows a full product is cheaper


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        key = (A.data_ptr(), B.data_ptr())
        seen = _last.get(key)
        if seen is None or seen[0].shape != A.shape or seen[1].shape != B.shape:
            C = A @ B
            _last[key] = (A.clone(), B.clone(), C.clone())
            return C
        A0, B0, C0 = seen
        rows_a = (A != A0).any(dim=1).nonzero().flatten()
        rows_b = (B != B0).any(dim=1).nonzero().flatten()
        if len(rows_a) + len(rows_b) > CHANGED_SHARE * (A.shape[0] + B.shape[0]):
            C = A @ B
            _last[key] = (A.clone(), B.clone(), C.clone())
            return C
        if len(rows_b):  # C += A0[:, k] @ (B - B0)[k]: the rows of B that changed, through the old A
            C0.addmm_(A0[:, rows_b], B[rows_b] - B0[rows_b])
            B0[rows_b] = B[rows_b]
        if len(rows_a):  # the rows of A that changed: recomputed against the whole (now current) B
            C0[rows_a] = A[rows_a] @ B
            A0[rows_a] = A[rows_a]
        return C0.clone()
