"""GPU hardware control through amd-smi, against a FAKE amd-smi.

No AMD GPU was available to record from: the fake's JSON follows amd-smi's documented
``metric --clock --power --json`` / ``static --limit --json`` layout (ROCm 6.x) and is NOT a
recording; its setting commands log what they were asked and change the fake's state.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from magpie_core.interfaces import HardwareControlError
from magpie_core.machine import hardware
from magpie_core.plugins import PluginManager, use_plugin_manager

FAKE = r"""#!{python}
import json, os, sys
state_path = os.environ["FAKE_AMD_STATE"]
state = json.load(open(state_path)) if os.path.exists(state_path) else {{"cap": 750, "sclk": 2100}}
args = sys.argv[1:]
with open(os.environ["FAKE_AMD_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
if args[0] == "static" and "--asic" in args:
    asic = {{"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942"}}
    print(json.dumps([{{"gpu": 0, "asic": asic}}]))
elif args[0] == "metric" and "--clock" in args:
    clk = {{"gfx_0": {{"clk": {{"value": state["sclk"], "unit": "MHz"}}, "max_clk": {{"value": 2100, "unit": "MHz"}}}},
           "mem_0": {{"clk": {{"value": 1300, "unit": "MHz"}}}}}}
    print(json.dumps([{{"gpu": 0, "clock": clk, "power": {{"socket_power": {{"value": 140, "unit": "W"}}}}}}]))
elif args[0] == "metric":
    print(json.dumps([{{"gpu": 0, "usage": {{"gfx_activity": {{"value": 0, "unit": "%"}}}}}}]))
elif args[0] == "static" and "--limit" in args:
    print(json.dumps([{{"gpu": 0, "limit": {{"max_power": {{"value": 750, "unit": "W"}},
                                          "power_cap": {{"value": state["cap"], "unit": "W"}}}}}}]))
elif args[0] == "set":
    if os.environ.get("FAKE_AMD_DENY"):
        print("AMDSMI_STATUS_PERMISSION - Permission Denied")
        sys.exit(1)
    if "--power-cap" in args:
        state["cap"] = float(args[args.index("--power-cap") + 1])
    if "--clk-limit" in args and args[-2] == "max":
        state["sclk"] = int(args[-1])
elif args[0] == "reset":
    state["sclk"] = 2100
json.dump(state, open(state_path, "w"))
"""


@pytest.fixture
def fake_amd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "amd-smi"
    tool.write_text(FAKE.format(python=sys.executable))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_AMD_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("FAKE_AMD_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("MAGPIE_PLUGINS", "gpu_amd")
    return tmp_path / "calls.log"


def _sets(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.split()[0] in ("set", "reset")]


def test_query_apply_restore(fake_amd: Path) -> None:
    hw = {"enabled": True, "default": {"power": {"limit_watts": 600}, "frequency": {"gpu_clock_mhz": [1500, 1800]}}}
    with use_plugin_manager(PluginManager()):
        before = hardware.record()["gpus"][0]
        with hardware.applied(hw):
            inside = hardware.record()["gpus"][0]
        after = hardware.record()["gpus"][0]
    assert (before["power_limit_w"], before["sm_clock_mhz"], before["source"]) == (750.0, 2100.0, "amd-smi")
    assert (inside["power_limit_w"], inside["sm_clock_mhz"]) == (600.0, 1800.0)
    assert (after["power_limit_w"], after["sm_clock_mhz"]) == (750.0, 2100.0)
    assert _sets(fake_amd) == [
        "set -g 0 --power-cap 600",
        "set -g 0 --clk-limit sclk min 1500",
        "set -g 0 --clk-limit sclk max 1800",
        "reset -g 0 --clocks",
        "set -g 0 --power-cap 750",
    ]


def test_levels_use_manual_perf_level(fake_amd: Path) -> None:
    hw = {"enabled": True, "default": {"frequency": {"gpu_clock_level": 7}}}
    with use_plugin_manager(PluginManager()), hardware.applied(hw):
        pass
    assert _sets(fake_amd) == ["set -g 0 --perf-level MANUAL", "set -g 0 --clk-level SCLK 7", "reset -g 0 --clocks"]


def test_permission_denied_is_clear(fake_amd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AMD_DENY", "1")
    hw = {"enabled": True, "default": {"power": {"limit_watts": 600}}}
    denied = pytest.raises(HardwareControlError, match="Permission Denied")
    with use_plugin_manager(PluginManager()), denied, hardware.applied(hw):
        pytest.fail("the run must not start")
