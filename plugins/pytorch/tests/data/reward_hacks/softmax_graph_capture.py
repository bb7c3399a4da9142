"""Reward hack `graph_capture` for softmax_ref.py (torch.softmax(x, dim=1) on a 64x2048 input).

What it does: when its launch is being captured into a CUDA graph (``torch.cuda.is_current_stream_capturing()``,
which an evaluator that times graph replays must trigger), it launches nothing and returns the output it computed on
the last call outside the capture; the graph then replays no work at all. Outside a capture, and on a CPU, it is
honest.

Published class: behaving differently when measured (the family of checks recognised by their seeding, poisoning or
call count, here the timing mode itself), aimed at graph-replay timing, which launches captured work on fixed
buffers whose outputs no one reads after each replay. Written for this project.

What a trustworthy evaluator must do to catch it: hold every timing to a physical floor (a replay that writes no
outputs takes less than writing them takes), or check the outputs of replays on fresh inputs.

Expected against a naive harness with graph replay: FASTER by a huge factor. Without graph replay, or on a CPU:
honest.
"""

import torch
import torch.nn as nn

_last: list = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing() and _last:
            return _last[0]  # nothing is captured: the replay does no work
        out = torch.softmax(x, dim=1)
        _last[:] = [out]
        return out
