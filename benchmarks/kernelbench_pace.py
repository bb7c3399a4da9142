"""Issue 45: the pace of ``magpie kernelbench run`` on real inline-CUDA solutions (benchmarks/kernelbench_pace/).

    python benchmarks/kernelbench_pace.py --first 50 --out DIR [--wave 16] [--jobs J] [--skip-wave] [--skip-e2e]
    python benchmarks/kernelbench_pace.py --bed --out DIR [--cpu-wave 4 --jobs 2]     # no GPU

``--bed``: the end-to-end run on the PyTorch-only KernelBench bed (benchmarks/kernelbench_bed/) instead, the CPU
goal's set (<= 5 s per solution after the first); ``--cpu-wave N``: the build wave on N generated C++-only
``load_inline`` solutions (g++, no CUDA), for a host without a GPU.

1. **Build wave**: the first ``--wave`` solutions' extensions built twice on fresh caches, ``--jobs`` at a time, in
   the same run on the same files: by a plain script (a process per file that imports it, the way a KernelBench
   script builds ``load_inline`` solutions) and by magpie (``extensions.build_all``, the builds ``kernelbench run``
   starts ahead of its problems). The question of issue 45: is a magpie build wave slower than a plain one?
2. **End to end**: ``magpie kernelbench run`` on the first ``--first`` solutions (a fresh output folder, timing on),
   its wall time, how long problems waited for their builds, and the GPU's busy share sampled by ``nvidia-smi``
   every 200 ms (the idle fraction the issue asks for).

Writes ``DIR/pace.json`` and prints it. Which solutions: :func:`subset`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent / "kernelbench_pace"
BED = Path(__file__).resolve().parent / "kernelbench_bed"
IMPORT = (
    "import importlib.util, sys; spec = importlib.util.spec_from_file_location('solution', sys.argv[1]); "
    "spec.loader.exec_module(importlib.util.module_from_spec(spec))"
)


def subset(first: int, into: Path) -> list[Path]:
    """``first`` solutions with their problems, copied into ``into`` (problems/, solutions/): problems spread evenly
    over the set's (level, number) order, up to 5 solutions each (the issue's "100 problems x 5 solutions" shape;
    the set's first solutions alone would be level 1's matrix multiplications)."""
    by_problem: dict[str, list[Path]] = {}
    for solution in sorted((HERE / "solutions").glob("*/*.py")):
        by_problem.setdefault(solution.parent.name, []).append(solution)
    names = sorted(by_problem)
    step = max(1.0, len(names) / max(1, -(-first // 5)))  # enough problems for `first` at 5 each
    order = [names[int(i * step)] for i in range(int(len(names) / step))] + names  # then any, to fill up
    chosen: list[Path] = []
    for name in dict.fromkeys(order):
        chosen += by_problem[name][:5][: first - len(chosen)]
        if len(chosen) >= first:
            break
    for solution in chosen:
        problem = solution.parent.name
        (into / "problems").mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "problems" / f"{problem}.py", into / "problems" / f"{problem}.py")
        (into / "solutions" / problem).mkdir(parents=True, exist_ok=True)
        shutil.copy(solution, into / "solutions" / problem / solution.name)
    return sorted((into / "solutions").glob("*/*.py"), key=lambda p: (p.parent.name, p.name))


def bed_set(into: Path) -> list[Path]:
    """The KernelBench bed (PyTorch-only: 12 problems, each with an identical copy, an alternative, a 5x slower
    variant and a wrong one) laid out as ``kernelbench run`` reads it: the CPU pace goal's set."""
    for reference in sorted(BED.glob("*/reference.py")):
        name = reference.parent.name
        (into / "problems" / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(reference, into / "problems" / name / "reference.py")
        (into / "solutions" / name).mkdir(parents=True, exist_ok=True)
        for solution in sorted(reference.parent.glob("*.py")):
            if solution.name != "reference.py":
                shutil.copy(solution, into / "solutions" / name / solution.name)
    return sorted((into / "solutions").glob("*/*.py"))


CPU_SOLUTION = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
torch::Tensor relu_{i}(torch::Tensor x) {{
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t k = 0; k < in.numel(); ++k) dst[k] = src[k] > 0.0f ? src[k] : 0.0f;
    return out;
}}
"""
relu = load_inline(name="relu_{i}", cpp_sources=source, functions=["relu_{i}"])


class ModelNew(nn.Module):
    def forward(self, x):
        return relu.relu_{i}(x)
'''


def cpu_wave_files(count: int, into: Path) -> list[Path]:
    """``count`` C++-only ``load_inline`` solutions (g++ and torch's headers, no CUDA): a build wave on a CPU host."""
    into.mkdir(parents=True, exist_ok=True)
    files = [into / f"relu_{i}.py" for i in range(count)]
    for i, file in enumerate(files):
        file.write_text(CPU_SOLUTION.format(i=i))
    return files


def plain_wave(files: list[Path], root: Path, jobs: int) -> dict[str, float]:
    def build(path: Path) -> bool:
        env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(root / f"{path.parent.name}-{path.stem}")}
        done = subprocess.run([sys.executable, "-c", IMPORT, str(path)], cwd=path.parent, env=env, capture_output=True)
        return done.returncode == 0

    start = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        ok = list(pool.map(build, files))
    return {"seconds": time.perf_counter() - start, "built": sum(ok), "failed": len(ok) - sum(ok)}


def magpie_wave(files: list[Path], root: Path, jobs: int) -> dict[str, float]:
    from magpie_kernels_pytorch.extensions import build_all

    start = time.perf_counter()
    outcomes = build_all(files, root, jobs)
    built = sum(o.status.value == "passed" for o in outcomes)
    return {"seconds": time.perf_counter() - start, "built": built, "failed": len(outcomes) - built}


class GpuSampler:
    """``nvidia-smi`` utilization every 200 ms in the background (None where there is no nvidia-smi)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        argv = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "200"]
        self.proc = subprocess.Popen(argv, stdout=path.open("w")) if shutil.which("nvidia-smi") else None

    def stop(self) -> dict[str, float] | None:
        if self.proc is None:
            return None
        self.proc.terminate()
        self.proc.wait()
        values = [int(v) for v in self.path.read_text().split() if v.isdigit()]
        busy = [v for v in values if v > 0]
        return {"samples": len(values), "busy_share": len(busy) / len(values) if values else 0.0}


def end_to_end(set_dir: Path, out: Path, build_jobs: int | None) -> dict[str, object]:
    """The run as a user starts it (tables as problems finish); when each problem's table appeared, from which the
    pace after the first problem; the rows from the summary file."""
    sampler = GpuSampler(out / "gpu_util.txt")
    names = {p.stem if p.suffix == ".py" else p.name for p in (set_dir / "problems").iterdir()}
    argv = [sys.executable, "-m", "magpie_core", "kernelbench", "run", str(set_dir / "problems")]
    argv += ["--solutions", str(set_dir / "solutions"), "-o", str(out / "e2e"), "--no-html"]
    argv += ["--build-jobs", str(build_jobs)] if build_jobs else []
    start, finished = time.perf_counter(), []
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=(out / "e2e_stderr.txt").open("w"), text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # a problem's table starts with its name as the title
        if line.strip() in names:
            finished.append((line.strip(), time.perf_counter() - start))
    returncode = proc.wait()
    seconds = time.perf_counter() - start
    gpu = sampler.stop()
    stderr = (out / "e2e_stderr.txt").read_text()
    waited = re.search(r"problems waited (\d+) s", stderr)
    rows = json.loads((out / "e2e" / "kernelbench_summary.json").read_text())["rows"]
    first = finished[0][1] if finished else None
    per_problem = {name: [r for r in rows if r["problem"] == name] for name, _ in finished}
    later = len(rows) - len(per_problem[finished[0][0]]) if finished else 0
    verdicts: dict[str, int] = {}
    for row in rows:
        key = row.get("verdict") or ("not compiled" if not row["compiled"] else "wrong" if not row["correct"] else "-")
        verdicts[key] = verdicts.get(key, 0) + 1
    return {
        "exit": returncode,
        "seconds": seconds,
        "first_problem_s": first,
        "per_solution_after_first_s": (seconds - first) / later if first is not None and later else None,
        "problem_finished_s": finished,
        "solutions": len(rows),
        "problems": len({r["problem"] for r in rows}),
        "waited_for_builds_s": int(waited.group(1)) if waited else None,
        "gpu": gpu,
        "verdicts": verdicts,
        "build_s_sum": sum(r.get("build_s") or 0 for r in rows),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first", type=int, default=50)
    parser.add_argument("--wave", type=int, default=16)
    parser.add_argument("--jobs", type=int, help="builds at a time: waves, --build-jobs")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-wave", action="store_true")
    parser.add_argument("--skip-e2e", action="store_true")
    parser.add_argument("--bed", action="store_true", help="the PyTorch-only KernelBench bed instead (CPU goal)")
    parser.add_argument("--cpu-wave", type=int, default=0, help="the build wave on N C++-only solutions, no GPU")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    files = bed_set(args.out / "set") if args.bed else subset(args.first, args.out / "set")
    jobs = args.jobs or max(1, (os.cpu_count() or 2) // 2)  # the waves' count when not given: half the CPUs
    result: dict[str, object] = {"cpus": os.cpu_count(), "jobs": args.jobs, "solutions": len(files)}
    if not args.skip_wave and (args.cpu_wave or not args.bed):
        wave = cpu_wave_files(args.cpu_wave, args.out / "cpu_wave") if args.cpu_wave else files[: args.wave]
        # magpie first: the plain script then finds the compiler's files in the page cache, not magpie
        result["wave_magpie"] = magpie_wave(wave, args.out / "wave_magpie", jobs)
        result["wave_plain"] = plain_wave(wave, args.out / "wave_plain", jobs)
        print(json.dumps(result), flush=True)
    if not args.skip_e2e:
        result["end_to_end"] = end_to_end(args.out / "set", args.out, args.jobs)
    (args.out / "pace.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
