"""``magpie benchmark``: drive an LLM server with a streaming load and report.

Declared in this distribution's ``magpie.commands`` entry-point group (its plugin's ``magpie_register_commands``),
as any plugin command is: imported only when it runs or ``magpie --help`` lists it.
``--trace-dir`` keeps AMD Magpie's standalone gap analysis of an existing trace folder: it is forwarded
to the installed ``gap`` trace analyzer, and its flags are validated by the gap plugin's own settings model, its
``gap_analysis`` config block; both are looked up in the registry, as every plugin reaches another. The spelling
of those flags is :class:`~magpie_benchmark.trace_dir_flags.TraceDirFlags`, which ``magpie gap`` shares.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from magpie_benchmark.load_flags import LoadFlags, load_patch
from magpie_benchmark.trace_dir_flags import TraceDirFlags, trace_dir_block
from magpie_core.cli.kit import (
    STATE,
    NotAvailable,
    UsageError,
    check_output_dir,
    console,
    escape,
    forwards_interrupts,
    gpu_hardware,
    handle_errors,
)
from magpie_core.cli.output import check_format, format_option, no_html_option, print_rows, write_html
from magpie_core.runtime.workspace import run_folder

if TYPE_CHECKING:
    from pydantic import BaseModel

    from magpie_benchmark.config import BenchmarkConfig, LoadConfig
    from magpie_benchmark.report import BenchmarkReport
    from magpie_benchmark.run_config import RunOverrides

#: the trace analyzer that ``--trace-dir`` runs, its settings (a config block of benchmark files), and the
#: distribution that provides both
GAP_ANALYZER = "gap"
GAP_BLOCK = "benchmark.gap_analysis"
GAP_DISTRIBUTION = "magpie-gap-analysis"


def _gap_component(kind: str, name: str, what: str) -> Any:
    """The gap plugin's ``kind``/``name`` from the registry; not installed: exit 2 naming the distribution."""
    from magpie_core.plugins import UnknownComponentError, get_plugin_manager

    try:
        return get_plugin_manager().get(kind, name)
    except UnknownComponentError as exc:
        raise NotAvailable(f"--trace-dir needs {what}, from the plugin distribution {GAP_DISTRIBUTION}: {exc}") from exc


def trace_dir_settings(flags: dict[str, Any]) -> BaseModel:
    """The ``gap_analysis:`` block the ``--trace-dir`` flags describe (list flags may hold comma lists), validated
    by the model the gap plugin registers for that block."""
    from magpie_core.config.validation import validate

    model = _gap_component("config_block", GAP_BLOCK, "the gap analysis settings").model
    return validate(model, trace_dir_block(flags), "command line")


@contextlib.contextmanager
def _gap_folder(output_dir: Path) -> Iterator[Path]:
    """AMD Magpie's ``<output dir>/gap_analysis/``; when that holds an earlier analysis, a new
    ``gap_analysis_<time>/`` beside it (analyzers write fixed file names: nothing is overwritten)."""
    target = output_dir / "gap_analysis"
    try:
        target.mkdir(parents=True)
    except FileExistsError:
        with run_folder(output_dir, "gap_analysis") as fresh:
            yield fresh
        return
    try:
        yield target
    except BaseException:
        with contextlib.suppress(OSError):
            target.rmdir()  # only while it is still empty
        raise


def run_trace_dir_analysis(trace_dir: Path, config: BaseModel, output_dir: Path, no_html: bool = False) -> int:
    """``--trace-dir``: the ``gap`` analyzer's tables and summary; exit 0 ok, 1 a rank could not be read.

    ``config``: the gap plugin's ``gap_analysis`` block (:func:`trace_dir_settings`). Prints the warnings and
    where the files are (``magpie gap`` prints the kernel table too).
    """
    if not trace_dir.exists():
        raise UsageError(f"trace path not found: {trace_dir}")
    analyzer = _gap_component("trace_analyzer", GAP_ANALYZER, "gap analysis")
    try:
        with _gap_folder(output_dir) as run_dir:
            summary: dict[str, Any] = analyzer.analyze(trace_dir, config.model_dump(), run_dir)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    for err in [*(summary.get("errors") or []), *(summary.get("warnings") or [])]:
        console.print(f"[yellow]warning:[/yellow] {escape(err)}", soft_wrap=True)
    console.print(f"wrote {summary.get('csv_path')} and {summary.get('json_path')}", markup=False)
    write_html("gap", summary, summary.get("output_dir"), skip=no_html)
    failed = [r for r in summary.get("ranks") or [] if not r.get("ok")]
    return 1 if failed or not summary.get("num_ranks") else 0


def check_benchmark_flags(base_url: str | None, run_mode: str | None) -> None:
    """Flags that contradict each other or are not what they claim: a usage error naming the flag."""
    from magpie_benchmark.config import SERVER_STARTING_MODES, check_http_url

    if base_url is None:
        return
    try:
        check_http_url(base_url)
    except ValueError as exc:
        raise UsageError(f"--base-url: {exc}") from None
    if run_mode in SERVER_STARTING_MODES:
        raise UsageError(
            f"--base-url benchmarks a server that is already running; --run-mode {run_mode} starts one: "
            "give one of them"
        )


def run_benchmark_cli(
    *,
    framework: str | None,
    benchmark_config: Path | None,
    overrides: RunOverrides,
    output_dir: Path,
    fmt: str = "table",
    no_html: bool = False,
) -> int:
    """Run ``magpie benchmark`` and print its summary: exit 0 ok, 1 the run failed, 2 usage (raised)."""
    from magpie_benchmark.config import CORE_RUN_MODES
    from magpie_benchmark.pipeline import run_benchmark, run_benchmark_on_environment

    config = _checked_run_config(framework, benchmark_config, overrides)
    with gpu_hardware():
        if config.run_mode in CORE_RUN_MODES:
            report = run_benchmark(config, output_dir)
        else:
            try:
                report = run_benchmark_on_environment(config, output_dir, config.run_mode)
            except LookupError as exc:
                raise NotAvailable(f"run_mode {config.run_mode}: {exc}") from exc
    write_html("benchmark", report, report.workspace_dir or None, skip=no_html, quiet=True)
    if fmt != "table":
        print_points(report.points, fmt)
        return 0 if report.success else 1
    _print_run_summary(report, config.load)
    return 0 if report.success else 1


def _checked_run_config(
    framework: str | None, benchmark_config: Path | None, overrides: RunOverrides
) -> BenchmarkConfig:
    """The run's config (the YAML, if any, then ``overrides``), checked before any server starts: a usage error (exit
    2) for no model, an unknown framework, a missing or malformed trace file, a check that cannot run here."""
    from magpie_benchmark.benchmark_server import serving_framework
    from magpie_benchmark.checks import preflight_checks
    from magpie_benchmark.config import BenchmarkConfig
    from magpie_benchmark.interfaces import CheckUnavailable
    from magpie_benchmark.run_config import apply_overrides, load_benchmark_config
    from magpie_benchmark.workload import trace_problem

    if benchmark_config is None and framework is None:
        raise UsageError("give a framework (magpie benchmark NAME ...) or --benchmark-config")
    config = load_benchmark_config(benchmark_config) if benchmark_config else BenchmarkConfig()
    config = apply_overrides(config, framework, overrides, from_file=benchmark_config is not None)
    if config.run_mode != "external" and not config.model and not config.base_url and not config.run_cmd:
        raise UsageError("no model: set benchmark.model or --model")
    if config.run_mode != "external" or config.run_kind == "diagnostic":
        serving_framework(config.framework)  # unknown framework: exit 2 with the installed list
    problem = trace_problem(config)  # before any server starts: a missing or malformed trace file
    if problem:
        raise UsageError(problem)
    try:
        preflight_checks(config)  # a check that cannot run here: exit 2 before any server starts
    except CheckUnavailable as exc:
        raise UsageError(str(exc)) from None
    return config


def _print_run_summary(report: BenchmarkReport, load: LoadConfig) -> None:
    """The table view of a run: its results (an offline framework's line, or the serving summary), its errors and
    where its report is."""
    t = report.throughput
    if report.raw_result:
        print_offline(report.framework, report.raw_result)
    elif t:
        print_serving_summary(report.framework, t, report.latency, load.percentile_metrics, load.metric_percentiles)
    for err in report.errors:
        console.print(f"[red]error:[/red] {escape(err)}", soft_wrap=True)
    console.print(f"report: {Path(report.workspace_dir) / 'benchmark_report.json'}", markup=False)
    if report.workspace_dir and (Path(report.workspace_dir) / "report.html").is_file():
        console.print(f"report page: {Path(report.workspace_dir) / 'report.html'}", markup=False, soft_wrap=True)


def print_serving_summary(
    framework: str, t: dict[str, Any], latency: dict[str, Any], metrics: list[str], percentiles: list[float]
) -> None:
    """The result block ``vllm bench serve`` users read: counts, duration, token totals, throughputs, then for each
    of ``--percentile-metrics`` its mean, median and ``--metric-percentiles`` (all points of the run together)."""
    rows: list[tuple[str, str]] = [
        ("Successful requests", f"{t['completed_requests']}"),
        ("Failed requests", f"{t['failed_requests']}"),
        ("Benchmark duration (s)", f"{t['duration_seconds']:.2f}"),
        ("Total input tokens", f"{t['total_input_tokens']}"),
        ("Total generated tokens", f"{t['total_output_tokens']}"),
        ("Request throughput (req/s)", f"{t['request_throughput']:.2f}"),
        ("Output token throughput (tok/s)", f"{t['output_throughput']:.2f}"),
        ("Total token throughput (tok/s)", f"{t['total_token_throughput']:.2f}"),
    ]
    if t.get("request_goodput") is not None:
        rows.append(("Request goodput (req/s, every --goodput SLO met)", f"{t['request_goodput']:.2f}"))
    for key in metrics:
        stats = latency.get(key) or {}
        if stats.get("mean_ms") is None:
            continue
        rows.append((f"---{LATENCY_NAMES.get(key, key)}---", ""))
        cells = [("Mean", "mean_ms"), ("Median", "median_ms"), *((f"P{p:g}", f"p{p:g}_ms") for p in percentiles)]
        rows += [(f"{label} {key.upper()} (ms)", f"{stats[k]:.2f}") for label, k in cells if stats.get(k) is not None]
    width = max(len(label) for label, _ in rows) + 2
    console.print(f"{'=' * 12} Serving Benchmark Result ({framework}) {'=' * 12}", markup=False)
    for label, value in rows:
        console.print(f"{label:<{width}}{value:>12}" if value else label.replace("---", "-" * 6), markup=False)


LATENCY_NAMES = {
    "ttft": "Time to First Token",
    "tpot": "Time per Output Token (excl. 1st token)",
    "itl": "Inter-token Latency",
    "e2el": "End-to-end Latency",
}


def print_offline(framework: str, raw: dict[str, Any]) -> None:
    """An offline workload's line (AMD Magpie's diffusion metrics)."""
    console.print(
        f"{framework}: {raw['iterations']} iteration(s) of batch {raw['batch_size']}, "
        f"{raw['images_per_sec']:.3f} images/s, {raw['latency_per_image_s']:.3f} s per image, "
        f"median iteration {raw['median_iteration_s'] * 1000:.1f} ms"
    )


def print_points(points: list[dict[str, Any]], fmt: str) -> None:
    """One row per load point (``--format csv|json``)."""
    columns = ["concurrency", "request_rate", "completed", "failed", "request_throughput", "output_throughput"]
    columns += [f"{k}_{s}" for k in ("ttft", "tpot", "itl", "e2el") for s in ("mean_ms", "median_ms", "p99_ms")]
    rows = []
    for p in points:
        m = p["metrics"]
        row = [p.get("concurrency"), p.get("request_rate"), m["completed"], m["failed"]]
        row += [m["request_throughput"], m["output_throughput"]]
        row += [m[k][s] for k in ("ttft", "tpot", "itl", "e2el") for s in ("mean_ms", "median_ms", "p99_ms")]
        rows.append(row)
    print_rows(columns, rows, fmt)


@forwards_interrupts
@handle_errors
def benchmark_command(
    framework: str | None = typer.Argument(None, help="serving framework plugin name (see `magpie plugins`)"),
    benchmark_config: Path | None = typer.Option(None, "--benchmark-config", "-b", help="benchmark YAML"),
    model: str | None = typer.Option(None, "--model", "-m", help="model to serve: a hub name or a local folder"),
    precision: str | None = typer.Option(
        None, "--precision", "-p", help="weights precision, e.g. fp8, bf16 (a YAML's own)"
    ),
    tp: int | None = typer.Option(None, "--tp", min=1, help="tensor-parallel size (GPUs per server)"),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="requests in flight at once"),
    input_len: int | None = typer.Option(None, "--input-len", min=1, help="prompt tokens per request"),
    output_len: int | None = typer.Option(None, "--output-len", min=1, help="generated tokens per request"),
    torch_profiler: bool | None = typer.Option(
        None, "--torch-profiler/--no-torch-profiler", help="profiled diagnostic run (default: off; a YAML's own)"
    ),
    run_mode: str | None = typer.Option(None, "--run-mode", help="docker | local | external | an environment"),
    run_kind: str | None = typer.Option(None, "--run-kind", help="measurement | diagnostic"),
    base_url: str | None = typer.Option(None, "--base-url", help="benchmark an already running server"),
    docker_image: str | None = typer.Option(None, "--docker-image", help="image for --run-mode docker"),
    timeout: float | None = typer.Option(None, "--timeout", min=1, help="seconds: bounds every wait (probe, load)"),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", "-o", callback=check_output_dir, help="folder for the run folder [./magpie_runs]"
    ),
    trace_dir: Path | None = typer.Option(None, "--trace-dir", help="gap analysis of existing traces only"),
    top_k: int = TraceDirFlags.top_k,
    start_pct: float = TraceDirFlags.start_pct,
    end_pct: float = TraceDirFlags.end_pct,
    min_duration_us: float = TraceDirFlags.min_duration_us,
    categories: list[str] | None = TraceDirFlags.categories,
    ignore_categories: list[str] | None = TraceDirFlags.ignore_categories,
    no_rank_csv: bool = TraceDirFlags.no_rank_csv,
    find_kernel_sources: bool = TraceDirFlags.find_kernel_sources,
    kernel_source_repos: list[str] | None = TraceDirFlags.kernel_source_repos,
    repeats: int | None = typer.Option(None, "--repeats", min=1, max=100, help="measure N times, report the spread"),
    restart_between_repeats: bool | None = typer.Option(
        None, "--restart-between-repeats/--no-restart-between-repeats", help="a fresh server for every repeat"
    ),
    compare: tuple[Path, Path] | None = typer.Option(
        None, "--compare", help="end-to-end verdict of two benchmark reports: --compare BASE NEW"
    ),
    interleave: tuple[Path, Path] | None = typer.Option(
        None,
        "--interleave",
        help="measure two benchmark YAMLs in alternating rounds (--repeats N rounds, default 3) and judge "
        "the change on the noise the rounds measured: --interleave BASE.yaml NEW.yaml",
    ),
    allow_different_workload: bool = typer.Option(
        False, "--allow-different-workload", help="--compare reports of different workloads anyway (labelled)"
    ),
    min_effect: float = typer.Option(0.02, "--min-effect", min=0, help="--compare: smallest change called (0.02=2%)"),
    noise_floor: float | None = typer.Option(
        None, "--noise-floor", min=0, help="--compare: run-to-run noise floor for every metric (default: measured)"
    ),
    as_json: bool = typer.Option(False, "--json", help="--compare: print the comparison JSON"),
    num_prompts: int | None = LoadFlags.num_prompts,
    request_rate: str | None = LoadFlags.request_rate,
    burstiness: float | None = LoadFlags.burstiness,
    dataset_name: str | None = LoadFlags.dataset_name,
    dataset_path: str | None = LoadFlags.dataset_path,
    seed: int | None = LoadFlags.seed,
    endpoint: str | None = LoadFlags.endpoint,
    tokenizer: str | None = LoadFlags.tokenizer,
    percentile_metrics: str | None = LoadFlags.percentile_metrics,
    metric_percentiles: str | None = LoadFlags.metric_percentiles,
    goodput: list[str] | None = LoadFlags.goodput,
    trace_time_scale: float | None = LoadFlags.trace_time_scale,
    request_timeout: float | None = LoadFlags.request_timeout,
    request_deadline: float | None = LoadFlags.request_deadline,
    probe_timeout: float | None = LoadFlags.probe_timeout,
    stall_timeout: float | None = LoadFlags.stall_timeout,
    fmt: str = format_option(),
    no_html: bool = no_html_option(),
) -> None:
    """Benchmark an LLM serving framework (or, with --trace-dir, analyze its traces; with --compare, judge two runs)."""
    check_benchmark_flags(base_url, run_mode)
    check_format(fmt)
    json_out = as_json or fmt == "json"
    if compare is not None:
        raise typer.Exit(_compare_only(compare, allow_different_workload, min_effect, noise_floor, json_out))
    from magpie_benchmark.run_config import RunOverrides

    overrides = RunOverrides(
        model=model,
        precision=precision,
        tp=tp,
        concurrency=concurrency,
        input_len=input_len,
        output_len=output_len,
        torch_profiler=torch_profiler,
        run_mode=run_mode,
        run_kind=run_kind,
        base_url=base_url,
        docker_image=docker_image or STATE.docker_image,
        timeout=timeout,
        repeats=repeats,
        restart_between_repeats=restart_between_repeats,
    )
    # the load flags: --interleave takes them for both of its runs; a run adds its timeouts
    load = dict(
        num_prompts=num_prompts, request_rate=request_rate, burstiness=burstiness, dataset_name=dataset_name,
        dataset_path=dataset_path, seed=seed, endpoint=endpoint, tokenizer=tokenizer,
        percentile_metrics=percentile_metrics, metric_percentiles=metric_percentiles, goodput=goodput,
        trace_time_scale=trace_time_scale,
    )  # fmt: skip
    if interleave is not None:
        given = framework is not None or benchmark_config is not None
        raise typer.Exit(_interleave_only(interleave, given, overrides, load, output_dir, min_effect, json_out))
    if trace_dir is not None:
        run_flags = {
            "FRAMEWORK": framework, "--benchmark-config": benchmark_config, "--model": model, "--base-url": base_url,
            "--run-mode": run_mode, "--concurrency": concurrency, "--input-len": input_len, "--output-len": output_len,
        }  # fmt: skip
        settings = {
            "top_k": top_k, "start_pct": start_pct, "end_pct": end_pct, "min_duration_us": min_duration_us,
            "categories": categories, "ignore_categories": ignore_categories, "no_rank_csv": no_rank_csv,
            "find_kernel_sources": find_kernel_sources, "kernel_source_repos": kernel_source_repos,
        }  # fmt: skip
        raise typer.Exit(_trace_dir_only(trace_dir, run_flags, settings, STATE.resolve_output_dir(output_dir), no_html))
    timeouts = dict(
        request_timeout=request_timeout, request_deadline=request_deadline, probe_timeout=probe_timeout,
        stall_timeout=stall_timeout,
    )  # fmt: skip
    raise typer.Exit(
        run_benchmark_cli(
            framework=framework,
            benchmark_config=benchmark_config,
            overrides=replace(overrides, patch=load_patch(**load, **timeouts)),
            output_dir=STATE.resolve_output_dir(output_dir),
            fmt=fmt,
            no_html=no_html,
        )
    )


def _compare_only(
    reports: tuple[Path, Path],
    allow_different_workload: bool,
    min_effect: float,
    noise_floor: float | None,
    as_json: bool,
) -> int:
    """``--compare BASE NEW``: the end-to-end verdict of two benchmark reports; no run."""
    from magpie_benchmark.cli_compare import run_compare_cli

    return run_compare_cli(
        list(reports),
        allow_different_workload=allow_different_workload,
        min_effect=min_effect,
        noise_floor=noise_floor,
        as_json=as_json,
    )


def _interleave_only(
    yamls: tuple[Path, Path],
    run_given: bool,
    overrides: RunOverrides,
    load: dict[str, Any],
    output_dir: Path | None,
    min_effect: float,
    as_json: bool,
) -> int:
    """``--interleave BASE.yaml NEW.yaml``: the two runs in alternating rounds, with the command line's overrides and
    load flags (``load``) over both; FRAMEWORK or --benchmark-config (``run_given``) is a usage error."""
    from magpie_benchmark.cli_compare import run_interleave_cli

    if run_given:
        raise UsageError("--interleave takes its two benchmark YAMLs: drop FRAMEWORK and --benchmark-config")
    patched = replace(overrides, patch=load_patch(**load))
    out = STATE.resolve_output_dir(output_dir)
    return run_interleave_cli(list(yamls), patched, out, min_effect=min_effect, as_json=as_json)


def _trace_dir_only(
    trace_dir: Path, run_flags: dict[str, Any], settings: dict[str, Any], output_dir: Path, no_html: bool
) -> int:
    """``--trace-dir``: gap analysis of existing traces (AMD Magpie's, into ``<-o>/gap_analysis/``); the flags of a
    run are refused, since they would be silently ignored."""
    given = [flag for flag, value in run_flags.items() if value is not None]
    if given:
        raise UsageError(f"--trace-dir analyzes existing traces and runs no benchmark: drop {', '.join(given)}")
    return run_trace_dir_analysis(trace_dir, trace_dir_settings(settings), output_dir, no_html=no_html)


def register(cli: typer.Typer) -> None:
    """Add ``benchmark`` to the command line ``cli``."""
    cli.command("benchmark")(benchmark_command)
