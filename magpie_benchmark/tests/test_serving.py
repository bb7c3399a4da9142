"""Server lifecycle, docker command, GPU parsing and locking, framework plugin commands.

No Docker engine exists on this machine: the docker command is checked as built, never run.
nvidia-smi / amd-smi / rocm-smi outputs below are recorded in those tools' documented formats.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from magpie_benchmark.config import BenchmarkConfig
from magpie_benchmark.serving.docker import docker_command, vendor_for
from magpie_benchmark.serving.gpu_leases import GpuSelectionError, select_gpus
from magpie_benchmark.serving.server import ServerError, ServerProcess, free_port

NVIDIA_SMI = """0, NVIDIA H200, GPU-5a1b, 143771, 1, 0, 570.133.20, 9.0
1, NVIDIA H200, GPU-6c2d, 143771, 120000, 97, 570.133.20, 9.0
2, NVIDIA H200, GPU-7e3f, 143771, 4, 0, 570.133.20, 9.0
"""
AMD_SMI_STATIC = json.dumps(
    {
        "gpu_data": [
            {
                "gpu": 0,
                "asic": {"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942"},
                "driver": {"name": "amdgpu", "version": "6.10.5"},
            },
            {
                "gpu": 1,
                "asic": {"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942"},
                "driver": {"name": "amdgpu", "version": "6.10.5"},
            },
        ]
    }
)
AMD_SMI_METRIC = json.dumps(
    [
        {
            "gpu": 0,
            "usage": {"gfx_activity": {"value": 0, "unit": "%"}},
            "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"}, "used_vram": {"value": 283, "unit": "MB"}},
        },
        {
            "gpu": 1,
            "usage": {"gfx_activity": {"value": "N/A", "unit": "%"}},
            "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"}, "used_vram": {"value": 190000, "unit": "MB"}},
        },
    ]
)
ROCM_SMI = json.dumps(
    {
        "card0": {
            "GPU use (%)": "0",
            "VRAM Total Memory (B)": "206141652992",
            "VRAM Total Used Memory (B)": "296775680",
            "Card Series": "AMD Instinct MI300X",
            "GFX Version": "gfx942",
        },
        "system": {"Driver version": "6.10.5"},
    }
)


def test_nvidia_parse_and_auto_selection_with_locks(tmp_path):
    from magpie_gpu_nvidia.plugin import parse_query_csv

    gpus = parse_query_csv(NVIDIA_SMI)
    assert [(g.index, g.arch, g.memory_total_mib, g.utilization_pct) for g in gpus] == [
        (0, "sm_90", 143771, 0.0),
        (1, "sm_90", 143771, 97.0),
        (2, "sm_90", 143771, 0.0),
    ]
    first = select_gpus(gpus, 1, lock_dir=tmp_path)
    assert first.indices == [0] and first.env() == {"CUDA_VISIBLE_DEVICES": "0"}
    second = select_gpus(gpus, 1, lock_dir=tmp_path)  # GPU 0 is locked, GPU 1 is busy
    assert second.indices == [2]
    with pytest.raises(GpuSelectionError):
        select_gpus(gpus, 1, lock_dir=tmp_path)
    first.release()
    assert select_gpus(gpus, 1, lock_dir=tmp_path).indices == [0]


def test_lock_is_held_across_processes(tmp_path):
    from magpie_gpu_nvidia.plugin import parse_query_csv

    code = (
        "import sys, time; from magpie_benchmark.serving.gpu_leases import select_gpus; "
        "from magpie_gpu_nvidia.plugin import parse_query_csv; "
        f"lease = select_gpus(parse_query_csv({NVIDIA_SMI!r}), 2, lock_dir={str(tmp_path)!r}); "
        "print(lease.indices, flush=True); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "[0, 2]"
        with pytest.raises(GpuSelectionError):
            select_gpus(parse_query_csv(NVIDIA_SMI), 1, lock_dir=tmp_path)
    finally:
        child.kill()
        child.wait()
    assert select_gpus(parse_query_csv(NVIDIA_SMI), 2, lock_dir=tmp_path).indices == [0, 2]


def test_amd_parsers_and_pinning(tmp_path):
    from magpie_gpu_amd.plugin import parse_amd_smi, parse_rocm_smi

    gpus = parse_amd_smi(AMD_SMI_STATIC, AMD_SMI_METRIC)
    assert [(g.index, g.arch, g.memory_used_mib, g.driver) for g in gpus] == [
        (0, "gfx942", 283, "6.10.5"),
        (1, "gfx942", 190000, "6.10.5"),
    ]
    assert select_gpus(gpus, 1, lock_dir=tmp_path).env() == {"HIP_VISIBLE_DEVICES": "0"}
    pinned = select_gpus(gpus, 1, pinned=[1], lock_dir=tmp_path)
    assert pinned.how == "pinned" and pinned.env() == {"HIP_VISIBLE_DEVICES": "1"}
    rocm = parse_rocm_smi(ROCM_SMI)
    assert rocm[0].name == "AMD Instinct MI300X" and rocm[0].memory_total_mib == 196592
    assert select_gpus([], 1, lock_dir=tmp_path).how == "none"


def test_docker_command_nvidia_and_amd(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "secret-value")
    argv = docker_command(
        image="img:1",
        inner_argv=["python3", "-m", "srv"],
        name="magpie-x",
        vendor="nvidia",
        devices=[0, 3],
        env={"A": "1", "HF_TOKEN": "secret-value"},
        mounts=[tmp_path],
        hf_cache=str(tmp_path),
    )
    assert argv[:4] == ["docker", "run", "--rm", "--name"]
    assert argv[argv.index("--gpus") + 1] == '"device=0,3"'
    assert "-e" in argv and "A=1" in argv and "HF_TOKEN" in argv
    assert not any("secret-value" in a for a in argv)
    assert argv[-4:] == ["img:1", "python3", "-m", "srv"]
    amd = docker_command(image="rocm", inner_argv=["x"], name="n", vendor="amd", devices=[1], env={})
    for flag in ("/dev/kfd", "/dev/dri", "video", "seccomp=unconfined"):
        assert flag in amd
    assert "HIP_VISIBLE_DEVICES=1" in amd and "--gpus" not in amd
    assert vendor_for("gfx942", None) == "amd" and vendor_for("sm_90", None) == "nvidia"
    with pytest.raises(ValueError, match="gpu_arch"):
        docker_command(image="i", inner_argv=["x"], name="n", vendor=None, devices=[], env={})


def test_server_process_stops_its_whole_group(tmp_path):
    code = (
        "import subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(c.pid, flush=True); time.sleep(60)"
    )
    proc = ServerProcess([sys.executable, "-c", code], dict(os.environ), tmp_path / "server.log")
    proc.start()
    for _ in range(100):
        if (tmp_path / "server.log").read_text().strip():
            break
        time.sleep(0.05)
    grandchild = int((tmp_path / "server.log").read_text().split()[0])
    proc.stop(grace_s=5)
    time.sleep(0.2)
    assert not alive(grandchild)


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its reaper."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_server_crash_and_timeout_are_clear(tmp_path):
    proc = ServerProcess(
        [sys.executable, "-c", "print('boom'); raise SystemExit(7)"], dict(os.environ), tmp_path / "s.log"
    )
    proc.start()
    with pytest.raises(ServerError, match=r"exited with code 7[\s\S]*boom"):
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/health", timeout_s=20, interval_s=0.1)
    hang = ServerProcess([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), tmp_path / "h.log")
    hang.start()
    with pytest.raises(ServerError, match="not ready"):
        hang.wait_ready(f"http://127.0.0.1:{free_port()}/health", timeout_s=1, interval_s=0.2)
    hang.stop(grace_s=2)


def cfg(**kw) -> BenchmarkConfig:
    return BenchmarkConfig.model_validate({"model": "/models/m", "precision": "bf16", "run_mode": "local", **kw})


def test_vllm_command_and_profiler(tmp_path, monkeypatch):
    from magpie_vllm.plugin import Vllm

    monkeypatch.setenv("MAGPIE_VLLM_PYTHON", "/venv/bin/python")
    c = cfg(
        envs={"TP": 2, "MAX_MODEL_LEN": 4096, "GPU_MEM_UTIL": 0.85, "EXTRA_VLLM_ARGS": "--max-num-seqs 64"},
        framework_options={"enforce_eager": True},
    )
    argv = Vllm().server_command(c, "127.0.0.1", 8000)
    assert argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    joined = " ".join(argv)
    for part in (
        "--tensor-parallel-size 2",
        "--dtype bfloat16",
        "--max-model-len 4096",
        "--gpu-memory-utilization 0.85",
        "--enforce-eager",
        "--max-num-seqs 64",
        "--port 8000",
    ):
        assert part in joined
    prof = Vllm().profiler_args(c, tmp_path)
    assert prof[0] == "--profiler-config"
    assert json.loads(prof[1]) == {"profiler": "torch", "torch_profiler_dir": str(tmp_path)}
    old = cfg(framework_options={"profiler_style": "env"})
    assert Vllm().profiler_args(old, tmp_path) == []
    assert Vllm().server_env(old, tmp_path) == {"VLLM_TORCH_PROFILER_DIR": str(tmp_path)}
    assert Vllm().default_image("gfx942") == "rocm/vllm:latest"
    docker_cfg = cfg(run_mode="docker")
    assert Vllm().server_command(docker_cfg, "127.0.0.1", 1)[0] == "python3"


def test_sglang_and_atom_commands(tmp_path):
    from magpie_atom.plugin import Atom
    from magpie_sglang.plugin import Sglang

    c = cfg(envs={"TP": 8, "MAX_MODEL_LEN": 2048, "GPU_MEM_UTIL": 0.8}, server_python="/py")
    s = Sglang().server_command(c, "127.0.0.1", 30000)
    assert s[:3] == ["/py", "-m", "sglang.launch_server"]
    assert " ".join(s).count("--tp 8") == 1 and "--context-length" in s and "--mem-fraction-static" in s
    assert Sglang().server_env(c, tmp_path) == {"SGLANG_TORCH_PROFILER_DIR": str(tmp_path)}
    a = Atom().server_command(cfg(precision="fp8", server_python="/py"), "127.0.0.1", 8888)
    assert a[:3] == ["/py", "-m", "atom.entrypoints.openai_server"]
    assert a[a.index("--server-port") + 1] == "8888" and a[a.index("--kv_cache_dtype") + 1] == "fp8"
    assert Atom().profiler_args(c, tmp_path) == ["--torch-profiler-dir", str(tmp_path)]
    assert Atom().default_image("gfx950") == "rocm/atom:latest"


def test_a_server_that_never_becomes_ready_is_stopped(tmp_path, monkeypatch):
    import uuid

    from magpie_benchmark.benchmark_server import start_server
    from magpie_benchmark.serving.gpu_leases import GpuLease

    from magpie_core.runtime.workspace import create_workspace
    from tests.helpers.leftovers import assert_none_left, marked_processes

    class NeverReady:
        name, readiness_path = "never-ready", "/health"

        def server_command(self, config, host, port):
            return [sys.executable, "-c", "import time; time.sleep(300)"]

        def server_env(self, config, profile_dir):
            return {}

    marker = f"never-ready-{uuid.uuid4().hex}"
    monkeypatch.setenv("MAGPIE_TEST_MARKER", marker)  # the server inherits it: found again through /proc
    ws = create_workspace(tmp_path, "benchmark", "never-ready")
    with pytest.raises(ServerError, match="not ready"):
        start_server(cfg(server_ready_timeout_s=1), NeverReady(), ws, GpuLease(None, [], "none"), None)
    assert_none_left(marker)
    assert not marked_processes(marker)
