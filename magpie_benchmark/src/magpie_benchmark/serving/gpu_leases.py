"""Choosing GPUs for a server: pinned, or idle ones found by the vendor plugins, held under a lock.

Vendor plugins report GPUs through the ``magpie_detect_gpus`` hook. A GPU is
idle when its used memory leaves at least ``min_free_memory_gb`` free and
its utilization is under 10 %. Each chosen GPU is locked with ``fcntl.flock``
on ``<state dir>/gpu-locks/<vendor>-<index>.lock`` for the life of the run,
so two magpie runs on one machine never take the same GPU; the lock goes
away with the process, even when it crashes.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

BUSY_UTILIZATION_PCT = 10.0


class GpuSelectionError(RuntimeError):
    """Not enough idle GPUs."""


def state_dir() -> Path:
    """``$MAGPIE_STATE_DIR``, else ``$XDG_STATE_HOME/magpie``, else ``~/.local/state/magpie``."""
    if os.environ.get("MAGPIE_STATE_DIR"):
        return Path(os.environ["MAGPIE_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "magpie"


@dataclass
class GpuLease:
    """GPUs a run holds; release (or process exit) frees them."""

    vendor: str | None
    indices: list[int]
    how: str  # pinned | auto | none
    note: str | None = None
    _files: list[IO[str]] = field(default_factory=list, repr=False)
    visible_env: str | None = None

    def env(self) -> dict[str, str]:
        if not self.indices or not self.visible_env:
            return {}
        return {self.visible_env: ",".join(str(i) for i in self.indices)}

    def release(self) -> None:
        for fh in self._files:
            try:
                fcntl.flock(fh, fcntl.LOCK_UN)
            finally:
                fh.close()
        self._files.clear()

    def as_dict(self) -> dict[str, Any]:
        return {"vendor": self.vendor, "devices": self.indices, "how": self.how, "note": self.note}


def _try_lock(path: Path) -> IO[str] | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = path.open("a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def visible_devices_env(vendor: str | None) -> str | None:
    """The variable that restricts ``vendor``'s visible GPUs, from the vendor plugins (``""``: vendor unknown)."""
    from magpie_core.plugins import get_plugin_manager

    return get_plugin_manager().first("magpie_visible_devices_env", vendor=vendor or "")


def is_idle(gpu: Any, min_free_memory_gb: float) -> bool:
    total, used = getattr(gpu, "memory_total_mib", None), getattr(gpu, "memory_used_mib", None)
    if total is not None and used is not None and (total - used) < min_free_memory_gb * 1024:
        return False
    util = getattr(gpu, "utilization_pct", None)
    return not (util is not None and util >= BUSY_UTILIZATION_PCT)


def select_gpus(
    gpus: list[Any],
    count: int,
    *,
    pinned: list[int] | None = None,
    candidates: list[int] | None = None,
    min_free_memory_gb: float = 8.0,
    lock_dir: Path | None = None,
) -> GpuLease:
    """Pin ``pinned`` or lock ``count`` idle GPUs among ``gpus``; a lease with nothing when none exist."""
    lock_dir = Path(lock_dir) if lock_dir else state_dir() / "gpu-locks"
    vendors = {getattr(g, "vendor", None) for g in gpus}
    vendor = next(iter(vendors)) if len(vendors) == 1 else None
    env_name = next(
        (getattr(g, "visible_devices_env", None) for g in gpus if getattr(g, "visible_devices_env", None)), None
    ) or visible_devices_env(vendor)
    if pinned:
        lease = GpuLease(vendor, list(pinned), "pinned", visible_env=env_name)
        for index in pinned:  # pinned GPUs are locked too, so an auto run elsewhere skips them
            fh = _try_lock(lock_dir / f"{vendor or 'gpu'}-{index}.lock")
            if fh is None:
                lease.note = f"GPU {index} is locked by another magpie run; pinned anyway"
            else:
                lease._files.append(fh)
        return lease
    if not gpus:
        return GpuLease(None, [], "none", note="no GPU detected; the server sees the machine's defaults")
    pool = [g for g in gpus if candidates is None or g.index in candidates]
    lease = GpuLease(vendor, [], "auto", visible_env=env_name)
    for gpu in sorted(pool, key=lambda g: g.index):
        if len(lease.indices) >= count:
            break
        if not is_idle(gpu, min_free_memory_gb):
            continue
        fh = _try_lock(lock_dir / f"{gpu.vendor}-{gpu.index}.lock")
        if fh is not None:
            lease._files.append(fh)
            lease.indices.append(gpu.index)
    if len(lease.indices) < count:
        lease.release()
        raise GpuSelectionError(
            f"needed {count} idle GPU(s) with {min_free_memory_gb:g} GB free, found {len(lease.indices)} "
            f"among {len(pool)} (busy, locked by another magpie run, or not in candidates); "
            "pin GPUs with gpu_selection.devices"
        )
    return lease
