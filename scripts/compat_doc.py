# ruff: noqa: E501 (markdown tables)
"""Render docs/compatibility.md from magpie_core.config.amd_magpie_keys and magpie_benchmark.amd_magpie_keys
(``python scripts/compat_doc.py``).

tests/test_magpie_corpus.py fails when the page and the table disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from magpie_benchmark.amd_magpie import CONSUMED, REFUSED_KEYS, UNSUPPORTED_PREFIXES  # noqa: E402

from magpie_benchmark import amd_magpie_keys as benchmark_keys  # noqa: E402
from magpie_core.config import amd_magpie_keys as compat_keys  # noqa: E402

INTRO = """# AMD Magpie compatibility

Every key of AMD Magpie's kernel, benchmark and framework configs, every flag of its CLI and every
tool of its MCP server, and what magpie does with it. **implemented**: AMD Magpie's meaning (or the
stated equivalent); **warned**: accepted, and loading the file logs `file:line: key: AMD Magpie key not
implemented by magpie (ignored); <what magpie does instead>`; **refused**: a file that switches it on
stops with exit 2 and a message naming the key. A key that is switched off (`enabled: false`, `null`,
`false`) is never warned about. Nothing is silently ignored.

This page is generated from `magpie_core/data/compat_keys.json` (read by `magpie_core/config/amd_magpie_keys.py`) and `magpie_benchmark/src/magpie_benchmark/amd_magpie_keys.py`
(`python scripts/compat_doc.py`);
`tests/test_magpie_corpus.py` loads AMD Magpie's own example configs (`tests/data/magpie_configs/`,
upstream commits in its MANIFEST.md) and checks every key against this table and against what the
loaders actually do.
"""

CLI = """## CLI

| AMD Magpie | magpie |
|---|---|
| `--config/-c`, `--verbose/-v`, `--gpu-info`, `--environment/-e`, `--workers/-w`, `--docker-image` | implemented (global options) |
| `analyze KERNELS --testcase/-t --type --compile-cmd --no-perf -o`, `--kernel-config/-k` | implemented; `--testcase` required for source files, as in AMD Magpie |
| `compare KERNELS [--testcase] --type --baseline --no-perf -o`, `-k` | implemented; `--testcase` optional as in AMD Magpie (kernels without one are compiled, not run; same-named files get ids `kernel_<i>_<stem>`) |
| `benchmark FRAMEWORK -b -m -p --tp --concurrency --input-len --output-len --run-mode --run-kind --docker-image --timeout -o` | implemented |
| `benchmark --torch-profiler` | implemented: profiling only when asked (`--torch-profiler`, or the YAML); `--no-torch-profiler` turns a YAML's off; an external server is never profiled unless asked (then an error: its traces are not ours) |
| `benchmark --system-profiler`, `--inferencex-path`, `--benchmark-script` | not accepted as flags (typer exits 2 naming the flag); the YAML keys are warned |
| `benchmark --trace-dir --top-k --start-pct --end-pct --min-duration-us --categories --ignore-categories --no-rank-csv --find-kernel-sources --kernel-source-repos` | implemented; output under `<-o, default ./magpie_runs>/gap_analysis/` |
| `targeted-trace adapt-torch --trace/--trace-dir --target-config -o --run-id --framework --framework-version --image` | implemented (magpie-targeted-trace): matching kernels into checksummed shards and `manifest.json`, AMD Magpie's schema `magpie.targeted-kernel-trace@1.0.0`; an unreadable input trace is named, exit 2, the rest kept ([targeted-trace.md](targeted-trace.md)) |
| `targeted-trace postprocess --trace-dir -o --strict` | implemented: line-by-line validation against the receipts, AMD Magpie's summary keys; exit 1 when integrity issues are found (each with file and line), 2 for a folder that is not a targeted trace |
| `benchmark` with `framework: xdit` and `run_cmd` | implemented (magpie-run-cmd): the command runs as argv (never a shell) with `--output_directory <run folder>` (and `--profile` for the diagnostic run); `timings.json` becomes images/s and iteration latency ([benchmark.md](benchmark.md#offline-workloads-run_cmd)) |

magpie's own benchmark load flags, with the meanings of the common serving benchmark client
(`bench serve`): `--num-prompts`, `--request-rate` (req/s; `inf` = all at once), `--burstiness`
(gamma shape; 1 = Poisson), `--dataset-name` (random, sharegpt, custom/jsonl), `--dataset-path`,
`--seed`, `--endpoint` (`/v1/completions` or `/v1/chat/completions`), `--tokenizer`,
`--percentile-metrics` (ttft,tpot,itl,e2el), `--metric-percentiles` (e.g. 50,90,99), `--goodput
KEY:VALUE` (ms SLOs over ttft, tpot, e2el; repeat the flag). Each sets the YAML key it names and wins
over the file; a bad value exits 2 naming the flag. Default `--num-prompts` stays AMD Magpie's
(`NUM_PROMPTS`, else 10 x concurrency), not the client's 1000.
"""

MCP = """## MCP tools

| AMD Magpie tool | magpie |
|---|---|
| `hardware_spec`, `analyze`, `compare`, `benchmark`, `gap_analysis`, `create_kernel_config`, `discover_kernels`, `suggest_optimizations`, `compare_benchmark_reports`, `list_benchmark_results`, `get_benchmark_result` | same names |
| `ray_task_status`, `ray_task_result`, `ray_task_cancel`, `ray_task_list` | `job_status`, `job_result`, `job_cancel`, `job_list` (every long tool runs as a job, on any environment) |
| `configure_gpu` | read-only `gpu_hardware_state` (clocks, power limit, persistence); settings change only through a run whose framework config enables `gpu.hardware`, never from an MCP client |
| `list_benchmark_images` | not implemented: each framework plugin holds its default image (`docker_image` overrides) |
| `benchmark_batch` | not implemented: call `benchmark` once per config (each is a job) |
"""


def _rows(kind: str, table: dict[str, str]) -> list[str]:
    out = ["| key | magpie | what it does |", "|---|---|---|"]
    for key, what in table.items():
        verdict = what.split(":")[0] if what.startswith(("warned", "refused")) else _status(kind, key)
        verdict = "warned" if verdict.startswith("warned") else verdict
        out.append(f"| `{key}` | {verdict} | {what.replace('|', '/')} |")
    return out


def _status(kind: str, key: str) -> str:
    return benchmark_keys.status(key) if kind == "benchmark" else compat_keys.status(kind, key)


def _envs() -> list[str]:
    out = ["| `envs` key | magpie |", "|---|---|"]
    out += [f"| `{k}` | {v} |" for k, v in CONSUMED.items()]
    out += [f"| `{p}*` | warned: {v} |" for p, v in UNSUPPORTED_PREFIXES.items()]
    out.append(
        "| any other key | exported to the server process (and into its container); secret-looking "
        "values (token, key, password...) are never put on a command line or in a report |"
    )
    return out


def render() -> str:
    parts = [INTRO, CLI, MCP, "## Benchmark YAML (`benchmark:`)\n", *_rows("benchmark", benchmark_keys.BENCHMARK)]
    parts += ["", "Refused keys:", ""] + [f"- `{k}`: {v}" for k, v in REFUSED_KEYS.items()]
    parts += ["", "### `envs`", "", *_envs()]
    parts += ["", "## Kernel YAML", "", *_rows("kernel", compat_keys.KERNEL)]
    parts += ["", "## Framework config (`--config`)", "", *_rows("framework", compat_keys.FRAMEWORK), ""]
    return "\n".join(parts)


if __name__ == "__main__":
    (ROOT / "docs" / "compatibility.md").write_text(render())
    print("wrote docs/compatibility.md")
