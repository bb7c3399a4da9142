"""The plugin system: discovery, third-party plugins, broken plugins, conflicts, MAGPIE_PLUGINS."""

from __future__ import annotations

import importlib.metadata as md
import json
import sys
import types
from pathlib import Path

import pytest

from magpie_core import hookimpl
from magpie_core.interfaces import KernelBackend
from magpie_core.plugins import PluginConflictError, PluginManager, PluginWarning, UnknownComponentError

from .conftest import DATA


def _plugins_json(run_magpie, env) -> dict[str, dict]:
    result = run_magpie(["plugins", "--json"], env=env)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)}, result.stderr


def test_third_party_plugin_is_listed_with_its_kinds(run_magpie, third_party_site):
    plugins, _ = _plugins_json(run_magpie, {"PYTHONPATH": str(third_party_site)})
    example = plugins["example"]
    assert example["status"] == "loaded"
    assert example["distribution"] == "magpie-example-plugin"
    assert example["version"] == "0.3.1"
    assert example["components"] == {"kernel_backend": ["numpy"], "kernel_name_parser": ["mylib"]}
    assert set(example["hooks"]) == {"magpie_register_kernel_backends", "magpie_register_kernel_name_parsers"}
    # first-party plugins register through the same hooks
    assert plugins["pytorch"]["components"]["kernel_backend"] == ["pytorch", "torch", "py", "torch_compile"]
    assert plugins["local"]["components"] == {"environment": ["local"]}


def test_broken_plugins_are_isolated_with_one_warning_each(run_magpie, third_party_site):
    plugins, stderr = _plugins_json(run_magpie, {"PYTHONPATH": str(third_party_site)})
    assert plugins["broken_import"]["status"] == "failed"
    assert "ModuleNotFoundError" in plugins["broken_import"]["error"]
    assert plugins["broken_register"]["status"] == "failed"
    assert "deliberately broken while registering" in plugins["broken_register"]["error"]
    assert plugins["broken_register"]["components"] == {}
    assert stderr.count("magpie-broken-plugin") == 2  # one warning per broken entry point, naming the distribution
    assert plugins["example"]["status"] == "loaded"


def test_third_party_kernel_type_runs_through_the_pipeline(run_magpie, third_party_site, tmp_path):
    config = DATA / "kernels" / "numpy_kernel.yaml"
    result = run_magpie(
        ["-o", str(tmp_path), "analyze", "-k", str(config), "--json"], env={"PYTHONPATH": str(third_party_site)}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    (kernel,) = report["results"]
    assert kernel["kernel_type"] == "numpy"
    assert kernel["correctness"]["status"] == "passed"
    assert kernel["performance"]["timing"]["median"] > 0
    assert kernel["environment"]["numpy"]
    assert Path(report["workspace"], "analyze_report.json").is_file()


def test_magpie_plugins_env_restricts_loading(run_magpie, third_party_site):
    plugins, _ = _plugins_json(run_magpie, {"PYTHONPATH": str(third_party_site), "MAGPIE_PLUGINS": "example,local"})
    assert plugins["example"]["status"] == "loaded"
    assert plugins["local"]["status"] == "loaded"
    assert plugins["pytorch"]["status"] == "disabled"
    assert plugins["broken_import"]["status"] == "disabled"  # never imported, so no warning either

    plugins, stderr = _plugins_json(run_magpie, {"PYTHONPATH": str(third_party_site), "MAGPIE_PLUGINS": ""})
    assert {row["status"] for row in plugins.values()} == {"disabled"}
    assert "magpie-broken-plugin" not in stderr


def test_restricting_by_distribution_name(run_magpie, third_party_site):
    plugins, _ = _plugins_json(
        run_magpie, {"PYTHONPATH": str(third_party_site), "MAGPIE_PLUGINS": "magpie-broken-plugin"}
    )
    assert plugins["broken_import"]["status"] == "failed"
    assert plugins["example"]["status"] == "disabled"


class _Backend(KernelBackend):
    kernel_types = ("same_type",)

    def evaluate(self, task):  # pragma: no cover - never run
        raise NotImplementedError


def _module_plugin(name: str) -> types.ModuleType:
    module = types.ModuleType(name)

    @hookimpl
    def magpie_register_kernel_backends(register):
        register(_Backend())

    module.magpie_register_kernel_backends = magpie_register_kernel_backends
    sys.modules[name] = module
    return module


def test_two_plugins_claiming_one_name_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    _module_plugin("magpie_dup_one")
    _module_plugin("magpie_dup_two")
    eps = [
        md.EntryPoint(name="dup_one", value="magpie_dup_one", group="magpie"),
        md.EntryPoint(name="dup_two", value="magpie_dup_two", group="magpie"),
    ]
    with pytest.raises(
        PluginConflictError,
        match=r"kernel backend 'same_type' is registered by plugin 'dup_one'.*and by plugin 'dup_two'",
    ):
        PluginManager(entry_points=eps)


def test_unknown_component_names_what_is_installed():
    manager = PluginManager(entry_points=[])
    with pytest.raises(UnknownComponentError, match="no kernel backend named 'hip' is installed"):
        manager.get("kernel_backend", "hip")


def test_import_failure_warns_in_process(monkeypatch):
    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    eps = [md.EntryPoint(name="ghost", value="magpie_no_such_module_xyz", group="magpie")]
    with pytest.warns(PluginWarning, match="'ghost'.*failed to load: ModuleNotFoundError"):
        manager = PluginManager(entry_points=eps)
    assert manager.plugins["ghost"].status == "failed"


def test_third_party_name_parser_is_used_by_gap_analysis(run_magpie, third_party_site, tmp_path):
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "mylib_gemm_fp16_128x128",
            "pid": 0,
            "tid": 7,
            "ts": 100 + 50 * i,
            "dur": 20,
            "args": {"device": 0, "stream": 7, "correlation": i},
        }
        for i in range(4)
    ]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    result = run_magpie(
        ["gap", str(trace), "--json", "-o", str(tmp_path / "gap")], env={"PYTHONPATH": str(third_party_site)}
    )
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["top_kernels"]
    assert (row["family"], row["category"], row["dtype"]) == ("mylib", "gemm", "fp16")
    assert row["self_cuda_total_us"] == 80.0
