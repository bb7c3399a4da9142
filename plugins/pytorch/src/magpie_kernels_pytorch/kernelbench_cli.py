"""The ``magpie kernelbench`` command group (see :mod:`magpie_kernels_pytorch.kernelbench_run`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from magpie_core.cli.output import format_option
from magpie_core.cli.output import print_rows as print_table_rows
from magpie_kernels_pytorch.extensions import FOLDER, BuildsAhead
from magpie_kernels_pytorch.kernelbench_report import KIND
from magpie_kernels_pytorch.kernelbench_run import VISIBLE_DEVICES, Problem, local_devices, pending, run, summary

#: KernelBench's timed calls per kernel (``eval_kernel_against_ref``: ``num_perf_trials = 100``)
KERNELBENCH_CALLS = 100
#: fast_p and every row, beside report.html in the output folder
SUMMARY_FILE = "kernelbench_summary.json"

kernelbench_app = typer.Typer(help="KernelBench problem sets: every problem x solution, fast_p with magpie's verdicts")


@dataclass(frozen=True)
class CompareProblem:
    """One problem's ``compare`` (picklable: a Ray task on another node runs it as it is)."""

    output_dir: Path
    measure_performance: bool
    #: the framework config's performance/correctness blocks (``magpie -c config.yaml``), as JSON data: read
    #: where the command runs, so that a task on another node runs with them too
    defaults: dict[str, Any] = field(default_factory=dict)
    #: settings of every problem's ``kernelbench:`` block (tolerance, mode, trials)
    block_settings: dict[str, Any] = field(default_factory=dict)
    #: where inline extensions are built and found again (``extensions.build_cached``); None: in each workspace
    extensions_cache: str | None = None

    def __call__(self, problem: Problem) -> dict[str, Any]:
        from magpie_core.config.kernel import KernelConfigFile
        from magpie_core.pipelines.compare import compare
        from magpie_core.pipelines.instances import parallel_starts
        from magpie_core.pipelines.kernel_files import prepare_kernel_file

        base = problem.reference.parent
        data = {"kernelbench": problem.block().model_dump() | self.block_settings, **self.defaults}
        # KernelBench's own clock beside magpie's: its 100 single synchronized calls per kernel, in the same run
        data["performance"] = {"call_trials": KERNELBENCH_CALLS, **(data.get("performance") or {})}
        file = prepare_kernel_file(KernelConfigFile.model_validate(data), base)
        # every worker process of this problem sees only its GPU; extensions come from the shared cache
        pinned = dict.fromkeys(VISIBLE_DEVICES, problem.devices) if problem.devices is not None else {}
        cache = {"extensions_cache": self.extensions_cache} if self.extensions_cache else {}
        kernels = [
            k.model_copy(update={"env": {**k.env, **pinned}, "options": {**k.options, **cache}})
            for k in file.all_kernels()
        ]
        file = file.model_copy(update={"kernels": kernels})
        report = compare(
            file,
            config_dir=base,
            output_dir=self.output_dir,
            measure_performance=self.measure_performance,
            # a check without timing (--no-perf) builds and checks the solutions side by side, as many as there
            # are CPUs (inline extensions take a CPU each to build); timed runs start their processes so anyway
            workers=parallel_starts(len(file.all_kernels())),
        )
        return json.loads(report.model_dump_json())


def framework_blocks(framework: Any) -> dict[str, Any]:
    """The framework config's blocks a kernel file inherits (as ``magpie compare`` applies them)."""
    from magpie_core.cli.kernels import FRAMEWORK_DEFAULT_BLOCKS

    return {
        key: getattr(framework, key).model_dump(mode="json", exclude_unset=True)
        for key in FRAMEWORK_DEFAULT_BLOCKS
        if key in framework.model_fields_set and getattr(framework, key) is not None
    }


@kernelbench_app.command("run")
def run_command(
    problems_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="KernelBench problem files"),
    solutions: Path = typer.Option(..., "--solutions", exists=True, file_okay=False, help="DIR/<problem>/*.py"),
    results: Path | None = typer.Option(
        None, "--results", help="appended JSONL; resumable [OUTPUT_DIR/kernelbench_results.jsonl]"
    ),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", "-o", help="workspaces, results, report.html [./magpie_runs/kernelbench]"
    ),
    no_perf: bool = typer.Option(False, "--no-perf", help="correctness only"),
    gpus: str | None = typer.Option(
        None, "--gpus", help="local: GPUs to spread problems over, one problem per GPU (a count, or ids: 0,2,3)"
    ),
    gpus_per_problem: float = typer.Option(1.0, "--gpus-per-problem", help="GPUs a Ray task asks for (0: CPU)"),
    no_html: bool = typer.Option(False, "--no-html", help="do not write report.html"),
    tolerance: str = typer.Option(
        "kernelbench", "--tolerance", help="kernelbench (HEAD's per-dtype table) or kernelbench-v0 (1e-2, leaderboards)"
    ),
    mode: str = typer.Option("train", "--mode", help="module mode of Model, ModelNew: train (KernelBench's) or eval"),
    trials: int = typer.Option(5, "--trials", min=1, help="input sets checked, each with its own seed"),
    extensions_cache: Path | None = typer.Option(
        None, "--extensions-cache", help="inline extensions built once per solution here [OUTPUT_DIR/torch_extensions]"
    ),
    build_jobs: int = typer.Option(
        max(1, (os.cpu_count() or 2) // 2),
        "--build-jobs",
        min=1,
        help="inline-extension builds side by side, ahead of the problems",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the whole summary (fast_p, every row) as JSON"),
    fmt: str = format_option(),
) -> None:
    """Compare every problem's solutions with its reference: a table per problem as it finishes, then fast_p
    (KernelBench's, and verified by magpie's intervals) and the report's path.

    Where problems run is magpie's global `--environment` (`magpie -e ray kernelbench run ...`: one Ray task,
    on its own GPU, per problem; `--workers` problems at once). Exit status: 0 when every solution compiled and is
    correct, 1 when any did not compile or is wrong (rejected ones included), 2 for a usage error."""
    from magpie_core.cli.kit import STATE
    from magpie_core.cli.output import check_format, write_html
    from magpie_core.pipelines.kernel_files import block_options

    tables = not as_json and check_format(fmt) == "table"

    # one folder that stays the same from run to run (what a resumed run finds again), under magpie's run root
    output_dir = (output_dir or (STATE.output_dir or STATE.resolve_output_dir(None)) / "kernelbench").resolve()
    results = results or output_dir / "kernelbench_results.jsonl"
    results.parent.mkdir(parents=True, exist_ok=True)
    block_settings = _block_settings(tolerance=tolerance, mode=mode, trials=trials)
    cache = (extensions_cache or output_dir / FOLDER).resolve()
    environment = STATE.resolve_environment()
    defaults = framework_blocks(STATE.framework)
    # what a row rests on besides the files: a row of other settings is run again, not reused
    settings = {"block": block_settings, "defaults": defaults, "timed": not no_perf}
    compare: Any = CompareProblem(output_dir, not no_perf, defaults, block_settings, str(cache))
    # local: the solutions build in the background, in the order their problems run, while earlier problems are
    # timed (elsewhere each node builds what its problems need, in the same cache folder)
    todo = pending(problems_dir, solutions, results, settings) if environment == "local" else []
    with BuildsAhead([s for p in todo for s in p.solutions], cache, build_jobs) as builds:
        rows = run(
            problems_dir,
            solutions,
            results,
            compare,
            environment=environment,
            workers=STATE.resolve_workers(),
            gpus=local_devices(gpus),
            gpus_per_problem=gpus_per_problem,
            options=block_options(STATE.framework),
            settings=settings,
            progress=(lambda name, rows: print_rows(name, rows)) if tables else None,
            ready=(lambda problem: builds.wait_for(problem.solutions)) if builds.by_file else None,
        )
    _say_builds(builds, cache, build_jobs)
    # "mode" names the page's kind, so `magpie report .../kernelbench_summary.json` draws it again
    data = summary(rows) | {"mode": KIND, "results": str(results.resolve()), "output_dir": str(output_dir)}
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / SUMMARY_FILE).write_text(json.dumps(data, indent=1) + "\n")
    write_html(KIND, data, output_dir, skip=no_html, quiet=True)
    if as_json:
        typer.echo(json.dumps({k: data[k] for k in ("fast_p", "fast_p_verified", "per_problem", "rows")}))
    elif not tables:  # the rows whole, every field of the results file
        columns = list(dict.fromkeys(k for r in rows for k in r))
        print_table_rows(columns, [[r.get(c) for c in columns] for r in rows], fmt)
    else:
        reused = [r for r in rows if r["reused"]]
        if reused:  # rows of an earlier run whose files and settings are unchanged
            print_rows(f"reused from {results}", reused)
        print_fast_p(data, output_dir / (SUMMARY_FILE if no_html else "report.html"))
    raise typer.Exit(0 if all(r["compiled"] and r["correct"] for r in rows) else 1)


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    """A problem's rows as a table (as KernelBench's scripts print a row per solution)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    columns = (
        "solution",
        "compiled",
        "correct",
        "µs",
        "ref µs",
        "speedup (95% CI)",
        "verdict",
        "KB speedup",
        "message",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for r in rows:
        ci = r.get("speedup_ci95")
        speedup = f"{r['speedup']:.3f}x ({ci[0]:.2f}-{ci[1]:.2f})" if r.get("speedup") and ci else ""
        times = [f"{r[k]:.2f}" if r.get(k) is not None else "" for k in ("runtime_us", "ref_runtime_us")]
        message = "" if r["correct"] and not r.get("launch_bound") else (r.get("launch_bound") or r["message"])
        table.add_row(
            Path(r["solution"]).name, _yes(r["compiled"]), _yes(r["correct"]), *times, speedup,
            r.get("verdict") or "", f"{r['kb_speedup']:.3f}x" if r.get("kb_speedup") else "", message[:160],
        )  # fmt: skip
    Console(width=max(120, Console().width)).print(table)


def print_fast_p(data: dict[str, Any], report: Path) -> None:
    plain, verified = data["fast_p"], data["fast_p_verified"]
    line = ", ".join(f"{k} {plain[k]:.2f} ({verified[k]:.2f})" for k in plain)
    typer.echo(f"{len(data['rows'])} solutions; {line}  (in brackets: verified by magpie's intervals)")
    if any(r.get("kb_speedup") for r in data["rows"]):
        kb = data["fast_p_kernelbench_clock"]
        typer.echo(
            "by KernelBench's clock (one synchronized call): " + ", ".join(f"{k} {v:.2f}" for k, v in kb.items())
        )
    if disagree := [Path(r["solution"]).name for r in data["rows"] if r.get("clocks_disagree")]:
        typer.echo(f"the two clocks disagree in direction on {', '.join(disagree)}: docs/kernel-evaluation.md")
    typer.echo(f"report: {report}")


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _say_builds(builds: BuildsAhead, cache: Path, jobs: int) -> None:
    outcomes = builds.results()
    if outcomes:
        failed = sum(o.status.value != "passed" for o in outcomes)
        cached = sum(bool(o.resources.get("cached")) for o in outcomes)
        typer.echo(
            f"inline extensions of {len(outcomes)} solution(s): {len(outcomes) - cached} built ({jobs} at a time, "
            f"while problems ran; problems waited {builds.waited_s:.0f} s for them), {cached} from {cache}; "
            f"{failed} failed (reported with their problems)",
            err=True,
        )


def _block_settings(**settings: Any) -> dict[str, Any]:
    """The options as ``kernelbench:`` block settings, checked by the block's own model (a bad value is a usage
    error naming the option)."""
    from pydantic import ValidationError

    from magpie_kernels_pytorch.kernelbench import KernelBenchBlock

    try:
        KernelBenchBlock.model_validate(settings)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise typer.BadParameter(error["msg"], param_hint=f"--{error['loc'][0]}") from None
    return settings
