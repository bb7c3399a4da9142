"""How often does ``magpie compare`` give a false verdict on a busy machine, and does it still find real ones?

Each run is one compare of four candidates of known relative cost (benchmarks/data/verdict_kernels.py):
the baseline, an identical twin (A/A), 1.1x and 3x the work. A false verdict is the twin called FASTER or
SLOWER, or a slower candidate called FASTER (or SAME, for 3x). The load injector (tests/helpers/load_injector.py)
alternates busy and idle phases of a few hundred ms on every core during the runs that ask for it.

    python benchmarks/verdicts_under_load.py --runs 50 --load --out docs/benchmarks/verdicts_under_load.json

It prints and writes (JSON) per setting: the verdict counts per candidate, the false-verdict and UNSTABLE
rates, how often the 1.1x and 3x candidates were found SLOWER, and the time per compare with the timing
workers' start-up share (wall time minus the timing budget).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from magpie_core.config.kernel import KernelConfig, KernelConfigFile  # noqa: E402
from magpie_core.measurement.stats import speedup  # noqa: E402
from magpie_core.pipelines.compare import compare  # noqa: E402
from tests.helpers.load_injector import injected_load  # noqa: E402

KERNELS = ROOT / "benchmarks" / "data"
CANDIDATES = {"twin": 1.0, "ten_percent": 1.1, "triple": 3.0}


def kernel_file(device: str, budget_s: float) -> KernelConfigFile:
    def k(name: str) -> KernelConfig:
        return KernelConfig(id=name, type="pytorch", entry=f"verdict_kernels.py:{name}", device=device)

    return KernelConfigFile(
        kernels=[k("base"), *(k(name) for name in CANDIDATES)],
        performance={"budget_seconds": budget_s, "warmup_ms": 20},
    )


def is_false(name: str, verdict: str) -> bool:
    if name == "twin":
        return verdict in ("FASTER", "SLOWER")
    if name == "triple":
        return verdict in ("FASTER", "SAME")
    return verdict == "FASTER"  # 10 %: SAME is a miss at min_effect 5 %, not a false claim of speed


@contextmanager
def gpu_hog() -> Iterator[None]:
    """Another process multiplying large matrices on the same GPU (benchmarks/gpu_hog.py)."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "gpu_hog.py"), "--seconds", "900"])
    try:
        time.sleep(5)  # CUDA context and first products before the measurement starts
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def pooled_verdict(report: object, name: str, min_effect: float) -> str:
    """What magpie said before interleaved blocks: all samples pooled, FASTER/SLOWER by the bootstrap
    interval and min_effect, SAME otherwise (there was no UNSTABLE)."""
    results = {r.kernel_id: r for r in report.results.kernel_results}  # type: ignore[attr-defined]
    base, cand = results["base"].performance.samples_us, results[name].performance.samples_us
    if not base or not cand:
        return "UNRANKED"
    verdict = speedup(base, cand, min_effect=min_effect).verdict.value
    return verdict if verdict in ("FASTER", "SLOWER") else "SAME"


def one_setting(args: argparse.Namespace, load: bool) -> dict:
    verdicts: dict[str, Counter] = {name: Counter() for name in CANDIDATES}
    pooled: dict[str, Counter] = {name: Counter() for name in CANDIDATES}
    walls, timing_s, overheads = [], [], []
    with injected_load() if load else nullcontext(), gpu_hog() if args.gpu_hog else nullcontext():
        for run in range(args.runs):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.monotonic()
                report = compare(
                    kernel_file(args.device, args.budget),
                    config_dir=KERNELS,
                    output_dir=Path(out),
                    min_effect=args.min_effect,
                    timing=args.timing,
                )
                wall = time.monotonic() - t0
            by_id = {e.kernel_id: e.verdict for e in report.ranking}
            for name in CANDIDATES:
                verdicts[name][by_id.get(name) or "UNRANKED"] += 1
                pooled[name][pooled_verdict(report, name, args.min_effect)] += 1
            walls.append(wall)
            timed = (report.stability or {}).get("elapsed_s")
            if timed is not None:
                timing_s.append(timed)
                overheads.append((wall - timed) / len(report.ranking))
            print(f"  run {run + 1}/{args.runs} ({'load' if load else 'quiet'}): {by_id} in {wall:.1f} s", flush=True)
    total = args.runs * len(CANDIDATES)
    false = sum(n for name, c in verdicts.items() for v, n in c.items() if is_false(name, v))
    unstable = sum(c["UNSTABLE"] for c in verdicts.values())
    return {
        "load": load,
        "gpu_hog": args.gpu_hog,
        "timing": args.timing,
        "device": args.device,
        "runs": args.runs,
        "verdicts": {name: dict(c) for name, c in verdicts.items()},
        "pooled_verdicts_before_blocks": {name: dict(c) for name, c in pooled.items()},
        "pooled_false_verdicts": sum(n for name, c in pooled.items() for v, n in c.items() if is_false(name, v)),
        "false_verdicts": false,
        "false_verdict_rate": false / total,
        "unstable_rate": unstable / total,
        "found_slower": {name: verdicts[name]["SLOWER"] / args.runs for name in ("ten_percent", "triple")},
        "median_wall_s": sorted(walls)[len(walls) // 2],
        "median_blocks_s": sorted(timing_s)[len(timing_s) // 2] if timing_s else None,
        "median_overhead_per_candidate_s": sorted(overheads)[len(overheads) // 2] if overheads else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--budget", type=float, default=2.0, help="performance.budget_seconds per candidate")
    parser.add_argument("--min-effect", type=float, default=0.05)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timing", default="blocks", choices=["blocks", "rounds", "auto"])
    parser.add_argument("--load", action="store_true", help="with the load injector")
    parser.add_argument("--quiet", action="store_true", help="without it (both when neither is given)")
    parser.add_argument("--gpu-hog", action="store_true", help="another process running GEMMs on the same GPU")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = [True] if args.load and not args.quiet else [False] if args.quiet and not args.load else [False, True]
    results = [one_setting(args, load) for load in settings]
    for r in results:
        print(json.dumps({k: v for k, v in r.items() if k != "verdicts"}), json.dumps(r["verdicts"]))
    if args.out:
        previous = json.loads(args.out.read_text()) if args.out.exists() else []
        args.out.write_text(json.dumps([*previous, *results], indent=2) + "\n")


if __name__ == "__main__":
    main()
