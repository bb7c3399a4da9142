"""GPU hardware control through nvidia-smi: query, apply, restore, permission failure.

The `nvidia-smi` here is a FAKE (a script on PATH): its query answers replay output recorded on the
lent H200 (tests/data/README.md); its answers to setting commands are written, not recorded, because
changing the settings of the lent GPU is not allowed. The real query path ran on the H200
(docs/benchmarks/compat_gpu.md).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from magpie_core.interfaces import HardwareControlError
from magpie_core.machine import hardware
from magpie_core.plugins import PluginManager, use_plugin_manager

DATA = Path(__file__).parent / "data"
RECORDED = (DATA / "nvidia_smi_hardware_h200_idle.csv").read_text().strip()
#: the detection query's row, assembled from the same machine's `magpie gpu-info` (name, memory, driver, sm_90)
DETECTED = "0, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000000, 143771, 0, 0, 580.159.04, 9.0"

FAKE = r"""#!{python}
import json, os, sys
state_path = os.environ["FAKE_SMI_STATE"]
state = json.load(open(state_path)) if os.path.exists(state_path) else {{"power": None, "gpu": None, "mem": None}}
args = sys.argv[1:]
with open(os.environ["FAKE_SMI_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
query = next((a for a in args if a.startswith("--query-gpu=")), None)
if query:
    if query.startswith("--query-gpu=index,name"):
        print({detected!r})
    else:
        cols = [c.strip() for c in {recorded!r}.split(",")]
        if state["power"] is not None:
            cols[7] = "%.2f" % state["power"]
        if state["gpu"] is not None:
            cols[1] = str(state["gpu"][1])
        print(", ".join(cols))
    sys.exit(0)
deny = os.environ.get("FAKE_SMI_DENY", "")
flag = next(a for a in args if a in ("-pl", "-lgc", "-lmc", "-rgc", "-rmc"))
if flag in deny.split(","):
    print("Failed to set for GPU 00000000:19:00.0: Insufficient Permissions")
    sys.exit(4)
value = args[args.index(flag) + 1] if flag in ("-pl", "-lgc", "-lmc") else None
if flag == "-pl":
    state["power"] = float(value)
elif flag in ("-lgc", "-lmc"):
    state["gpu" if flag == "-lgc" else "mem"] = [int(v) for v in value.split(",")]
else:
    state["gpu" if flag == "-rgc" else "mem"] = None
json.dump(state, open(state_path, "w"))
print("All done.")
"""


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "nvidia-smi"
    tool.write_text(FAKE.format(python=sys.executable, recorded=RECORDED, detected=DETECTED))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SMI_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("FAKE_SMI_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("MAGPIE_PLUGINS", "gpu_nvidia")
    return tmp_path / "calls.log"


def _calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "--query-gpu" not in line]


HW = {
    "enabled": True,
    "default": {"power": {"limit_watts": 500}, "frequency": {"gpu_clock_mhz": [1500, 1500]}},
    "per_gpu": {"0": {"frequency": {"mem_clock_mhz": 3201}}},
}


def test_query_reads_the_recorded_h200_row(fake_smi: Path) -> None:
    with use_plugin_manager(PluginManager()):
        state = hardware.record()
    (gpu,) = state["gpus"]
    assert gpu["vendor"] == "nvidia" and gpu["source"] == "nvidia-smi"
    assert (gpu["power_limit_w"], gpu["default_power_limit_w"], gpu["max_sm_clock_mhz"]) == (700.0, 700.0, 1980.0)
    assert gpu["persistence_mode"] == "Enabled" and state["applied"] is None and not state["errors"]


def test_apply_then_restore_in_reverse(fake_smi: Path) -> None:
    with use_plugin_manager(PluginManager()):
        with hardware.applied(HW) as active:
            inside = hardware.record()
        after = hardware.record()
    assert active is not None and active["settings"]["0"]["mem_clock_mhz"] == [3201, 3201]
    assert inside["applied"]["settings"]["0"]["power_limit_w"] == 500.0
    assert inside["gpus"][0]["power_limit_w"] == 500.0 and inside["gpus"][0]["sm_clock_mhz"] == 1500.0
    assert _calls(fake_smi) == [
        "-i 0 -pl 500",
        "-i 0 -lgc 1500,1500",
        "-i 0 -lmc 3201,3201",
        "-i 0 -rmc",
        "-i 0 -rgc",
        "-i 0 -pl 700",
    ]
    assert after["applied"] is None and after["gpus"][0]["power_limit_w"] == 700.0


def test_restored_after_a_failing_run(fake_smi: Path) -> None:
    with use_plugin_manager(PluginManager()), pytest.raises(RuntimeError, match="the run failed"), hardware.applied(HW):
        raise RuntimeError("the run failed")
    assert _calls(fake_smi)[-3:] == ["-i 0 -rmc", "-i 0 -rgc", "-i 0 -pl 700"]


def test_kept_when_reset_after_benchmark_is_false(fake_smi: Path) -> None:
    with use_plugin_manager(PluginManager()), hardware.applied({**HW, "reset_after_benchmark": False}):
        pass
    assert "-i 0 -rgc" not in _calls(fake_smi)


def test_no_permission_fails_clearly_and_undoes_what_was_set(fake_smi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_DENY", "-lgc")
    with use_plugin_manager(PluginManager()), pytest.raises(HardwareControlError) as err, hardware.applied(HW):
        pytest.fail("the run must not start")
    assert "Insufficient Permissions" in str(err.value) and "needs root" in str(err.value)
    assert _calls(fake_smi) == ["-i 0 -pl 500", "-i 0 -lgc 1500,1500", "-i 0 -pl 700"]


def test_amd_levels_on_nvidia_name_the_key(fake_smi: Path) -> None:
    levels = {"enabled": True, "default": {"frequency": {"gpu_clock_level": 7}}}
    refused = pytest.raises(HardwareControlError, match="gpu_clock_level")
    with use_plugin_manager(PluginManager()), refused, hardware.applied(levels):
        pass
    assert _calls(fake_smi) == []


def test_disabled_or_empty_block_changes_nothing(fake_smi: Path) -> None:
    with use_plugin_manager(PluginManager()), hardware.applied({**HW, "enabled": False}) as active:
        assert active is None
    nulls = {"enabled": True, "default": {"power": {"limit_watts": None}, "frequency": {"gpu_clock_mhz": None}}}
    with use_plugin_manager(PluginManager()), hardware.applied({**nulls, "per_gpu": {}}) as active:
        assert active is None  # AMD Magpie's default config.yaml: enabled, every setting null
    assert not fake_smi.exists() or _calls(fake_smi) == []


def test_cli_without_permission_exits_2_before_running(fake_smi: Path, tmp_path: Path, run_magpie, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SMI_DENY", "-pl")
    monkeypatch.setenv("MAGPIE_PLUGINS", "gpu_nvidia,hip")  # a kernel type no backend has is a config error first
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps({"gpu": {"hardware": HW}}))
    kernel = tmp_path / "k.yaml"
    kernel.write_text(json.dumps({"kernel": {"id": "k", "type": "hip", "testcase_command": "true"}}))
    done = run_magpie(["-c", str(cfg), "-o", str(tmp_path / "runs"), "analyze", "-k", str(kernel)])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Insufficient Permissions" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_mcp_tool_reports_the_state_read_only(fake_smi: Path, tmp_path: Path, monkeypatch) -> None:
    """A real MCP client session (stdio): the tool reads; nothing is set."""
    from magpie_mcp.testing import call, run_session, write_workspace

    monkeypatch.setenv("MAGPIE_PLUGINS", "gpu_nvidia,mcp")
    ws = write_workspace(tmp_path / "ws", roots=[tmp_path / "ws"])
    seen: dict = {}

    async def scenario(session) -> None:
        seen.update(await call(session, "gpu_hardware_state", {}))

    run_session(ws, scenario)
    assert seen["gpus"][0]["power_limit_w"] == 700.0 and seen["applied"] is None
    assert _calls(fake_smi) == []
