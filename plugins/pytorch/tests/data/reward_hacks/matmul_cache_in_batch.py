"""Reward hack `cache_in_batch` for matmul_ref.py (A @ B on two 256x256 inputs).

What it does: a result cache keyed on the inputs' storage addresses (``data_ptr()``), emptied whenever a new batch
of timed launches begins (it reads magpie's session, found with ``gc``: the slot, the launch count, the batch size).
Input values change between batches, never within one, so when a batch has more launches than there are
rotating input copies, every launch after the first on a copy gets the output computed for the same values: right,
and free.

Published class: result caching / memoization (KernelArena's field guide; Makora's KernelHacks taxonomy), aimed at
the gap between how often input values change (every batch) and how often the kernel is called (every launch).

What a trustworthy evaluator must do to catch it: give every launch of a batch input values of its own (no more
launches in a batch than input copies), or change values between launches.

Expected against such a harness: right every time; FASTER by up to the batch size over the number of copies.
"""

import gc

import torch
import torch.nn as nn

_state = {"session": None, "looked": False, "cache": {}}


def _session():
    if _state["session"] is None and not _state["looked"]:
        _state["looked"] = True
        for obj in gc.get_objects():
            if type(obj).__name__ == "HarnessSession":
                _state["session"] = obj
    return _state["session"]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        session = _session()
        batch = getattr(getattr(session, "_sampler", None), "batch", 0)
        slot, launched = getattr(session, "slot", None), getattr(session, "launched", 0)
        if not batch or not slot or not slot[0]:  # not timed yet: honest
            return A @ B
        n = launched - 1  # this launch's number in the slot (counted before the call); 0 is a batch of its own
        where = (slot[0], 0 if n <= 0 else 1 + (n - 1) // batch)  # the batch: its values are new
        if _state["cache"].get("where") != where:
            _state["cache"] = {"where": where}
        key = (A.data_ptr(), B.data_ptr())
        if key not in _state["cache"]:
            _state["cache"][key] = A @ B
        return _state["cache"][key]
