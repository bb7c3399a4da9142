"""Random memory layout for a timed instance: pad allocations of random sizes, on the host and the device.

A kernel's time can depend on where its inputs and outputs land — page and cache-set alignment, whether an
allocation is served from the heap or a fresh mapping, the caching allocator's free blocks — and that
placement is fixed by whatever the process allocated before (Mytkowicz et al., "Producing Wrong Data Without
Doing Anything Obviously Wrong!", ASPLOS 2009). One process is one draw of that layout. ``compare`` runs each
instance in several processes, each with its own random pads (in the spirit of Curtsinger & Berger's
Stabilizer, ASPLOS 2013), so the spread between layouts shows up between processes and goes into the
speedup's interval instead of into the answer.
"""

from __future__ import annotations

import ctypes
import secrets
from typing import Any

import numpy as np
import torch

#: small host pads land inside the heap (below glibc's mmap threshold) and shift where later blocks go
HOST_SMALL_PADS = (1, 48)
HOST_SMALL_BYTES = 128 << 10
#: one large host pad may be mapped on its own, moving the address space and the allocator's thresholds
HOST_LARGE_BYTES = 8 << 20
#: device pads shift the caching allocator's blocks (its rounding is 512 bytes; large blocks 2 MiB)
DEVICE_PADS = (1, 8)
DEVICE_BYTES = 4 << 20


#: glibc's mallopt parameters, and the values a long-running process ends up with by itself: its mmap threshold
#: rises to the largest block it freed, up to 32 MiB on 64-bit, and its trim threshold follows at twice that
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES, TRIM_THRESHOLD_BYTES = 32 << 20, 64 << 20


def fix_host_allocator() -> str | None:
    """Pin glibc malloc's thresholds in this worker process; what was set (None where malloc is not glibc's).

    Left to itself, glibc moves its mmap threshold with what the process happened to free earlier: a process
    that never freed a large block maps every large tensor afresh (page faults and zeroing on each call), one that
    did serves it from the heap. Which one a worker is depends on its history (the check's trials, loading the
    inputs), not on the kernel: on the bed's conv2d the two processes of one kernel came out 2.3x apart, the
    pooled spread between processes 37 %; pinned at the long-run values, 3 % (2026-12-02, 2-core CPU).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)):
        return None
    mmap_mib, trim_mib = MMAP_THRESHOLD_BYTES >> 20, TRIM_THRESHOLD_BYTES >> 20
    return f"glibc malloc pinned: mmap threshold {mmap_mib} MiB, trim {trim_mib} MiB"


class Layout:
    """Random-size allocations kept alive for the life of the timing session; ``pad()`` adds a layer."""

    def __init__(self, device: torch.device, seed: int | None = None) -> None:
        self.device = device
        self.seed = secrets.randbits(32) if seed is None else seed
        self._rng = np.random.default_rng(self.seed)
        self._held: list[Any] = []
        self.host_bytes = 0
        self.device_bytes = 0
        self.pad()

    def pad(self) -> None:
        """One layer of pads: some small and one large host block, and a few device blocks."""
        rng = self._rng
        sizes = [int(rng.integers(16, HOST_SMALL_BYTES)) for _ in range(int(rng.integers(*HOST_SMALL_PADS)))]
        sizes.append(int(rng.integers(0, HOST_LARGE_BYTES)))
        for size in sizes:
            self._held.append(torch.empty(size, dtype=torch.uint8))
            self.host_bytes += size
        if self.device.type != "cpu":
            for _ in range(int(rng.integers(*DEVICE_PADS))):
                size = int(rng.integers(512, DEVICE_BYTES))
                self._held.append(torch.empty(size, dtype=torch.uint8, device=self.device))
                self.device_bytes += size

    def describe(self) -> dict[str, int]:
        """What a report needs to know (and the seed to draw the same layout again)."""
        return {"seed": self.seed, "host_pad_bytes": self.host_bytes, "device_pad_bytes": self.device_bytes}
