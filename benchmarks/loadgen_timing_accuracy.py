"""Accuracy of magpie's TTFT and ITL against a streaming server whose send times are known.

A fake OpenAI-style server (magpie_benchmark.loadgen.fake_server, in its own
process) streams every request with a fixed TTFT and inter-token delay and
records when it wrote each chunk, on the machine's monotonic clock (the
clock time.perf_counter reads in every process). magpie drives it with
N concurrent streams; per request we compare

* TTFT error  = magpie's first-chunk time - the server's first write time,
* ITL error   = magpie's inter-chunk gap - the server's gap between the same two writes,

so the error is what the client adds (delivery + being late to look), not
the server's own scheduling jitter. Writes a markdown table to stdout and
JSON to --json.

    python benchmarks/loadgen_timing_accuracy.py --streams 256 --json out.json
"""

from __future__ import annotations

import argparse
import json
import urllib.request

import numpy as np
from magpie_benchmark.loadgen import LoadSpec, SampleRequest, run_load
from magpie_benchmark.loadgen.fake_server import running


def run(streams: int, ttft_ms: float, itl_ms: float, tokens: int, rate: float, warmup: int) -> dict:
    with running(ttft_ms, itl_ms, own_session=True) as url:
        reqs = [
            SampleRequest(prompt=f"request {i:06d} " + "x " * 8, prompt_len=10, expected_output_len=tokens)
            for i in range(streams)
        ]
        spec = LoadSpec(
            base_url=url,
            model="fake-model",
            requests=reqs,
            request_rate=rate,
            max_concurrency=streams,
            warmup_requests=warmup,
        )
        load = run_load(spec)
        with urllib.request.urlopen(f"{url}/fake/stats", timeout=10) as resp:
            records = json.loads(resp.read())["records"]
    by_key = {r["key"]: r for r in records}
    ttft_err, itl_err, ttft_meas = [], [], []
    for req, res in zip(reqs, load.results, strict=True):
        rec = by_key[str(req.prompt)[:64]]
        sends = rec["sends"]
        first = res.start_time + res.ttft
        ttft_err.append((first - sends[0]) * 1000)
        ttft_meas.append(res.ttft * 1000)
        for k, gap in enumerate(res.itl, start=1):
            itl_err.append((gap - (sends[k] - sends[k - 1])) * 1000)

    def stats(xs):
        a = np.abs(np.asarray(xs))
        return {
            "n": len(xs),
            "mean_abs_ms": float(a.mean()),
            "p50_abs_ms": float(np.percentile(a, 50)),
            "p99_abs_ms": float(np.percentile(a, 99)),
            "max_abs_ms": float(a.max()),
        }

    return {
        "streams": streams,
        "ttft_ms": ttft_ms,
        "itl_ms": itl_ms,
        "tokens": tokens,
        "request_rate": rate,
        "clock": load.clock,
        "failed": sum(not r.success for r in load.results),
        "ttft_error": stats(ttft_err),
        "itl_error": stats(itl_err),
        "measured_ttft_mean_ms": float(np.mean(ttft_meas)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, nargs="+", default=[256])
    ap.add_argument("--ttft-ms", type=float, default=100.0)
    ap.add_argument("--itl-ms", type=float, default=50.0)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rate", type=float, default=float("inf"))
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = [run(n, args.ttft_ms, args.itl_ms, args.tokens, args.rate, args.warmup) for n in args.streams]
    print(
        "| streams | rate | TTFT/ITL set (ms) | clock | failed | TTFT err p50/p99/max (ms) | ITL err p50/p99/max (ms) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        t, i = r["ttft_error"], r["itl_error"]
        print(
            f"| {r['streams']} | {r['request_rate']} | {r['ttft_ms']:g}/{r['itl_ms']:g} | {r['clock']} "
            f"| {r['failed']} "
            f"| {t['p50_abs_ms']:.3f}/{t['p99_abs_ms']:.3f}/{t['max_abs_ms']:.3f} "
            f"| {i['p50_abs_ms']:.3f}/{i['p99_abs_ms']:.3f}/{i['max_abs_ms']:.3f} |"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
