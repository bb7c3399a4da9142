"""GPU clocks, power limit and persistence: recorded in every report, changed only when asked.

The vendor plugins do the work (hook ``magpie_gpu_hardware_control``); this module

* :func:`record` — the state of every detected GPU, for the report's ``gpu_hardware`` field
  (never raises: a vendor tool that fails is an entry in ``errors``);
* :func:`applied` — AMD Magpie's ``gpu.hardware`` block (framework config): when ``enabled``,
  set each GPU's power limit / clock lock before the run and, with ``reset_after_benchmark``
  (default true), restore them afterwards, also after a failure. A setting that cannot be made
  (no permission, not supported) stops the run before it starts, with the vendor tool's words."""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from magpie_core.interfaces import HardwareControlError

if TYPE_CHECKING:
    from pathlib import Path

    from magpie_core.reports import Report

log = logging.getLogger("magpie.hardware")

#: settings applied right now (inside :func:`applied`), recorded by every report written meanwhile
_ACTIVE: dict[str, Any] | None = None

__all__ = ["HardwareControlError", "applied", "per_gpu_settings", "record", "run_vendor_tool"]


def run_vendor_tool(tool: str, name: str, args: list[str], timeout_s: float = 60) -> str:
    """Run a vendor tool (``name`` is how messages call it); any failure is a :class:`HardwareControlError`
    with the tool's own last words, and a hint when it was refused for want of permission."""
    try:
        out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HardwareControlError(f"{name} {' '.join(args)}: {exc}") from exc
    if out.returncode != 0:
        said = (out.stdout + out.stderr).strip().splitlines()
        why = said[-1] if said else f"exit code {out.returncode}"
        hint = " (changing GPU settings needs root)" if "ermission" in why or "root" in why else ""
        raise HardwareControlError(f"{name} {' '.join(args)}: {why}{hint}")
    return out.stdout


def _controls() -> dict[str, Any]:
    """vendor -> its GpuHardwareControl, for every vendor with a detected GPU."""
    from magpie_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    vendors = sorted({g.vendor for g in manager.detect_gpus() if getattr(g, "vendor", None)})
    controls = {v: manager.first("magpie_gpu_hardware_control", vendor=v) for v in vendors}
    return {v: c for v, c in controls.items() if c is not None}


def write_report(report: Report, path: Path) -> Path:
    """``report`` written with every GPU's state as it is now, unless the run was interrupted (a stopped run's
    write stays quick): the report itself knows no GPU."""
    if report.gpu_hardware is None and not report.interrupted:
        report.gpu_hardware = record()
    return report.write(path)


def record() -> dict[str, Any]:
    """``{"gpus": [...], "errors": [...], "applied": ...}``: each GPU's clocks, power limit, persistence."""
    out: dict[str, Any] = {"gpus": [], "errors": [], "applied": _ACTIVE}
    try:
        controls = _controls()
    except Exception as exc:  # a report must never fail because a vendor tool did
        return {**out, "errors": [f"GPU detection failed: {exc}"]}
    for vendor, control in controls.items():
        try:
            out["gpus"] += [{"vendor": vendor, **row} for row in control.query()]
        except Exception as exc:
            out["errors"].append(f"{vendor}: {exc}")
    if not controls:
        out["note"] = "no GPU with a hardware-control plugin was detected"
    return out


def _frequency(block: dict[str, Any], where: str) -> dict[str, Any]:
    freq = dict(block.get("frequency") or {})
    out: dict[str, Any] = {}
    for key in ("gpu_clock_mhz", "mem_clock_mhz"):
        value = freq.get(key)
        if value is not None:
            pair = list(value) if isinstance(value, list | tuple) else [value, value]
            if len(pair) != 2 or not all(isinstance(v, int | float) and v > 0 for v in pair) or pair[0] > pair[1]:
                raise HardwareControlError(f"{where}.frequency.{key}: give MHz or [min, max], got {value!r}")
            out[key] = [int(pair[0]), int(pair[1])]
    for key in ("gpu_clock_level", "mem_clock_level"):
        if freq.get(key) is not None:
            out[key] = freq[key]
    return out


def _one(block: dict[str, Any] | None, where: str) -> dict[str, Any]:
    if not block:
        return {}
    out = _frequency(block, where)
    limit = (block.get("power") or {}).get("limit_watts")
    if limit is not None:
        if not isinstance(limit, int | float) or limit <= 0:
            raise HardwareControlError(f"{where}.power.limit_watts: give watts > 0, got {limit!r}")
        out["power_limit_w"] = float(limit)
    return out


def per_gpu_settings(hardware: dict[str, Any], indices: list[int]) -> dict[int, dict[str, Any]]:
    """AMD Magpie's ``default`` overlaid by ``per_gpu[<index>]``, flattened, for each GPU index."""
    per_gpu = {int(k): v for k, v in (hardware.get("per_gpu") or {}).items()}
    default = _one(hardware.get("default"), "gpu.hardware.default")
    return {i: {**default, **_one(per_gpu.get(i), f"gpu.hardware.per_gpu.{i}")} for i in indices}


def _asks_anything(hardware: dict[str, Any]) -> bool:
    blocks = [hardware.get("default"), *(hardware.get("per_gpu") or {}).values()]
    return any(_one(block, "gpu.hardware") for block in blocks)


def _vendor_of(index: int, gpus: list[Any]) -> str | None:
    return next((g.vendor for g in gpus if g.index == index), None)


@contextlib.contextmanager
def applied(hardware: dict[str, Any] | None, indices: list[int] | None = None) -> Iterator[dict[str, Any] | None]:
    """Apply ``gpu.hardware`` for the duration of the block (no-op unless ``enabled: true``)."""
    global _ACTIVE
    if not hardware or not hardware.get("enabled") or not _asks_anything(hardware):
        yield None  # AMD Magpie's default config.yaml enables the block with every setting null
        return
    from magpie_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    gpus = manager.detect_gpus()
    targets = indices if indices else [g.index for g in gpus]
    if not targets:
        raise HardwareControlError("gpu.hardware.enabled: no GPU detected to apply it to")
    wanted = per_gpu_settings(hardware, targets)
    done: list[tuple[Any, int, dict[str, Any]]] = []
    complete = False
    try:
        for index, settings in wanted.items():
            vendor = _vendor_of(index, gpus)
            control = manager.first("magpie_gpu_hardware_control", vendor=vendor or "")
            if control is None:
                raise HardwareControlError(f"gpu.hardware: no plugin controls GPU {index} (vendor {vendor!r})")
            if settings:
                done.append((control, index, control.apply(index, settings)))
        complete = True
        _ACTIVE = {"settings": {str(i): s for i, s in wanted.items()}, "restore": _restores(hardware)}
        yield _ACTIVE
    finally:
        _ACTIVE = None
        if _restores(hardware) or not complete:  # a half-applied set is always undone
            _restore_all(done)


def _restores(hardware: dict[str, Any]) -> bool:
    return bool(hardware.get("reset_after_benchmark", True))


def _restore_all(done: list[tuple[Any, int, dict[str, Any]]]) -> None:
    for control, index, saved in reversed(done):
        try:
            control.restore(index, saved)
        except Exception as exc:  # keep restoring the others; say what stayed changed
            log.error("GPU %d: could not restore its settings: %s", index, exc)
