"""rocprof-compute (formerly Omniperf): ``profile`` the command, then ``analyze`` it into CSV tables.

1. ``rocprof-compute profile -n magpie -p OUT/workload -- argv`` (replays the
   application once per counter pass);
2. ``rocprof-compute analyze -p <workload dir> --save-dfs OUT/dfs`` writes each
   analysis table as CSV;
3. the *Top Kernels* table (``Kernel_Name, Count, Sum(ns), Mean(ns), Median(ns), Pct``)
   gives per-kernel times, the *System Speed-of-Light* table
   (``Metric, Avg, Unit, Peak, Pct of Peak``) the % of peak, FLOP rate, HBM
   bandwidth and wavefront occupancy.

Speed-of-Light covers the whole workload, so it is attached to the kernel when
the workload has one kernel (helper kernels such as ``__amd_rocclr_*``
aside), else to an extra ``(all kernels)`` row. Options
(``performance.rocprof_compute: {...}``): ``kernel`` (``-k`` filter for analyze),
``extra_args``, ``timeout_seconds``.
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

HELPER_PREFIXES = ("__amd_rocclr_",)


def parse_top_kernels(text: str) -> list[KernelCounters]:
    rows = []
    for row in read_csv(text):
        name = " ".join(row.get("Kernel_Name", "").split())  # the tool wraps long names inside the quotes
        if not name:
            continue
        count = int(number(row.get("Count")) or 0) or 1
        mean_ns, total_ns = number(row.get("Mean(ns)")), number(row.get("Sum(ns)"))
        rows.append(
            KernelCounters(
                kernel_name=name,
                invocations=count,
                time_us=mean_ns / 1e3 if mean_ns is not None else None,
                total_time_us=total_ns / 1e3 if total_ns is not None else None,
                source="rocprof-compute",
                raw={"median_us": (number(row.get("Median(ns)")) or 0) / 1e3, "pct_of_total": number(row.get("Pct"))},
            )
        )
    return rows


def parse_speed_of_light(text: str) -> dict[str, dict[str, Any]]:
    """Metric name → value, unit, peak and % of peak (``N/A`` → None)."""
    table = {}
    for row in read_csv(text):
        metric = row.get("Metric")
        if not metric:
            continue
        value = number(row.get("Avg", row.get("Value")))
        table[metric] = {
            "value": value,
            "unit": row.get("Unit"),
            "peak": number(row.get("Peak")),
            "pct_of_peak": number(row.get("Pct of Peak", row.get("PoP"))),
        }
    return table


def apply_speed_of_light(row: KernelCounters, sol: dict[str, dict[str, Any]]) -> KernelCounters:
    def pct(metric: str) -> float | None:
        return (sol.get(metric) or {}).get("pct_of_peak")

    compute = [p for m, e in sol.items() if ("FLOPs" in m or "IOPs" in m) and (p := e.get("pct_of_peak")) is not None]
    if compute:
        row.pct_of_peak["compute"] = max(compute)
    if (hbm := pct("HBM Bandwidth")) is not None:
        row.pct_of_peak["dram"] = hbm
    row.achieved_occupancy_pct = pct("Wavefront Occupancy")
    rate = sum(
        (e.get("value") or 0.0)
        for m, e in sol.items()
        if ("FLOPs" in m) and str(e.get("unit", "")).lower().startswith("gflop")
    )
    hbm_gbs = (sol.get("HBM Bandwidth") or {}).get("value")
    if row.time_us and rate:
        row.flops = rate * 1e9 * row.time_us * 1e-6
    if row.time_us and hbm_gbs:
        row.raw["hbm_bytes"] = hbm_gbs * 1e9 * row.time_us * 1e-6
        if row.flops:
            row.arithmetic_intensity = row.flops / row.raw["hbm_bytes"]
    row.raw["speed_of_light"] = sol
    return row


def parse_analysis(dfs_dir: Path) -> list[KernelCounters]:
    """The CSV tables ``analyze --save-dfs`` wrote → per-kernel rows."""
    top = next(iter(sorted(dfs_dir.rglob("*Top_Kernel*.csv"))), None)
    sol_file = next(iter(sorted(dfs_dir.rglob("*Speed-of-Light*.csv"))), None)
    rows = parse_top_kernels(top.read_text()) if top else []
    sol = parse_speed_of_light(sol_file.read_text()) if sol_file else {}
    if sol:
        mine = [r for r in rows if not r.kernel_name.startswith(HELPER_PREFIXES)]
        if len(mine) == 1:
            apply_speed_of_light(mine[0], sol)
        else:
            total = sum(r.total_time_us or 0.0 for r in rows)
            count = sum(r.invocations for r in rows) or 1
            rows.append(
                apply_speed_of_light(
                    KernelCounters(
                        kernel_name="(all kernels)",
                        invocations=count,
                        time_us=total / count if total else None,
                        total_time_us=total or None,
                        source="rocprof-compute",
                    ),
                    sol,
                )
            )
    return rows


class RocprofComputeProfiler(Profiler):
    name = "rocprof-compute"
    description = "rocprof-compute profile + analyze: per-kernel time, Speed-of-Light % of peak, FLOPs, occupancy"

    def profile(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: dict[str, str],
        out_dir: Path,
        options: dict[str, Any] | None = None,
    ) -> list[KernelCounters]:
        options = options or {}
        tool = shutil.which("rocprof-compute")
        if not tool:
            raise RuntimeError("rocprof-compute not found: install ROCm's rocprofiler-compute")
        out_dir.mkdir(parents=True, exist_ok=True)
        timeout = float(options.get("timeout_seconds", 1800))
        workload = out_dir / "workload"
        extra = [str(a) for a in options.get("extra_args", [])]
        prof = run_command(
            [tool, "profile", "-n", "magpie", "-p", str(workload), *extra, "--", *argv],
            cwd=cwd,
            env=env,
            timeout_s=timeout,
            log_path=out_dir / "rocprof-compute.log",
        )
        perf = next(iter(sorted(workload.rglob("pmc_perf.csv"))), None)
        if perf is None:
            raise RuntimeError(
                f"rocprof-compute profile wrote no pmc_perf.csv ({prof.describe()})\n{tail(prof.output, 15)}"
            )
        dfs = out_dir / "dfs"
        analyze = [tool, "analyze", "-p", str(perf.parent), "--save-dfs", str(dfs)]
        if options.get("kernel") is not None:
            analyze += ["-k", str(options["kernel"])]
        done = run_command(analyze, cwd=cwd, env=env, timeout_s=timeout, log_path=out_dir / "rocprof-compute.log")
        rows = parse_analysis(dfs)
        if not rows:
            raise RuntimeError(
                f"rocprof-compute analyze produced no kernel table ({done.describe()})\n{tail(done.output, 15)}"
            )
        return rows

    def notes(self, options: dict[str, Any] | None = None) -> list[str]:
        return [
            "rocprof-compute replays the application once per counter pass; Speed-of-Light peaks use the "
            "maximum clock rocminfo reports, so % of peak can read low"
        ]

    def tools(self) -> list[ToolInfo]:
        path = shutil.which("rocprof-compute")
        return [ToolInfo(name="rocprof-compute", path=path, found=bool(path))]
