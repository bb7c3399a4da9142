"""``magpie analyze`` and ``magpie compare`` (their pipelines are imported when they run, not for ``--help``).

A kernel YAML (``-k``) is the usual input; AMD Magpie's flag form also works:
``magpie analyze vector_add.hip --testcase "./vector_add" --type hip``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from magpie_core.cli.app import app
from magpie_core.cli.kit import (
    EXIT_CHECKS_FAILED,
    EXIT_OK,
    STATE,
    UsageError,
    check_output_dir,
    console,
    err_console,
    escape,
    forwards_interrupts,
    gpu_hardware,
    handle_errors,
)
from magpie_core.cli.output import check_format, format_option, no_html_option, print_rows, write_html
from magpie_core.config.amd_magpie import DEFAULT_KERNEL_TYPE

if TYPE_CHECKING:
    from magpie_core.config.kernel import KernelConfigFile
    from magpie_core.pipelines.kernel_reports import CompareReport, KernelResult


def _kernel_file(
    kernel_config: Path | None,
    sources: list[str],
    testcase: str | None,
    kernel_type: str,
    compile_cmd: str | None,
    *,
    require_testcase: bool = True,
) -> tuple[KernelConfigFile, Path]:
    if kernel_config is not None:
        if sources:
            raise UsageError("give either --kernel-config or kernel source files, not both")
        ignored = [
            flag
            for flag, given in (
                ("--testcase", testcase is not None),
                ("--compile-cmd", compile_cmd is not None),
                ("--type", kernel_type != DEFAULT_KERNEL_TYPE),
            )
            if given
        ]
        if ignored:  # they describe source-file kernels; with a kernel file they would be silently ignored
            raise UsageError(f"{', '.join(ignored)}: for kernels given as source files; --kernel-config sets these")
        from magpie_core.pipelines.kernel_files import load_kernel_file, prepare_kernel_file

        config_dir = kernel_config.resolve().parent
        file = prepare_kernel_file(load_kernel_file(kernel_config), config_dir, kernel_config)
        return _framework_defaults(file), config_dir
    if not sources:
        raise UsageError("nothing to run: give --kernel-config FILE, or source files with --testcase")
    recognised = _recognised_sources(sources, testcase, kernel_type, compile_cmd)
    if recognised is not None:
        return _framework_defaults(recognised), Path.cwd()
    python = next((s for s in sources if s.endswith(".py")), None)
    if python and kernel_type == DEFAULT_KERNEL_TYPE:  # not a HIP source; no plugin took it as its own
        kinds = f"KernelBench's (class ModelNew after its problem) or named in a YAML (-k, entry: {python}:NAME)"
        raise UsageError(f"{python}: a Python kernel file is {kinds}")
    if not testcase and require_testcase:
        raise UsageError("--testcase is required when kernels are given as source files")
    from magpie_core.config.kernel import KernelConfig, KernelConfigFile

    stems = [Path(src).stem for src in sources]
    ids = stems if len(set(stems)) == len(stems) else [f"kernel_{i}_{stem}" for i, stem in enumerate(stems)]
    kernels = [
        KernelConfig(
            id=kernel_id, type=kernel_type, source_files=[src], testcase_command=testcase, compile_command=compile_cmd
        )
        for kernel_id, src in zip(ids, sources, strict=True)
    ]
    return _framework_defaults(KernelConfigFile(kernels=kernels)), Path.cwd()


def _recognised_sources(
    sources: list[str], testcase: str | None, kernel_type: str, compile_cmd: str | None
) -> KernelConfigFile | None:
    """A kernel file a plugin builds for sources it recognises (e.g. a problem file and its solutions).

    Only asked when no testcase or compile command is given: those say the files are built and run the AMD Magpie way.
    """
    if testcase is not None or compile_cmd is not None:
        return None
    given_type = kernel_type if kernel_type != DEFAULT_KERNEL_TYPE else None
    from magpie_core.pipelines.kernel_files import kernel_file_from_sources, prepare_kernel_file

    file = kernel_file_from_sources(sources, given_type)
    return prepare_kernel_file(file, Path.cwd()) if file is not None else None


#: blocks of the framework config (``--config``) that a kernel file without its own inherits
FRAMEWORK_DEFAULT_BLOCKS = ("performance", "correctness", "latency", "compiling")


def _framework_defaults(file: KernelConfigFile) -> KernelConfigFile:
    """AMD Magpie: the framework config's blocks apply unless the kernel file overrides them."""
    framework = STATE.framework
    update = {
        key: getattr(framework, key)
        for key in FRAMEWORK_DEFAULT_BLOCKS
        if getattr(file, key) is None and key in framework.model_fields_set
    }
    return file.model_copy(update=update) if update else file


def _status(result: KernelResult) -> str:
    c = result.correctness.status.value
    color = {"passed": "green", "failed": "red", "error": "red"}.get(c, "yellow")
    return f"[{color}]{c}[/{color}]"


def _timing_cell(result: KernelResult) -> tuple[str, str]:
    t = result.performance.timing
    if t is None:
        return result.performance.status.value, ""
    flag = "" if result.performance.timing_meaningful else " (not meaningful)"
    return f"{t.median:,.2f}{flag}", f"{t.ci95_low:,.2f}–{t.ci95_high:,.2f} (n={t.samples}, {t.stop_reason})"


def _print_results(results: list[KernelResult], workspace: str | None, fmt: str, title: str) -> None:
    """Each kernel's compile, correctness and time (analyze; a compare without timing, ``--no-perf``)."""
    rows = [[r.kernel_id, r.kernel_type, r.compile.status.value, _status(r), *_timing_cell(r)] for r in results]
    columns = ["kernel", "type", "compile", "correctness", "median µs", "95% CI µs"]
    print_rows(columns, rows, fmt, title=f"magpie {title}")
    if fmt != "table":
        return
    for r in results:
        for msg in r.errors[:2]:
            console.print(f"  [red]{escape(r.kernel_id)}[/red]: {escape(msg)}", soft_wrap=True)
        if r.correctness.status.value == "not_run" and r.correctness.message:
            console.print(f"  [yellow]{escape(r.kernel_id)}[/yellow]: {escape(r.correctness.message)}", soft_wrap=True)
        for note in r.performance.notes:
            if "not meaningful" in note or "launch-bound" in note:
                console.print(f"  [yellow]{escape(r.kernel_id)}[/yellow]: {escape(note)}", soft_wrap=True)
    console.print(f"report: {workspace}/{title}_report.json", markup=False)


def _print_compare(report: CompareReport, fmt: str = "table") -> None:
    if not report.ranking and not report.stability:  # nothing timed: what was checked, not an empty ranking
        return _print_results(report.results.kernel_results, report.workspace, fmt, "compare")
    rows = []
    for e in report.ranking:
        ci = f"{e.speedup_ci95[0]:.3f}–{e.speedup_ci95[1]:.3f}" if e.speedup_ci95 else ""
        speed = f"{e.speedup:.3f}x" if e.speedup is not None else ""
        interval = f"{e.ci95_low_us:,.2f}–{e.ci95_high_us:,.2f}"
        rows.append([str(e.rank), e.kernel_id, f"{e.median_us:,.2f}", interval, speed, ci, e.verdict or ""])
    columns = ["rank", "kernel", "median µs", "95% CI µs", "speedup", "speedup 95% CI", "verdict"]
    print_rows(columns, rows, fmt, title="magpie compare")
    if fmt != "table":
        return
    for u in report.unranked:
        console.print(f"  not ranked: [red]{escape(u['kernel_id'])}[/red]: {escape(u['reason'])}", soft_wrap=True)
    console.print(f"[bold]{escape(report.verdict)}[/bold]", soft_wrap=True)
    for e in report.ranking:
        if e.verdict == "UNSTABLE" and e.verdict_reason and not (report.stability or {}).get("unstable"):
            reason = escape(e.verdict_reason)
            console.print(f"  [yellow]{escape(e.kernel_id)}[/yellow]: UNSTABLE: {reason}", soft_wrap=True)
    if report.stability:
        console.print(f"timing: {report.stability['message']}", markup=False, soft_wrap=True)
    console.print(f"report: {report.workspace}/compare_report.json", markup=False)


class KernelFlags:
    kernels = typer.Argument(None, help="Python kernel files, the reference first (ref.py sol.py ...), or sources")
    kernel_config = typer.Option(None, "--kernel-config", "-k", help="kernel YAML")
    testcase = typer.Option(None, "--testcase", "-t", help="testcase command (source-file form)")
    kernel_type = typer.Option(DEFAULT_KERNEL_TYPE, "--type", help="kernel type for source files (a backend's type)")
    no_perf = typer.Option(False, "--no-perf", help="compile and check correctness only")
    output_dir = typer.Option(
        None, "--output-dir", "-o", help="where the run workspace goes", callback=check_output_dir
    )
    as_json = typer.Option(False, "--json", help="print the report JSON instead of tables")
    fmt = format_option()
    no_html = no_html_option()


def _run_settings(file: KernelConfigFile, output_dir: Path | None) -> dict[str, Any]:
    """Environment, workers, output folder and environment config blocks for one run."""
    from magpie_core.pipelines import kernel_files

    defaults = kernel_files.block_options(STATE.framework)
    environment = STATE.resolve_environment(kernel_files.file_environment(file))
    shared = None
    if environment != "local":
        shared = kernel_files.shared_output_dir(kernel_files.environment_options(file, defaults))
    return {
        "environment": environment,
        "workers": STATE.resolve_workers(file.scheduler.max_workers if file.scheduler else None),
        "output_dir": output_dir or STATE.output_dir or (Path(shared) if shared else STATE.resolve_output_dir(None)),
        "environment_defaults": defaults,
    }


def _export_container_image(file: KernelConfigFile) -> None:
    """``--docker-image`` / ``scheduler.docker_image`` reach the ``container`` environment plugin."""
    own = file.scheduler.docker_image if file.scheduler else None
    if image := STATE.docker_image or own or STATE.framework.scheduler.docker_image:
        os.environ["MAGPIE_CONTAINER_IMAGE"] = image


def _progress(message: str) -> None:
    err_console.print(f"[dim]… {escape(message)}[/dim]")


@app.command("analyze")
@forwards_interrupts
@handle_errors
def analyze_command(
    kernels: list[str] | None = KernelFlags.kernels,
    kernel_config: Path | None = KernelFlags.kernel_config,
    testcase: str | None = KernelFlags.testcase,
    kernel_type: str = KernelFlags.kernel_type,
    compile_cmd: str | None = typer.Option(None, "--compile-cmd", help="compile command (source-file form)"),
    no_perf: bool = KernelFlags.no_perf,
    output_dir: Path | None = KernelFlags.output_dir,
    as_json: bool = KernelFlags.as_json,
    fmt: str = KernelFlags.fmt,
    no_html: bool = KernelFlags.no_html,
) -> None:
    """Compile, check and time one or more independent kernels."""
    check_format(fmt)
    file, config_dir = _kernel_file(kernel_config, kernels or [], testcase, kernel_type, compile_cmd)
    _export_container_image(file)
    from magpie_core.pipelines.analyze import analyze

    with gpu_hardware():
        report = analyze(
            file,
            config_dir=config_dir,
            **_run_settings(file, output_dir),
            measure_performance=not no_perf,
            progress=None if as_json else _progress,
        )
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _print_results(report.results, report.workspace, fmt, "analyze")
    write_html("analyze", report, report.workspace, skip=no_html, quiet=as_json or fmt != "table")
    failed = any(r.failed_checks for r in report.results)
    raise typer.Exit(EXIT_CHECKS_FAILED if failed else EXIT_OK)


@app.command("compare")
@forwards_interrupts
@handle_errors
def compare_command(
    kernels: list[str] | None = KernelFlags.kernels,
    kernel_config: Path | None = KernelFlags.kernel_config,
    testcase: str | None = KernelFlags.testcase,
    kernel_type: str = KernelFlags.kernel_type,
    baseline: str | None = typer.Option(None, "--baseline", help="baseline kernel: index or id (default 0)"),
    min_effect: float = typer.Option(0.02, "--min-effect", min=0, help="smallest speedup called FASTER/SLOWER"),
    timing: str = typer.Option(
        "auto", "--timing", help="auto | blocks (interleaved, paired) | rounds (rotating; where blocks cannot run)"
    ),
    processes: int | None = typer.Option(
        None, "--processes", min=1, help="worker processes per kernel (more: narrower)"
    ),
    budget: float | None = typer.Option(None, "--budget", min=0.1, help="seconds of timing per kernel"),
    no_perf: bool = KernelFlags.no_perf,
    output_dir: Path | None = KernelFlags.output_dir,
    as_json: bool = KernelFlags.as_json,
    fmt: str = KernelFlags.fmt,
    no_html: bool = KernelFlags.no_html,
) -> None:
    """Compare two or more variants under identical inputs and settings; rank the correct ones.

    magpie compare ref.py sol.py [more.py ...]  (KernelBench-style files: Model/ModelNew, get_inputs)
    magpie compare -k kernels.yaml"""
    check_format(fmt)
    # AMD Magpie: --testcase is optional for compare (kernels without one are compiled, not run)
    file, config_dir = _kernel_file(kernel_config, kernels or [], testcase, kernel_type, None, require_testcase=False)
    if overrides := {k: v for k, v in {"processes": processes, "budget_seconds": budget}.items() if v is not None}:
        from magpie_core.config.kernel import PerformanceConfig

        current = file.performance.model_dump(exclude_unset=True) if file.performance else {}
        file.performance = PerformanceConfig.model_validate({**current, **overrides})
    _export_container_image(file)
    base: int | str | None = int(baseline) if baseline is not None and baseline.isdigit() else baseline
    try:
        from magpie_core.pipelines.compare import compare

        with gpu_hardware():
            report = compare(
                file,
                config_dir=config_dir,
                **_run_settings(file, output_dir),
                baseline=base,
                measure_performance=not no_perf,
                min_effect=min_effect,
                timing=timing,
                progress=None if as_json else _progress,
            )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _print_compare(report, fmt)
    write_html("compare", report, report.workspace, skip=no_html, quiet=as_json or fmt != "table")
    failed = any(r.failed_checks for r in report.results.kernel_results)
    raise typer.Exit(EXIT_CHECKS_FAILED if failed else EXIT_OK)
