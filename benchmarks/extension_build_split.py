"""Issue 45: where an inline-CUDA solution's build time goes — the host C++ file or the CUDA file — on real solutions.

    python benchmarks/extension_build_split.py --count 6 --out DIR     # nvcc on the PATH; no GPU needed

Each of the first ``--count`` solutions of benchmarks/kernelbench_pace/ (one per problem) is imported in a process of
its own with a fresh ``TORCH_EXTENSIONS_DIR`` and ``TORCH_CUDA_ARCH_LIST=9.0``, one at a time, so torch's ninja
compiles its ``main.cpp`` (g++ with torch's headers and pybind11) and its ``cuda.cu`` (nvcc). On a machine with a
CPU-only torch the link then fails (no CUDA libraries); the compile steps are what this measures, each from ninja's
own log (``.ninja_log``: start and end of every target). Two compile steps run side by side in a build (ninja), so
a build's CPU cost is their sum and its wall time about the longer one. Writes ``DIR/build_split.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "kernelbench_pace" / "solutions"
IMPORT = (
    "import importlib.util, os, sys; import torch.utils.cpp_extension as c; "
    "c.CUDA_HOME = c.CUDA_HOME or os.environ['CUDA_HOME']; "  # a CPU-only torch leaves it None: compile, not link
    "spec = importlib.util.spec_from_file_location('solution', sys.argv[1]); "
    "spec.loader.exec_module(importlib.util.module_from_spec(spec))"
)


def steps(folder: Path) -> dict[str, float]:
    """Seconds per compiled target of every extension under ``folder`` (ninja's log: start, end in ms, ..., target)."""
    out: dict[str, float] = {}
    for log in folder.glob("*/.ninja_log"):
        for line in log.read_text().splitlines()[1:]:
            start, end, _, target, _ = line.split("\t")
            kind = "cuda" if target.endswith(".cuda.o") else "cpp" if target.endswith(".o") else "link"
            out[kind] = out.get(kind, 0.0) + (int(end) - int(start)) / 1000
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for problem in sorted(HERE.iterdir())[: args.count]:
        solution = sorted(problem.glob("*.py"))[0]
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "TORCH_EXTENSIONS_DIR": tmp, "TORCH_CUDA_ARCH_LIST": "9.0", "MAX_JOBS": "2"}
            env.setdefault("CUDA_HOME", "/usr/local/cuda")  # a CPU-only torch does not look for it
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", IMPORT, str(solution)], env=env, capture_output=True, timeout=900)
            row = {"solution": f"{problem.name}/{solution.name}", "wall_s": round(time.perf_counter() - start, 2)}
            row.update({k: round(v, 2) for k, v in steps(Path(tmp)).items()})
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "build_split.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
