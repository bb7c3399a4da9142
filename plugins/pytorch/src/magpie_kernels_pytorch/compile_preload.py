"""torch.compile's per-process start-up, paid once in the fork server that a compare's workers are forked from.

A cache hit of TorchInductor still costs a fresh process seconds before its first call: importing dynamo and
inductor, then probing which CPU vector instruction sets work — it compiles a test program per instruction set
and loads each in a new Python process (~3 s on a quiet 2-core machine, 6 s under load, measured) — and hashing
torch's own sources for its cache keys. All of it is cached per process (``functools.cache``), so done here it
is inherited by every forked worker. Imported only when a compare has a torch.compile kernel
(:meth:`PyTorchBackend.worker_preload_for`).

Only with a CPU-only torch build, for two reasons. Inductor imports triton, and triton's interpreter works only
if ``TRITON_INTERPRET=1`` is set before triton is first imported: without a GPU build the interpreter is the only
way a Triton kernel can run here, so it is set now, as the Triton backend would set it in its worker. And on a
GPU build this warm-up has not been verified to leave the device untouched (a fork server must never initialise
CUDA or HIP), so GPU hosts pay it in each process. Nothing here may fail the fork server: a torch release that
moves these internals only costs the time again.
"""

from __future__ import annotations

import logging
import os

import torch

import magpie_kernels_pytorch.harness  # noqa: F401  (torch and the harness, as for every worker)


def _warm_up() -> None:
    from torch._inductor.codecache import torch_key
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    pick_vec_isa()
    torch_key()


if torch.version.cuda is None and torch.version.hip is None:
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        _warm_up()
    except Exception as exc:  # private torch internals: a change there must not stop a compare
        logging.getLogger(__name__).debug("torch.compile warm-up skipped: %s", exc)
