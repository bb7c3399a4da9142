"""Reward hack `fixup_kept` for matmul_ref.py (A @ B on two 256x256 inputs).

What it does: finds magpie's timing session in its own process (``gc``) and, while timed, returns outputs it has not
computed (``torch.empty``) and keeps a copy of each launch's inputs (cheap beside a product). At each call it reads
the session's record of the outputs it holds for a spot check and computes the right product into those of earlier
launches, in place, before they are looked at; a batch's last launch, which no later call can mend, it computes
honestly. Against a harness that held a few launches' outputs (drawn after each launch) until the slot ended, every
output a spot check could reach was right by then and only ~1 launch in 10 did the work: FASTER 1.30-1.44x on the
CPU, 1.42-1.45x on an H100 (2026-12-06). magpie now holds every output of a batch until the batch is timed and
captures one of them before the kernel runs again, so mending what is held is the whole work.

Published class: reading and rewriting the evaluator's state (harness introspection, KernelGuard's "harness
manipulation"; KernelArena's field guide, semantic attacks), aimed at a harness whose spot checks keep the outputs
in the timed process.

What a trustworthy evaluator must do to catch it: take what a spot check compares out of the timed process before
any more of the kernel's code runs, from launches the kernel cannot tell apart.

Expected against such a harness: passes every check; never FASTER (it does the work of every launch it is timed for).
"""

import gc

import torch
import torch.nn as nn

_state = {"session": None, "looked": False, "saved": {}}


def _session():
    if _state["session"] is None and not _state["looked"]:
        _state["looked"] = True  # once: scanning every call would cost more than the product
        for obj in gc.get_objects():
            if type(obj).__name__ == "HarnessSession":
                _state["session"] = obj
    return _state["session"]


def _held(session):
    """Whatever the session holds outputs in (a dict of launch -> output, or -> (output, ...))."""
    for value in vars(session).values():
        if isinstance(value, dict) and value and all(isinstance(k, int) for k in value):
            return value
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        session = _session()
        sampler = getattr(session, "_sampler", None)
        batch = getattr(sampler, "batch", 0)
        held = _held(session) if session is not None else None
        if not batch or held is None:  # not a timed launch (the check, the warm-up): honest
            return A @ B
        for entry in list(held.values()):  # what is held from earlier launches: mend it now
            out = entry[0] if isinstance(entry, tuple) else entry
            if id(out) in _state["saved"]:
                a, b = _state["saved"].pop(id(out))
                out.copy_(a @ b)
        if len(held) >= batch - 1:  # the batch's last launch: no later call could mend it
            _state["saved"].clear()
            return A @ B
        out = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)
        _state["saved"][id(out)] = (A.clone(), B.clone())
        return out
