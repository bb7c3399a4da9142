"""Nsight Compute: run a command under ``ncu``, read ``--csv --page raw``, normalize per kernel.

The run exports a report (``report.ncu-rep``, kept for the Nsight Compute UI),
then ``ncu --import report.ncu-rep --csv --page raw --print-units base`` turns
it into one CSV row per profiled launch (saved as ``ncu_raw.csv``): a header
row of column names, a units row, then quoted values. Launches are grouped by
kernel name into :class:`~magpie_core.reports.KernelCounters`, every quantity
per launch (mean over launches).

What ncu does to the GPU unless told otherwise (recorded in the report's notes):
it locks clocks to base (``--clock-control base``) and flushes all caches
before each profiled launch (``--cache-control all``), and replays each kernel
once per metric pass. Options (``performance.ncu: {...}``): ``clock_control``
(base | none), ``cache_control`` (all | none), ``metrics`` (extra metric names),
``kernel_name`` (``-k``, e.g. ``regex:matmul``), ``launch_skip``, ``launch_count``,
``extra_args``, ``timeout_seconds``.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from magpie_core.interfaces import Profiler
from magpie_core.reports import KernelCounters, ToolInfo
from magpie_core.runtime.processes import run_command, tail

TIME = "gpu__time_duration.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
#: SASS floating-point instructions executed per thread, and the FLOPs each is worth
FLOP_METRICS = {
    f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum": (2 if op == "fma" else 1)
    for p in ("f", "d", "h")
    for op in ("add", "mul", "fma")
}
DEFAULT_METRICS = [TIME, DRAM_READ, DRAM_WRITE, SM_PCT, MEMORY_PCT, DRAM_PCT, OCCUPANCY, *FLOP_METRICS]

_SCALE = {
    # time → nanoseconds
    "nsecond": 1.0,
    "ns": 1.0,
    "usecond": 1e3,
    "us": 1e3,
    "msecond": 1e6,
    "ms": 1e6,
    "second": 1e9,
    "s": 1e9,
    # bytes → bytes (ncu's prefixes are decimal)
    "byte": 1.0,
    "kbyte": 1e3,
    "mbyte": 1e6,
    "gbyte": 1e9,
    "tbyte": 1e12,
}


def _value(text: str, unit: str) -> float | None:
    text = text.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan", "(!) n/a"):
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number * _SCALE.get(unit.strip().lower(), 1.0)


def _rows(text: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """Launch rows (column → value) and the unit of each column, from raw or details CSV."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    if not table:
        return [], {}
    header = table[0]
    if "Metric Name" in header and "Metric Value" in header:  # --page details: one row per metric
        pivot: dict[str, dict[str, str]] = {}
        units: dict[str, str] = {}
        col = {name: i for i, name in enumerate(header)}
        for row in table[1:]:
            if len(row) != len(header):
                continue
            launch = pivot.setdefault(row[col["ID"]], {k: row[col[k]] for k in ("ID", "Kernel Name") if k in col})
            launch[row[col["Metric Name"]]] = row[col["Metric Value"]]
            units[row[col["Metric Name"]]] = row[col["Metric Unit"]] if "Metric Unit" in col else ""
        return list(pivot.values()), units
    has_units = len(table) > 1 and not (table[1][0].strip().isdigit())
    units = dict(zip(header, table[1], strict=False)) if has_units else {}
    body = table[2:] if has_units else table[1:]
    return [dict(zip(header, row, strict=False)) for row in body if len(row) == len(header)], units


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def parse_ncu_csv(text: str) -> list[KernelCounters]:
    """``ncu --csv --page raw`` (or ``--page details``) output → one row per kernel name."""
    rows, units = _rows(text)
    groups: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        name = row.get("Kernel Name") or row.get("Function Name") or "?"
        groups.setdefault(name, []).append(row)
    result = []
    for name, launches in groups.items():

        def metric(key: str, launches: list[dict[str, str]] = launches) -> list[float | None]:
            return [_value(r.get(key, ""), units.get(key, "")) for r in launches]

        times_ns = metric(TIME)
        read, write = _mean(metric(DRAM_READ)), _mean(metric(DRAM_WRITE))
        flop_parts = {k: _mean(metric(k)) for k in FLOP_METRICS if any(k in r for r in launches)}
        flops = (
            sum((v or 0.0) * FLOP_METRICS[k] for k, v in flop_parts.items())
            if any(v is not None for v in flop_parts.values())
            else None
        )
        traffic = (read or 0.0) + (write or 0.0)
        pct = {
            label: value
            for label, key in (("compute", SM_PCT), ("memory", MEMORY_PCT), ("dram", DRAM_PCT))
            if (value := _mean(metric(key))) is not None
        }
        mean_ns = _mean(times_ns)
        raw: dict[str, Any] = {
            key: _mean(metric(key))
            for key in sorted({k for r in launches for k in r})
            if "__" in key and _mean(metric(key)) is not None
        }
        for key in ("Block Size", "Grid Size", "Device", "CC"):
            if launches[0].get(key):
                raw[key.lower().replace(" ", "_")] = launches[0][key]
        result.append(
            KernelCounters(
                kernel_name=name,
                invocations=len(launches),
                time_us=mean_ns / 1e3 if mean_ns is not None else None,
                total_time_us=sum(t for t in times_ns if t is not None) / 1e3 if mean_ns is not None else None,
                dram_read_bytes=read,
                dram_write_bytes=write,
                flops=flops,
                arithmetic_intensity=(flops / traffic) if flops is not None and traffic > 0 else None,
                pct_of_peak=pct,
                achieved_occupancy_pct=_mean(metric(OCCUPANCY)),
                source="ncu",
                raw=raw,
            )
        )
    return result


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/usr/local").glob("cuda*/bin/ncu"), reverse=True):
        return str(candidate)
    return None


class NcuProfiler(Profiler):
    name = "ncu"
    description = "Nsight Compute: per-kernel time, DRAM bytes, FLOPs, % of peak, achieved occupancy"

    def command(self, argv: Sequence[str], report: Path, options: dict[str, Any]) -> list[str]:
        ncu = find_ncu() or "ncu"
        metrics = [*DEFAULT_METRICS, *[m for m in options.get("metrics", []) if m not in DEFAULT_METRICS]]
        cmd = [
            ncu,
            "--export",
            str(report),
            "--force-overwrite",
            "--target-processes",
            "all",
            "--metrics",
            ",".join(metrics),
            "--clock-control",
            str(options.get("clock_control", "base")),
            "--cache-control",
            str(options.get("cache_control", "all")),
        ]
        if options.get("profiler_ranges"):
            cmd += ["--profile-from-start", "off"]
        if options.get("kernel_name"):
            cmd += ["--kernel-name", str(options["kernel_name"])]
        for key, flag in (("launch_skip", "--launch-skip"), ("launch_count", "--launch-count")):
            if options.get(key) is not None:
                cmd += [flag, str(options[key])]
        return [*cmd, *[str(a) for a in options.get("extra_args", [])], *argv]

    def profile(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: dict[str, str],
        out_dir: Path,
        options: dict[str, Any] | None = None,
    ) -> list[KernelCounters]:
        options = options or {}
        ncu = find_ncu()
        if ncu is None:
            raise RuntimeError("ncu not found: install Nsight Compute (it ships with the CUDA toolkit)")
        out_dir.mkdir(parents=True, exist_ok=True)
        report = out_dir / "report"
        timeout = float(options.get("timeout_seconds", 900))
        run = run_command(
            self.command(argv, report, options), cwd=cwd, env=env, timeout_s=timeout, log_path=out_dir / "ncu.log"
        )
        rep = report.with_suffix(".ncu-rep")
        if not rep.exists():
            hint = " (no permission for GPU counters: see ERR_NVGPUCTRPERM)" if "ERR_NVGPUCTRPERM" in run.output else ""
            raise RuntimeError(f"ncu wrote no report{hint}: {run.describe()}\n{tail(run.output, 15)}")
        export = run_command(
            [ncu, "--import", str(rep), "--csv", "--page", "raw", "--print-units", "base"],
            cwd=out_dir,
            timeout_s=timeout,
        )
        (out_dir / "ncu_raw.csv").write_text(export.output)
        counters = parse_ncu_csv(export.output)
        if not counters:
            raise RuntimeError(f"ncu profiled no kernels ({run.describe()})\n{tail(run.output, 15)}")
        return counters

    def notes(self, options: dict[str, Any] | None = None) -> list[str]:
        options = options or {}
        notes = []
        if str(options.get("clock_control", "base")) != "none":
            notes.append(
                "ncu locked the GPU clocks to base (--clock-control base, its default): its times are at base "
                "clock; set performance.ncu.clock_control: none to leave clocks alone"
            )
        if str(options.get("cache_control", "all")) != "none":
            notes.append(
                "ncu flushed all caches before each profiled launch (--cache-control all, its default): "
                "cold-cache numbers; performance.ncu.cache_control: none keeps caches warm"
            )
        notes.append(
            "ncu counters are per launch (mean over the profiled launches); FLOPs count FP16/32/64 add/mul/fma "
            "SASS instructions (fma = 2), tensor-core math is not counted"
        )
        return notes

    def tools(self) -> list[ToolInfo]:
        ncu = find_ncu()
        return [ToolInfo(name="ncu", path=ncu, found=bool(ncu))]
