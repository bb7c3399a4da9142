"""Client CPU per streamed chunk: magpie's load generator vs ``vllm bench serve``'s request function.

On a machine where the server under test shares the CPU with the client, every microsecond of client
work per chunk is taken from the server. This script runs the same streaming workload against magpie's
fake server (its own process; known TTFT/ITL, so both clients see identical streams) with:

- magpie: ``magpie_benchmark.loadgen.run_load`` (the lean HTTP client, kernel receive timestamps);
- baseline: vLLM's own ``async_request_openai_completions`` (aiohttp), imported from ``.venv-vllm``,
  driven with vllm bench's connector settings and a semaphore for the concurrency.

Each client runs in its own subprocess and reports the user+system CPU it used between the first request
and the last response (``resource.getrusage``), divided by the chunks it received. Rounds alternate.
The fake server sends the first chunk ``--ttft-ms`` after it read the request, so each client's mean TTFT
minus that is what the client itself adds.

    python benchmarks/loadgen_client_cpu.py --rounds 3 --json docs/benchmarks/loadgen_client_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = Path(os.environ.get("MAGPIE_VLLM_PYTHON") or ROOT / ".venv-vllm" / "bin" / "python")

MAGPIE = r"""
import json, resource, sys
from magpie_benchmark.loadgen import LoadSpec, SampleRequest, run_load
url, n, conc, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
reqs = [SampleRequest(prompt=f"request {i} " + "x" * 200, prompt_len=50, expected_output_len=tokens) for i in range(n)]
spec = LoadSpec(base_url=url, model="fake-model", requests=reqs, max_concurrency=conc, progress=False)
r0 = resource.getrusage(resource.RUSAGE_SELF)
res = run_load(spec)
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
ok = [x for x in res.results if x.success]
print(json.dumps({"cpu_s": cpu, "chunks": sum(x.chunks for x in ok), "ok": len(ok), "n": n,
                  "mean_ttft_ms": 1000 * sum(x.ttft for x in ok) / max(1, len(ok))}))
"""

VLLM = r"""
import asyncio, json, resource, sys
import aiohttp
from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_completions
url, n, conc, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

async def main():
    connector = aiohttp.TCPConnector(limit=conc, limit_per_host=conc, ttl_dns_cache=300, use_dns_cache=True,
                                     keepalive_timeout=60, enable_cleanup_closed=True, force_close=False)
    sem = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=connector, trust_env=True,
                                     timeout=aiohttp.ClientTimeout(total=6 * 60 * 60)) as session:
        async def one(i):
            inp = RequestFuncInput(prompt=f"request {i} " + "x" * 200, api_url=url + "/v1/completions",
                                   prompt_len=50, output_len=tokens, model="fake-model")
            async with sem:
                return await async_request_openai_completions(inp, session)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        outs = await asyncio.gather(*(one(i) for i in range(n)))
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    ok = [o for o in outs if o.success]
    print(json.dumps({"cpu_s": cpu, "chunks": sum(len(o.itl) + 1 for o in ok), "ok": len(ok), "n": n,
                      "mean_ttft_ms": 1000 * sum(o.ttft for o in ok) / max(1, len(ok))}))

asyncio.run(main())
"""


def _run(argv: list[str]) -> dict:
    out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--ttft-ms", type=float, default=5.0)
    ap.add_argument("--itl-ms", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    from magpie_benchmark.loadgen.fake_server import running

    with running(a.ttft_ms, a.itl_ms) as url:
        args = [url, str(a.requests), str(a.concurrency), str(a.tokens)]
        rows = []
        for r in range(a.rounds):
            v = _run([str(VLLM_PYTHON), "-c", VLLM, *args])
            m = _run([sys.executable, "-c", MAGPIE, *args])
            row = {
                "round": r,
                "vllm_us_per_chunk": 1e6 * v["cpu_s"] / v["chunks"],
                "magpie_us_per_chunk": 1e6 * m["cpu_s"] / m["chunks"],
                "vllm": v,
                "magpie": m,
            }
            row["ratio"] = row["magpie_us_per_chunk"] / row["vllm_us_per_chunk"]
            rows.append(row)
            print(
                f"round {r}: vllm bench request func {row['vllm_us_per_chunk']:.1f} us/chunk, "
                f"magpie {row['magpie_us_per_chunk']:.1f} us/chunk (ratio {row['ratio']:.2f}); "
                f"mean TTFT {v['mean_ttft_ms']:.2f} / {m['mean_ttft_ms']:.2f} ms (server: {a.ttft_ms:.1f} ms); "
                f"chunks {v['chunks']} / {m['chunks']}, ok {v['ok']} / {m['ok']}"
            )
    summary = {
        "workload": vars(a),
        "median_vllm_us_per_chunk": statistics.median(r["vllm_us_per_chunk"] for r in rows),
        "median_magpie_us_per_chunk": statistics.median(r["magpie_us_per_chunk"] for r in rows),
        "median_ratio": statistics.median(r["ratio"] for r in rows),
        "median_vllm_mean_ttft_ms": statistics.median(r["vllm"]["mean_ttft_ms"] for r in rows),
        "median_magpie_mean_ttft_ms": statistics.median(r["magpie"]["mean_ttft_ms"] for r in rows),
        "rounds": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
