"""``magpie targeted-trace adapt-torch`` and ``magpie targeted-trace postprocess`` (AMD Magpie's flags).

Exit codes: 0 done (postprocess: the folder is valid); 1 postprocess found integrity issues (each is
listed, with its file and line); 2 unusable input, named (no traces, a trace that cannot be read, a bad
target config with file/line/key, an output folder that is not new, a folder that is not a targeted trace).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from magpie_core.cli.kit import UsageError, handle_errors
from magpie_core.config.loader import ConfigError, load_yaml, validate
from magpie_targeted_trace.config import TargetedTraceConfig

app = typer.Typer(
    help="Adapt PyTorch profiler traces into targeted-kernel-trace shards, and validate them.", no_args_is_help=True
)

#: where the targeted_trace block may sit in a target config file (AMD Magpie reads the first two)
BLOCK_PATHS: tuple[tuple[str, ...], ...] = (("targeted_trace",), ("benchmark", "profiler", "targeted_trace"), ())


def load_target_config(path: Path) -> TargetedTraceConfig:
    """The ``targeted_trace`` block of ``path`` (or the file itself), switched on; ConfigError with file/line/key."""
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, "the root must be a mapping (a targeted_trace block or its keys)")
    for prefix in BLOCK_PATHS:
        block: Any = data
        for key in prefix:
            block = block.get(key) if isinstance(block, dict) else None
        if isinstance(block, dict) and (prefix or "targets" in block or "targeted_trace" not in data):
            sub_lines = {loc[len(prefix) :]: n for loc, n in lines.items() if loc[: len(prefix)] == prefix}
            return validate(TargetedTraceConfig, {**block, "enabled": True}, path, sub_lines)
    raise ConfigError(path, "targeted_trace must be a mapping", lines.get(("targeted_trace",)))


def discover_traces(explicit: list[Path], trace_dir: Path | None) -> list[Path]:
    """The ``--trace`` files and the traces found under ``--trace-dir``; UsageError naming what is missing."""
    for path in explicit:
        if not path.is_file():
            raise UsageError(f"--trace {path}: no such file")
    found = list(explicit)
    if trace_dir is not None:
        if not trace_dir.is_dir():
            raise UsageError(f"--trace-dir {trace_dir}: no such folder")
        found += [p for p in trace_dir.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz"))]
    unique = sorted({p.resolve() for p in found})
    if not unique:
        where = f" under {trace_dir}" if trace_dir else ""
        raise UsageError(
            f"no PyTorch profiler trace files (.json, .json.gz) were found{where}; give --trace or --trace-dir"
        )
    return unique


@app.command("adapt-torch")
@handle_errors
def adapt_torch_cmd(
    target_config: Annotated[Path, typer.Option("--target-config", help="YAML: a targeted_trace block (targets...)")],
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="new folder for manifest.json and shards/")],
    run_id: Annotated[str, typer.Option("--run-id", help="identifies this run in every record")],
    framework: Annotated[str, typer.Option("--framework", help="the framework that produced the traces")],
    trace: Annotated[list[Path] | None, typer.Option("--trace", help="a trace file (repeatable)")] = None,
    trace_dir: Annotated[Path | None, typer.Option("--trace-dir", help="find .json/.json.gz traces under it")] = None,
    framework_version: Annotated[str | None, typer.Option("--framework-version")] = None,
    image: Annotated[str | None, typer.Option("--image", help="container image, recorded as provenance")] = None,
) -> None:
    """Stream the kernels matching the targets into checksummed shards; print the manifest."""
    from magpie_targeted_trace.adapt import adapt_torch

    config = load_target_config(target_config)
    traces = discover_traces(trace or [], trace_dir)
    if not run_id.strip() or not framework.strip():
        raise UsageError("--run-id and --framework must not be empty")
    try:
        manifest, inputs = adapt_torch(
            traces,
            output_dir,
            config,
            run_id=run_id,
            framework=framework,
            framework_version=framework_version,
            image=image,
        )
    except ValueError as exc:  # an output folder that is not new
        raise UsageError(str(exc)) from None
    typer.echo(json.dumps(manifest, indent=2, sort_keys=True))
    if inputs.unreadable:
        raise UsageError(
            "could not read (the manifest records it; the other traces were adapted): " + "; ".join(inputs.unreadable)
        )


@app.command("postprocess")
@handle_errors
def postprocess_cmd(
    trace_dir: Annotated[Path, typer.Option("--trace-dir", help="a targeted-trace folder (manifest.json, shards/)")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="also write the summary here")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="print the issues on stderr as one error")] = False,
) -> None:
    """Validate every shard line by line against its manifest receipt; print the bounded summary."""
    from magpie_targeted_trace.postprocess import postprocess

    try:
        summary = postprocess(trace_dir, output)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    typer.echo(json.dumps(summary, indent=2, sort_keys=True))
    if strict and summary["issues"]:
        typer.echo("error: " + "; ".join(summary["issues"]), err=True)
    if not summary["valid"]:
        raise typer.Exit(1)
