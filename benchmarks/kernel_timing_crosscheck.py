"""Cross-check magpie's GPU kernel timing against triton.testing.do_bench and Nsight Compute.

Run on a CUDA machine (docs/benchmarks/kernel_timing.md has the commands and results):

    python benchmarks/kernel_timing_crosscheck.py --out crosscheck.json

For each kernel it reports, in microseconds, medians of:
- magpie: the core timing method with the CUDA event timer (batches behind a spin guard,
  rotating input copies for cold caches) — what `magpie analyze/compare` report;
- do_bench: triton.testing.do_bench(return_mode="median"), which flushes L2 before each launch;
- ncu: Nsight Compute's gpu__time_duration.sum per launch (--clock-control none, default cache control: flush);
- naive: one launch between two events, no guard (the pitfall magpie avoids).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [
    str(ROOT / "examples" / "softmax"),
    str(ROOT / "examples" / "gemm"),
    str(ROOT / "examples" / "vector_add"),
]


def kernels() -> dict[str, tuple]:
    """name -> (callable, inputs factory, ncu kernel-name regex)."""
    import gemm
    import gemm_triton
    import softmax
    import softmax_triton
    import vector_add_triton

    def small_add_inputs():
        return [torch.randn(1 << 22), torch.randn(1 << 22)]

    return {
        "softmax_eager_8192x4096": (softmax.softmax_eager, softmax.get_inputs_large, "regex:(?i)softmax"),
        "softmax_triton_8192x4096": (softmax_triton.softmax_triton, softmax.get_inputs_large, "regex:softmax_kernel"),
        "gemm_cublas_fp16_4096": (gemm.matmul_torch, gemm.get_inputs, "regex:gemm|nvjet|sm90|cutlass"),
        "gemm_triton_fp16_4096": (gemm_triton.matmul_triton, gemm.get_inputs, "regex:matmul_kernel"),
        "vector_add_triton_4M": (vector_add_triton.add_triton, small_add_inputs, "regex:add_kernel"),
    }


def on_gpu(factory):
    torch.manual_seed(0)
    return [t.cuda() for t in factory()]


def magpie_median(fn, inputs, graph_replay: bool = False) -> dict:
    from magpie_kernels_pytorch.timers import CudaClock

    from magpie_core.measurement.stats import summarize
    from magpie_core.measurement.timing import TimingSettings, input_copies, measure

    settings = TimingSettings()
    clock = CudaClock(torch.device("cuda"), graph_replay=graph_replay)
    nbytes = sum(t.numel() * t.element_size() for t in inputs)
    copies = input_copies(nbytes, clock.cache_bytes, settings)
    sets = [[t.clone() for t in inputs] for _ in range(copies)]
    run = measure(clock, lambda i: fn(*sets[i % copies]), settings, copies)
    stats = summarize(run.samples_us, run.stop_reason)
    return {
        "median_us": stats.median,
        "ci95": [stats.ci95_low, stats.ci95_high],
        "samples": stats.samples,
        "batch": run.batch_size,
        "copies": copies,
        "notes": run.notes,
    }


def do_bench_median(fn, inputs) -> float:
    import triton.testing

    return triton.testing.do_bench(lambda: fn(*inputs), warmup=100, rep=2000, return_mode="median") * 1000


def naive_median(fn, inputs, n: int = 300) -> float:
    times = []
    for _ in range(20):
        fn(*inputs)
    torch.cuda.synchronize()
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*inputs)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000)
    return statistics.median(times)


def ncu_median(name: str, regex: str) -> dict:
    ncu = shutil.which("ncu")
    if not ncu:
        return {"error": "ncu not on PATH"}
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--metrics",
        "gpu__time_duration.sum",
        "--csv",
        "--page",
        "raw",
        "-k",
        regex,
        "--launch-skip",
        "10",
        "--launch-count",
        "40",
        sys.executable,
        __file__,
        "--ncu-target",
        name,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    rows = [line for line in proc.stdout.splitlines() if line.startswith('"')]
    if not rows:
        return {"error": f"no ncu rows (exit {proc.returncode}): {proc.stderr[-800:]}{proc.stdout[-800:]}"}
    table = list(csv.reader(io.StringIO("\n".join(rows))))
    header, units, data = table[0], table[1], table[2:]
    col = header.index("gpu__time_duration.sum")
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(units[col], 1e-3)
    values = [float(r[col].replace(",", "")) * scale for r in data]
    kname = header.index("Kernel Name") if "Kernel Name" in header else None
    return {
        "median_us": statistics.median(values),
        "launches": len(values),
        "unit": units[col],
        "kernel": data[0][kname] if kname is not None else None,
        "command": " ".join(cmd[:-3]),
    }


def ncu_target(name: str) -> None:
    fn, factory, _ = kernels()[name]
    inputs = on_gpu(factory)
    for _ in range(60):
        fn(*inputs)
    torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="crosscheck.json")
    parser.add_argument("--ncu-target")
    parser.add_argument("--no-ncu", action="store_true")
    args = parser.parse_args()
    if args.ncu_target:
        ncu_target(args.ncu_target)
        return
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    import triton

    results["triton"] = triton.__version__
    for name, (fn, factory, regex) in kernels().items():
        inputs = on_gpu(factory)
        row = {"magpie": magpie_median(fn, inputs), "magpie_repeat": magpie_median(fn, inputs)}
        row["magpie_graph_replay"] = magpie_median(fn, inputs, graph_replay=True)
        row["do_bench_us"] = do_bench_median(fn, inputs)
        row["naive_single_launch_us"] = naive_median(fn, inputs)
        if not args.no_ncu:
            row["ncu"] = ncu_median(name, regex)
        results[name] = row
        print(name, json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
