"""Which processes outlived a run: every process a test starts carries a marker in its environment,
inherited by all its descendants (workers in their own sessions included), so ``/proc`` tells."""

from __future__ import annotations

import os
import time
from pathlib import Path


def marked_processes(marker: str) -> list[str]:
    """Live (non-zombie) processes whose environment holds ``marker``: '<pid> <cmdline>' each."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            alive = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            if alive and marker.encode() in (proc / "environ").read_bytes():
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name} {cmdline}")
        except OSError:
            continue
    return found


def assert_none_left(marker: str, wait_s: float = 5.0) -> None:
    """No marked process is left after ``wait_s`` (SIGKILLed processes take a moment to be reaped)."""
    deadline = time.monotonic() + wait_s
    while (left := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes outlived the run: {left}"
