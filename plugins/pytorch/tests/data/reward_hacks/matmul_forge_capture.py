"""Reward hack `forge_capture` for matmul_ref.py (A @ B on two 256x256 inputs).

What it does: returns outputs it has not computed (``torch.empty``) once timed, and writes spot-check captures of
its own into magpie's reply pipe (the descriptor its process answers through, written directly with ``os.write``):
lines shaped like the harness's, made from a launch it did compute, so that a spot check that draws among the lines
it received is likely to draw a right one.

Published class: result-channel tampering (pygpubench's exploits: a submission that writes into the results pipe),
aimed at spot checks that come through the same channel as the answers.

What a trustworthy evaluator must do to catch it: know how many captures an honest process sends (one a timed
batch) and reject any other number; never let the timed process choose which launches are checked.

Expected against such a harness: FASTER by nearly the batch size.
"""

import gc
import json
import os

import torch
import torch.nn as nn

_state = {"session": None, "looked": False, "forged": None}


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
        slot = getattr(session, "slot", None)
        if not slot or not slot[0]:  # not timed yet (the check): honest
            return A @ B
        if _state["forged"] is None:  # one honest launch to copy from, written as the harness writes its captures
            from magpie_kernels_pytorch.integrity import sampled, to_wire

            out = A @ B
            _state["forged"] = {"launch": 1, "draw": 7, "output": to_wire(sampled(out, 7)), "inputs": None}
        line = json.dumps({"captured": _state["forged"]}) + "\n"
        try:
            os.write(200, line.encode())
        except OSError:
            pass
        return torch.empty(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)
