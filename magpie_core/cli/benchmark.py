"""``magpie benchmark``: drive an LLM server with a streaming load and report.

``--trace-dir`` keeps AMD Magpie's standalone gap analysis of an existing
trace folder.
"""

from __future__ import annotations

from pathlib import Path

import typer

from magpie_core.cli.app import STATE, NotAvailable, app, handle_errors
from magpie_core.cli.gap import GapFlags, gap_config_from_flags, run_gap_pipeline


@app.command("benchmark")
@handle_errors
def benchmark_command(
    framework: str | None = typer.Argument(None, help="serving framework plugin name (see `magpie plugins`)"),
    benchmark_config: Path | None = typer.Option(None, "--benchmark-config", "-b", help="benchmark YAML"),
    model: str | None = typer.Option(None, "--model", "-m"),
    precision: str | None = typer.Option(None, "--precision", "-p"),
    tp: int | None = typer.Option(None, "--tp", min=1),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1),
    input_len: int | None = typer.Option(None, "--input-len", min=1),
    output_len: int | None = typer.Option(None, "--output-len", min=1),
    torch_profiler: bool | None = typer.Option(None, "--torch-profiler/--no-torch-profiler"),
    run_mode: str | None = typer.Option(None, "--run-mode", help="local | docker | ray | external"),
    run_kind: str | None = typer.Option(None, "--run-kind", help="measurement | diagnostic"),
    base_url: str | None = typer.Option(None, "--base-url", help="benchmark an already running server"),
    docker_image: str | None = typer.Option(None, "--docker-image"),
    timeout: float | None = typer.Option(None, "--timeout", min=1),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o"),
    trace_dir: Path | None = typer.Option(None, "--trace-dir", help="gap analysis of existing traces only"),
    top_k: int = GapFlags.top_k,
    start_pct: float = GapFlags.start_pct,
    end_pct: float = GapFlags.end_pct,
    min_duration_us: float = GapFlags.min_duration_us,
    categories: list[str] | None = GapFlags.categories,
    ignore_categories: list[str] | None = GapFlags.ignore_categories,
    no_rank_csv: bool = GapFlags.no_rank_csv,
    find_kernel_sources: bool = GapFlags.find_kernel_sources,
    kernel_source_repos: list[str] | None = GapFlags.kernel_source_repos,
) -> None:
    """Benchmark an LLM serving framework (or, with --trace-dir, analyze its traces)."""
    if trace_dir is not None:
        config = gap_config_from_flags(
            top_k=top_k,
            start_pct=start_pct,
            end_pct=end_pct,
            min_duration_us=min_duration_us,
            categories=categories,
            ignore_categories=ignore_categories,
            no_rank_csv=no_rank_csv,
            find_kernel_sources=find_kernel_sources,
            kernel_source_repos=kernel_source_repos,
        )
        raise typer.Exit(run_gap_pipeline(trace_dir, config, output_dir or STATE.output_dir))
    try:
        from magpie_core.pipelines.benchmark import run_benchmark_cli
    except ImportError as exc:
        raise NotAvailable(f"benchmark mode is not available in this build ({exc})") from exc
    raise typer.Exit(
        run_benchmark_cli(
            framework=framework,
            benchmark_config=benchmark_config,
            overrides={
                "model": model,
                "precision": precision,
                "tp": tp,
                "concurrency": concurrency,
                "input_len": input_len,
                "output_len": output_len,
                "torch_profiler": torch_profiler,
                "run_mode": run_mode,
                "run_kind": run_kind,
                "base_url": base_url,
                "docker_image": docker_image or STATE.docker_image,
                "timeout": timeout,
            },
            output_dir=STATE.resolve_output_dir(output_dir),
        )
    )
