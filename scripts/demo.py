"""`make demo`: magpie's main jobs on bundled inputs, on this machine's CPU.

1. analyze: two vector-add kernels (PyTorch, Triton) through compile → correctness → timing;
2. compare: five softmax variants (eager, manual, torch.compile, Triton, one deliberately wrong);
3. gap analysis of a real bundled PyTorch profiler trace (when the trace engine is installed).

Every step runs the real `magpie` CLI. The wrong softmax variant is expected to be
rejected, so `compare` exits 1 by design; any other outcome fails the demo.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "data" / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def magpie(*args: str) -> int:
    cmd = [sys.executable, "-m", "magpie_core", *args]
    print(f"\n$ magpie {' '.join(args)}", flush=True)
    return subprocess.call(cmd, cwd=ROOT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", default="magpie_runs/demo")
    out = parser.parse_args().output_dir
    failures = []
    if magpie("-o", out, "analyze", "-k", "examples/vector_add/analyze.yaml") != 0:
        failures.append("analyze vector_add")
    if magpie("-o", out, "compare", "-k", "examples/softmax/compare.yaml") != 1:
        failures.append("compare softmax (expected exit 1: the partial_write variant must be rejected)")
    if TRACE.exists():
        if magpie("gap", str(TRACE), "-o", f"{out}/gap_analysis", "--top-k", "10") != 0:
            failures.append("gap analysis")
    else:
        print(f"\n(skipping gap analysis: {TRACE} not found)")
    print()
    if failures:
        print("demo FAILED: " + "; ".join(failures))
        return 1
    print(f"demo OK: workspaces under {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
