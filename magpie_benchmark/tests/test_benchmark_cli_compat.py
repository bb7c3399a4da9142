"""The benchmark CLI as AMD Magpie users type it, AMD Magpie's envs, and refused features.

Real CLI subprocesses against the fake streaming server (loadgen.fake_server); the server side of
envs is checked on a real local server process started by the pipeline.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from magpie_benchmark.pipeline import run_benchmark
from magpie_benchmark.run_config import load_benchmark_config
from magpie_benchmark.serving.docker import docker_command

from magpie_core.config import ConfigError
from tests.conftest import DATA, ROOT
from tests.helpers.fake_framework import FakeFramework, config


def _report(out: Path) -> dict[str, Any]:
    (path,) = out.rglob("benchmark_report.json")
    return json.loads(path.read_text())


def test_readme_external_example_exits_0_without_profiling(fake_stream_server, tmp_path, run_magpie) -> None:
    args = ["benchmark", "vllm", "--base-url", fake_stream_server, "--run-mode", "external", "-m", "fake-model"]
    args += ["--num-prompts", "4", "--concurrency", "2", "--input-len", "8", "--output-len", "4", "-o", str(tmp_path)]
    done = run_magpie(args)
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(tmp_path)
    assert report["success"] and not report["profiling_enabled"] and report["diagnostic"] is None
    # the summary `vllm bench serve` users read (issue 46: counts, duration and token totals were missing)
    for line in ("Serving Benchmark Result", "Successful requests", "Failed requests", "Benchmark duration (s)"):
        assert line in done.stdout, done.stdout
    for line in ("Total input tokens", "Total generated tokens", "Mean TTFT (ms)", "P99 ITL (ms)", "Median TPOT (ms)"):
        assert line in done.stdout, done.stdout
    asked = run_magpie([*args[:-1], str(tmp_path / "profiled"), "--torch-profiler"])
    assert asked.returncode == 1 and "profiling an external server" in asked.stdout


def test_bench_serve_flags_shape_the_load(fake_stream_server, tmp_path, run_magpie) -> None:
    args = ["benchmark", "vllm", "--base-url", fake_stream_server, "-m", "fake-model", "-o", str(tmp_path)]
    args += ["--num-prompts", "6", "--request-rate", "200", "--burstiness", "0.5", "--seed", "3"]
    args += ["--endpoint", "/v1/chat/completions", "--dataset-name", "random", "--input-len", "8", "--output-len", "4"]
    args += ["--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,99", "--goodput", "ttft:5000"]
    args += ["--goodput", "e2el:10000"]
    done = run_magpie(args)
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(tmp_path)
    load, cfg = report["config"]["load"], report["config"]
    assert (load["num_prompts"], load["request_rate"], load["burstiness"], load["endpoint"]) == (6, 200.0, 0.5, "chat")
    assert cfg["dataset"]["seed"] == 3 and cfg["slo"] == {"ttft_ms": 5000.0, "tpot_ms": None, "e2el_ms": 10000.0}
    (point,) = report["points"]
    assert point["num_prompts"] == 6 and point["endpoint"] == "chat" and "p50_ms" in point["metrics"]["ttft"]
    assert report["throughput"]["request_goodput"] > 0
    assert "Median TTFT (ms)" in done.stdout and "P50 TTFT (ms)" in done.stdout and "P99 E2EL (ms)" in done.stdout
    assert "TPOT (ms)" not in done.stdout and "Request goodput" in done.stdout


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--goodput", "ttft"),
        ("--goodput", "itl:5"),
        ("--endpoint", "/v1/embeddings"),
        ("--dataset-name", "hf"),
        ("--request-rate", "-1"),
        ("--percentile-metrics", "ttft,bogus"),
        ("--metric-percentiles", "0"),
    ],
)
def test_bad_load_flags_exit_2_naming_the_flag(flag, value, tmp_path, run_magpie) -> None:
    done = run_magpie(
        ["benchmark", "vllm", "--base-url", "http://127.0.0.1:9", "-m", "m", flag, value, "-o", str(tmp_path)]
    )
    assert done.returncode == 2 and flag in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


def test_trace_dir_output_goes_under_output_dir(tmp_path, run_magpie) -> None:
    traces = tmp_path / "run" / "torch_trace"
    shutil.copytree(DATA / "traces" / "h100", traces)
    done = run_magpie(["benchmark", "--trace-dir", str(tmp_path / "run"), "-o", str(tmp_path / "out")])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "gap_analysis" / "gap_analysis.csv").exists()
    assert not (tmp_path / "run" / "gap_analysis").exists()


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed")
def test_compare_source_files_without_testcase(tmp_path, run_magpie, monkeypatch) -> None:
    for name in ("a", "b"):
        shutil.copy(ROOT / "examples" / "hip_vector_add" / "vector_add.hip", tmp_path / f"{name}.hip")
    monkeypatch.setenv("MAGPIE_OFFLOAD_ARCH", "gfx90a")
    done = run_magpie(["-o", str(tmp_path / "runs"), "compare", "a.hip", "b.hip", "--json"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]["kernel_results"]
    assert [(r["kernel_id"], r["compile"]["status"]) for r in results] == [("a", "passed"), ("b", "passed")]
    assert run_magpie(["analyze", "a.hip"], cwd=tmp_path).returncode == 2  # analyze keeps needing --testcase


def _bench_yaml(tmp_path: Path, **block: Any) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(json.dumps({"benchmark": {"framework": "vllm", "model": "m", **block}}))
    return path


def test_envs_magpie_reads(tmp_path) -> None:
    envs = {"PORT": 8888, "REQUEST_RATE": "2.5", "SEED": 42, "MAGPIE_BENCHMARK_ENDPOINT": "/v1/chat/completions"}
    cfg = load_benchmark_config(_bench_yaml(tmp_path, envs=envs, run_mode="local"))
    assert (cfg.port, cfg.load.request_rate, cfg.dataset.seed, cfg.load.endpoint) == (8888, 2.5, 42, "chat")
    client = load_benchmark_config(
        _bench_yaml(tmp_path, envs={"BENCHMARK_BASE_URL": "http://h:1", "REQUEST_RATE": "inf"})
    )
    assert (client.run_mode, client.base_url, client.load.request_rate) == ("external", "http://h:1", None)
    own = load_benchmark_config(_bench_yaml(tmp_path, envs={"SEED": 1}, dataset={"seed": 7}))
    assert own.dataset.seed == 7  # the file's own key wins over its envs spelling
    from magpie_vllm.plugin import Vllm

    argv = Vllm().server_command(
        load_benchmark_config(_bench_yaml(tmp_path, envs={"GPU_MEMORY_UTILIZATION": 0.9})), "h", 1
    )
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.9"


@pytest.mark.parametrize(
    ("block", "named"),
    [
        ({"envs": {"PORT": "eighty"}}, "envs.PORT"),
    ],
)
def test_refused_keys_exit_2_naming_them(block, named, tmp_path, run_magpie) -> None:
    path = _bench_yaml(tmp_path, **block)
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_benchmark_config(path)
    done = run_magpie(["benchmark", "-b", str(path), "-o", str(tmp_path / "out")])
    assert done.returncode == 2 and named in done.stderr and "bench.yaml" in done.stderr
    assert not (tmp_path / "out").exists()


def test_agentx_is_trace_replay_and_an_unreachable_trace_exits_2(tmp_path, run_magpie) -> None:
    """Offline (a loopback port nobody listens on stands for the trace's host): exit 2 before any server,
    naming the URL and how to give a local copy (test_agentx_corpus.py covers the download itself)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/traces.jsonl"
    path = _bench_yaml(tmp_path, agentx="enable", run_mode="local", dataset={"url": url})
    cfg = load_benchmark_config(path)
    assert cfg.dataset.name == "trace" and cfg.profiler.torch_profiler.enabled is False
    done = run_magpie(
        ["benchmark", "-b", str(path), "-o", str(tmp_path / "out")], env={"MAGPIE_TRACE_CACHE": str(tmp_path / "c")}
    )
    assert done.returncode == 2 and "agentx is on" in done.stderr, done.stderr
    assert url in done.stderr and "dataset.path" in done.stderr
    assert not (tmp_path / "out").exists()


def test_agentx_keys_are_read_or_warned(tmp_path, caplog) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 4, "output_length": 2}\n')
    agentx = {"enabled": True, "mode": "fast", "concurrency": 3, "launch_overrides": {"version": 1}, "bogus": 1}
    with caplog.at_level("WARNING"):
        cfg = load_benchmark_config(
            _bench_yaml(tmp_path, agentx=agentx, dataset={"path": str(trace)}, envs={"ISL": 9}, run_mode="local")
        )
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert cfg.load.max_concurrency == 3 and cfg.dataset.name == "trace"
    for key in ("benchmark.agentx.mode", "benchmark.agentx.launch_overrides", "benchmark.agentx.bogus", "ISL"):
        assert key in said, key
    off = load_benchmark_config(_bench_yaml(tmp_path, agentx={"enabled": False}))
    assert off.dataset.name == "random"


def test_a_bad_trace_line_exits_2_before_any_server(tmp_path, run_magpie) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 4, "output_length": 2}\n{"timestamp": 5, "output_length": 2}\n')
    path = _bench_yaml(tmp_path, run_mode="local", dataset={"name": "trace", "path": str(trace)})
    done = run_magpie(["benchmark", "-b", str(path), "-o", str(tmp_path / "out")])
    assert done.returncode == 2 and f"{trace}:2" in done.stderr and "input_length" in done.stderr
    assert not (tmp_path / "out").exists()


def test_trace_flags() -> None:
    from magpie_benchmark.load_flags import load_patch

    patch = load_patch(dataset_name="mooncake", dataset_path="t.jsonl", trace_time_scale=0.5)
    assert patch["dataset"] == {"name": "trace", "path": "t.jsonl"}
    assert patch["load"]["trace"] == {"format": "mooncake", "time_scale": 0.5}
    assert load_patch(dataset_name="multi_turn")["load"]["trace"] == {"format": "multi_turn"}
    assert "trace" not in load_patch(dataset_name="random").get("load", {})


def test_run_eval_false_and_multimodal_keys_load(tmp_path, caplog) -> None:
    """MM_* envs are read (test_multimodal_load.py); an MM_ key magpie does not know is still warned."""
    with caplog.at_level("WARNING"):
        cfg = load_benchmark_config(
            _bench_yaml(tmp_path, envs={"RUN_EVAL": "false", "MM_LIMIT_IMAGES": 3, "MM_AUDIO_SECONDS": 2})
        )
    assert cfg.dataset.multimodal is not None and cfg.dataset.multimodal.limit_images == 3
    said = [r.getMessage() for r in caplog.records]
    assert any("MM_AUDIO_SECONDS" in m and "not implemented" in m for m in said)
    assert not any("MM_LIMIT_IMAGES" in m for m in said)


def test_envs_reach_the_server_and_secrets_stay_out_of_reports(tmp_path) -> None:
    envs = {"CONC": 2, "ISL": 8, "OSL": 4, "NUM_PROMPTS": 2, "VLLM_ROCM_USE_AITER": 1, "HF_TOKEN": "s3cret-hf"}
    envs["MY_API_KEY"] = "s3cret-key"
    cfg = config(envs=envs, load={"progress": False}, server_env={"SERVER_TOKEN": "s3cret-server"})
    report = run_benchmark(cfg, tmp_path, framework_component=FakeFramework())
    assert report.success, report.errors
    assert {"VLLM_ROCM_USE_AITER", "HF_TOKEN", "MY_API_KEY", "SERVER_TOKEN"} <= set(report.server["env"])
    assert not {"CONC", "ISL", "TP", "NUM_PROMPTS"} & set(report.server["env"])  # read by magpie, not exported
    ws = Path(report.workspace_dir)
    for written in (ws / "benchmark_report.json", ws / "config.yaml", ws / "server.log"):
        assert "s3cret" not in written.read_text(), written
    argv = docker_command(image="i", inner_argv=["serve"], name="n", vendor=None, devices=[], env=envs, gpus=False)
    assert "MY_API_KEY" in argv and not any("s3cret" in a for a in argv) and "VLLM_ROCM_USE_AITER=1" in argv


def test_torch_profiler_capture_keys(tmp_path) -> None:
    captures = {"enabled": True, "num_profiles": 2, "interval_seconds": 0.2, "flush_timeout_seconds": 20}
    captures["capture_timeout_seconds"] = 60
    cfg = config(profiler={"torch_profiler": captures}, load={"progress": False}, envs={"CONC": 2, "NUM_PROMPTS": 2})
    report = run_benchmark(cfg, tmp_path, framework_component=FakeFramework())
    assert report.success, report.errors
    caps = report.diagnostic["captures"]
    assert [c["capture"] for c in caps] == [1, 2]
    for i, cap in enumerate(caps, 1):
        (trace,) = cap["traces"]
        assert Path(trace).parent.name == f"profile_{i:03d}" and cap["gap_analysis"].endswith(f"profile_{i:03d}")
    assert report.gap_analysis["top_kernels"][0]["name"] == "fake_kernel"
