"""Seconds an agent waits for each compare in one `magpie mcp` session, with and without the warm job process.

A real MCP stdio session (the SDK's client, `magpie mcp` as the server) calls the `compare` tool on a KernelBench bed
problem ROUNDS times, pausing PAUSE seconds between calls (an agent thinking), once with the server's default
(`mcp.warm_job_process: true`) and once with it off. Client-side wall time of every call, and the verdicts.

    python benchmarks/mcp_warm_compare.py --out docs/benchmarks/data/mcp_warm_compare_cpu
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
from magpie_mcp.testing import call, run_session, write_workspace
from mcp import ClientSession

BED = Path(__file__).resolve().parent / "kernelbench_bed"


def session(problem: str, rounds: int, pause: float, warm: bool, folder: Path) -> list[dict]:
    workspace = write_workspace(folder, [BED])
    if not warm:
        with (workspace / "config.yaml").open("a") as config:
            config.write("  warm_job_process: false\n")  # under the mcp: block write_workspace ends with

    async def scenario(s: ClientSession) -> list[dict]:
        calls = []
        for i in range(rounds):
            if i:
                await anyio.sleep(pause)
            start = time.perf_counter()
            out = await call(s, "compare", {"kernel_config": str(BED / problem / "compare.yaml")})
            wall = time.perf_counter() - start
            verdicts = {e["kernel_id"]: e["verdict"] for e in out["report"]["ranking"]}
            calls.append({"round": i, "wall_s": round(wall, 2), "verdicts": verdicts})
            print(json.dumps({"warm": warm, **calls[-1]}), flush=True)
        return calls

    return run_session(workspace, scenario)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", default="l1_23_softmax")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause", type=float, default=10.0, help="seconds between calls")
    parser.add_argument("--out", type=Path, required=True, help="output path without suffix (.json)")
    args = parser.parse_args()
    results = {"meta": {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0], "problem": args.problem}}
    with tempfile.TemporaryDirectory() as tmp:
        for warm in (True, False):
            results["warm" if warm else "cold"] = session(
                args.problem, args.rounds, args.pause, warm, Path(tmp) / ("warm" if warm else "cold")
            )
    results["meta"]["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
