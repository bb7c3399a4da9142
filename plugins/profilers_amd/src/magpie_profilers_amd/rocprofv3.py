"""rocprofv3 ``--kernel-trace``: kernel durations per dispatch, grouped by kernel name.

Runs ``rocprofv3 --kernel-trace --output-format csv -d OUT -- argv`` and reads
every ``*kernel_trace.csv`` it wrote (one per process): ``Kernel_Name``,
``Start_Timestamp`` and ``End_Timestamp`` (ns) per dispatch, plus the kernel's
resources (VGPRs, SGPRs, LDS, scratch) where the ROCm release writes them.
Only times: no counters, so bytes, FLOPs and % of peak stay empty
(``rocprof-compute`` has those). Options (``performance.rocprofv3: {...}``):
``kernel_include_regex``, ``extra_args``, ``timeout_seconds``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from magpie_core.interfaces import Profiler
from magpie_core.reports import KernelCounters, ToolInfo
from magpie_core.runtime.processes import run_command, tail
from magpie_profilers_amd.common import number, read_csv

_RESOURCE_COLUMNS = {
    "VGPR_Count": "vgprs",
    "Accum_VGPR_Count": "agprs",
    "SGPR_Count": "sgprs",
    "LDS_Block_Size": "lds_bytes",
    "Group_Segment_Size": "lds_bytes",
    "Scratch_Size": "scratch_bytes",
    "Private_Segment_Size": "scratch_bytes",
}


def parse_kernel_trace(text: str) -> list[KernelCounters]:
    """One ``*_kernel_trace.csv`` → one row per kernel name (times per dispatch, mean and total)."""
    groups: dict[str, list[dict[str, str]]] = {}
    for row in read_csv(text):
        if row.get("Kind", "KERNEL_DISPATCH") != "KERNEL_DISPATCH" or "Kernel_Name" not in row:
            continue
        groups.setdefault(row["Kernel_Name"], []).append(row)
    result = []
    for name, rows in groups.items():
        durations = [
            end - start
            for r in rows
            if (start := number(r.get("Start_Timestamp"))) is not None
            and (end := number(r.get("End_Timestamp"))) is not None
        ]
        raw: dict[str, Any] = {}
        for column, key in _RESOURCE_COLUMNS.items():
            if (value := number(rows[0].get(column))) is not None:
                raw[key] = value
        dims = ("Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z")
        if all(d in rows[0] for d in dims):
            raw["grid_size"] = [int(number(rows[0][d]) or 0) for d in dims[:3]]
            raw["workgroup_size"] = [int(number(rows[0][d]) or 0) for d in dims[3:]]
        raw["min_us"] = min(durations) / 1e3 if durations else None
        raw["max_us"] = max(durations) / 1e3 if durations else None
        result.append(
            KernelCounters(
                kernel_name=name,
                invocations=len(rows),
                time_us=sum(durations) / len(durations) / 1e3 if durations else None,
                total_time_us=sum(durations) / 1e3 if durations else None,
                source="rocprofv3",
                raw=raw,
            )
        )
    return result


def merge(rows: list[KernelCounters]) -> list[KernelCounters]:
    """Rows of several processes' traces, merged by kernel name."""
    merged: dict[str, KernelCounters] = {}
    for row in rows:
        seen = merged.get(row.kernel_name)
        if seen is None:
            merged[row.kernel_name] = row
            continue
        total = (seen.total_time_us or 0.0) + (row.total_time_us or 0.0)
        seen.invocations += row.invocations
        seen.total_time_us = total
        seen.time_us = total / seen.invocations
    return list(merged.values())


class Rocprofv3Profiler(Profiler):
    name = "rocprofv3"
    description = "rocprofv3 --kernel-trace: per-kernel dispatch durations on AMD GPUs"

    def command(self, argv: Sequence[str], out_dir: Path, options: dict[str, Any]) -> list[str]:
        cmd = [shutil.which("rocprofv3") or "rocprofv3", "--kernel-trace", "--output-format", "csv", "-d", str(out_dir)]
        if options.get("kernel_include_regex"):
            cmd += ["--kernel-include-regex", str(options["kernel_include_regex"])]
        return [*cmd, *[str(a) for a in options.get("extra_args", [])], "--", *argv]

    def profile(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: dict[str, str],
        out_dir: Path,
        options: dict[str, Any] | None = None,
    ) -> list[KernelCounters]:
        options = options or {}
        if not shutil.which("rocprofv3"):
            raise RuntimeError("rocprofv3 not found: install ROCm 6.2 or later (rocprofiler-sdk)")
        out_dir.mkdir(parents=True, exist_ok=True)
        timeout = float(options.get("timeout_seconds", 900))
        run = run_command(
            self.command(argv, out_dir, options),
            cwd=cwd,
            env=env,
            timeout_s=timeout,
            log_path=out_dir / "rocprofv3.log",
        )
        traces = sorted(out_dir.rglob("*kernel_trace.csv"))
        rows = merge([r for path in traces for r in parse_kernel_trace(path.read_text())])
        if not rows:
            raise RuntimeError(f"rocprofv3 traced no kernels ({run.describe()})\n{tail(run.output, 15)}")
        return rows

    def notes(self, options: dict[str, Any] | None = None) -> list[str]:
        return ["rocprofv3 kernel trace: dispatch durations only (no counters); clocks and caches left as they were"]

    def tools(self) -> list[ToolInfo]:
        path = shutil.which("rocprofv3")
        return [ToolInfo(name="rocprofv3", path=path, found=bool(path))]
