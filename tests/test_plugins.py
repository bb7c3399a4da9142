"""The plugin system: discovery, third-party plugins, broken plugins, conflicts, MAGPIE_PLUGINS."""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from magpie_core import hookimpl
from magpie_core.interfaces import KernelBackend
from magpie_core.plugins import (
    PluginConflictError,
    PluginManager,
    PluginWarning,
    UnknownComponentError,
    get_plugin_manager,
    use_plugin_manager,
)

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
    assert example["components"] == {
        "kernel_backend": ["numpy"],
        "kernel_name_parser": ["mylib"],
        "trace_analyzer": ["kernel-count"],
        "mcp_tool": ["example_kernel_count"],
        "command": ["kernel-count"],
    }
    assert set(example["hooks"]) == {
        "magpie_register_kernel_backends",
        "magpie_register_kernel_name_parsers",
        "magpie_register_trace_analyzers",
        "magpie_register_commands",
        "magpie_register_mcp_tools",
    }
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
    assert stderr.count("magpie-broken-plugin") == 3  # one warning per broken entry point, naming the distribution
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


def test_misspelt_hook_fails_its_plugin_and_names_the_hook(run_magpie, third_party_site):
    plugins, stderr = _plugins_json(run_magpie, {"PYTHONPATH": str(third_party_site)})
    misspelt = plugins["misspelt_hook"]
    assert misspelt["status"] == "failed"
    assert "'magpie_register_kernel_backend' is not a magpie hook" in misspelt["error"]
    assert "did you mean 'magpie_register_kernel_backends'" in misspelt["error"]
    assert "misspelt_hook" in stderr


def test_ad_hoc_plugins_in_an_explicit_manager(monkeypatch):
    monkeypatch.setenv("MAGPIE_PLUGINS", "")  # nothing from entry points: only what the test registers
    module = _module_plugin("magpie_adhoc_plugin")
    manager = PluginManager(plugins=[("adhoc", module)])
    assert manager.plugins["adhoc"].components == {"kernel_backend": ["same_type"]}
    assert manager.plugins["local"].status == "disabled"  # default plugins obey MAGPIE_PLUGINS too
    with use_plugin_manager(manager):
        assert get_plugin_manager().get("kernel_backend", "same_type") is manager.get("kernel_backend", "same_type")
    monkeypatch.delenv("MAGPIE_PLUGINS")  # the process-wide manager built next is cached for later tests
    assert get_plugin_manager() is not manager


def test_a_hook_that_raises_fails_only_its_plugin(monkeypatch):
    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    bad = types.ModuleType("magpie_gpu_raiser")

    @hookimpl
    def magpie_detect_gpus():
        raise OSError("driver went away")

    bad.magpie_detect_gpus = magpie_detect_gpus
    good = types.ModuleType("magpie_gpu_finder")
    good.magpie_detect_gpus = hookimpl(lambda: ["gpu0"])
    manager = PluginManager(entry_points=[], plugins=[("raiser", bad), ("finder", good)], defaults=False)
    with pytest.warns(
        PluginWarning, match="'raiser'.*could not|'raiser'.*failed in magpie_detect_gpus.*driver went away"
    ):
        assert manager.detect_gpus() == ["gpu0"]


def test_third_party_command_and_analyzer_have_the_builtins_powers(run_magpie, third_party_site, tmp_path):
    env = {"PYTHONPATH": str(third_party_site)}
    help_text = run_magpie(["--help"], env=env).stdout
    for command in ("kernel-count", "gap", "inference", "analyze"):
        assert command in help_text
    trace = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    result = run_magpie(["kernel-count", str(trace), "--output-dir", str(tmp_path)], env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert Path(summary["output"]).is_file()
    plugins, _ = _plugins_json(run_magpie, env)
    assert plugins["example"]["components"]["trace_analyzer"] == ["kernel-count"]
    assert plugins["example"]["components"]["mcp_tool"] == ["example_kernel_count"]


def test_first_party_command_of_a_plugin_that_is_not_loaded(run_magpie, third_party_site):
    result = run_magpie(["-v", "gap", "x.json"], env={"PYTHONPATH": str(third_party_site), "MAGPIE_PLUGINS": "example"})
    assert result.returncode == 2
    assert "'magpie gap' comes from the plugin distribution magpie-gap-analysis, which is not loaded" in result.stderr


def test_a_plugin_without_declared_commands_adds_them_through_the_hook(monkeypatch):
    """A plugin whose distribution declares no ``magpie.commands`` entry point still adds commands with
    ``magpie_register_commands`` (called before the command runs); a taken name is skipped with a warning."""
    import typer

    from magpie_core.cli.commands import add_plugin_commands

    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    module = types.ModuleType("magpie_hook_commands")

    @hookimpl
    def magpie_register_commands(cli):
        cli.command("hook-only")(lambda: None)
        cli.command("analyze")(lambda: None)

    module.magpie_register_commands = magpie_register_commands
    manager = PluginManager(entry_points=[], plugins=[("hooked", module)], defaults=False, lazy=True)
    cli = typer.Typer()
    with pytest.warns(PluginWarning, match="'analyze'.*already taken"):
        added = add_plugin_commands(cli, manager, word="hook-only")
    assert "hook-only" in added and "analyze" not in added
    assert [c.name for c in cli.registered_commands] == ["hook-only"]


def test_a_lazy_manager_calls_a_kinds_registration_hooks_on_first_use(monkeypatch):
    """The process-wide manager is lazy: a command pays only for the component kinds it looks up."""
    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    calls: list[str] = []
    module = types.ModuleType("magpie_lazy_probe")

    @hookimpl
    def magpie_register_kernel_backends(register):
        calls.append("kernel_backend")
        register(_Backend())

    @hookimpl
    def magpie_register_mcp_tools(register):
        calls.append("mcp_tool")
        raise RuntimeError("tool registration broke")

    module.magpie_register_kernel_backends = magpie_register_kernel_backends
    module.magpie_register_mcp_tools = magpie_register_mcp_tools
    manager = PluginManager(entry_points=[], plugins=[("probe", module)], defaults=False, lazy=True)
    assert calls == []  # nothing registered yet
    assert list(manager.components("kernel_backend")) == ["same_type"]
    assert manager.get("kernel_backend", "same_type") is manager.components("kernel_backend")["same_type"]
    assert calls == ["kernel_backend"]  # once, and no other kind's hook
    # the broken hook of another kind is reported when that kind is first used, as an eager manager would
    with pytest.warns(PluginWarning, match="'probe'.*failed in magpie_register_mcp_tools.*tool registration broke"):
        assert manager.components("mcp_tool") == {}
    assert manager.plugins["probe"].status == "failed"
    assert manager.components("kernel_backend") == {}  # a failed plugin is forgotten in every kind


def test_plugins_lists_every_kind_of_a_lazy_manager(monkeypatch):
    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    module = _module_plugin("magpie_lazy_listed")
    manager = PluginManager(entry_points=[], plugins=[("listed", module)], defaults=False, lazy=True)
    assert manager.plugins["listed"].components == {"kernel_backend": ["same_type"]}


def test_the_process_wide_manager_imports_no_unused_plugin_modules():
    """``magpie gap`` looks up kernel-name parsers and config blocks: the MCP tools, the environments' and
    profilers' modules are not imported (their entry modules import them inside the hooks)."""
    code = (
        "import sys; from magpie_core.plugins import get_plugin_manager; m = get_plugin_manager(); "
        "m.components('kernel_name_parser'); m.components('config_block'); "
        "print(sorted(n for n in sys.modules if n.startswith(('magpie_mcp.tools', 'magpie_advice.tools', "
        "'magpie_profilers_amd.rocprof', 'magpie_profilers_nvidia.ncu', 'magpie_source_finder.finder', "
        "'magpie_kernels_pytorch.native', 'magpie_loop.state'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_threads_asking_for_a_kind_at_once_see_it_whole():
    """A second thread asking while the first collects waits for it (it saw an empty registry before)."""
    import threading
    import time

    from magpie_core.builtins.local import LocalEnvironment

    entered = threading.Event()

    class SlowPlugin:
        @hookimpl
        def magpie_register_environments(self, register):
            entered.set()
            time.sleep(0.2)  # a plugin's registration still running when the second thread asks
            register(LocalEnvironment())

    manager = PluginManager(entry_points=[], plugins=[("slow", SlowPlugin())], defaults=False, lazy=True)
    seen: list[list[str]] = []
    first = threading.Thread(target=lambda: seen.append(list(manager.components("environment"))))
    first.start()
    entered.wait(5)
    seen.append(list(manager.components("environment")))
    first.join()
    assert seen == [["local"], ["local"]]


def test_a_distribution_adds_its_own_hooks_and_kinds(monkeypatch):
    """The benchmark's kinds (serving frameworks, checks) are not the core's: a distribution declares a module of
    hook specs with its ``KINDS`` (entry-point group ``magpie.hookspecs``), loaded whichever plugins are allowed,
    and its kinds work like the core's; without it, the kind is empty and its hook an unknown one."""
    from magpie_core.hookspecs import hookspec

    def magpie_register_gadgets(register):
        """Register gadgets."""

    specs = types.ModuleType("gadget_specs")
    specs.magpie_register_gadgets = hookspec(magpie_register_gadgets)  # type: ignore[attr-defined]
    specs.KINDS = {"gadget": "magpie_register_gadgets"}  # type: ignore[attr-defined]

    class Gadget:
        name = "widget"

    class Provides:
        @hookimpl
        def magpie_register_gadgets(self, register):
            register(Gadget())

    manager = PluginManager(entry_points=[], plugins=[("provides", Provides())], specs=[specs], defaults=False)
    assert list(manager.components("gadget")) == ["widget"] and manager.plugins["provides"].status == "loaded"
    assert "magpie_register_gadgets" in manager.hook_names() and manager.kind_hooks["gadget"]
    with pytest.warns(PluginWarning, match="'magpie_register_gadgets' is not a magpie hook"):
        alone = PluginManager(entry_points=[], plugins=[("provides", Provides())], specs=[], defaults=False)
    assert alone.components("gadget") == {} and alone.plugins["provides"].status == "failed"


def test_the_benchmarks_kinds_load_with_the_distribution_not_with_its_plugin(run_magpie):
    """``MAGPIE_PLUGINS=vllm``: the benchmark plugin (its command) is not loaded, but its hook specs are, so the
    vLLM framework still loads (a serving framework needs the benchmark's kinds, not its command)."""
    listed = run_magpie(["plugins", "--json"], env={"MAGPIE_PLUGINS": "vllm"})
    assert listed.returncode == 0, listed.stderr
    status = {p["name"]: p["status"] for p in json.loads(listed.stdout)}
    assert status["vllm"] == "loaded" and status["benchmark"] == "disabled", status


def test_a_backend_whose_compile_raises_fails_that_kernel_alone(monkeypatch, tmp_path):
    """A backend's ``compile`` runs in magpie's own process (threads of a compare): an exception there is that
    kernel's failed compile, not a crash of the run (a thread-unsafe parser once raised SystemError there)."""
    from magpie_core.config.kernel import KernelConfigFile
    from magpie_core.pipelines.analyze import analyze
    from magpie_core.plugins import use_plugin_manager

    class Raising(KernelBackend):
        name = "raising"
        kernel_types = ("raising",)

        def compile(self, kernel, build_dir):
            raise SystemError("AST constructor recursion depth mismatch")

        def evaluate(self, task, cwd, workdir, env, timeout):  # never reached: the compile failed
            raise AssertionError("evaluated after a failed compile")

    module = types.ModuleType("magpie_raising_backend")
    module.magpie_register_kernel_backends = hookimpl(lambda register: register(Raising()))
    monkeypatch.delenv("MAGPIE_PLUGINS", raising=False)
    manager = PluginManager(entry_points=[], plugins=[("raising", module)])  # with the core's local environment
    file = KernelConfigFile.model_validate({"kernels": [{"id": "k", "type": "raising"}]})
    with use_plugin_manager(manager):
        report = analyze(file, config_dir=tmp_path, output_dir=tmp_path / "out", measure_performance=False)
    (result,) = report.results
    assert result.compile.status.value == "error" and "raising: SystemError" in (result.compile.message or "")
