"""AMD Magpie's offline, command-launched framework ``xdit`` for ``magpie benchmark``.

A config with ``framework: xdit`` and ``run_cmd: "<command>"`` has no server: the command is the
benchmark. As AMD Magpie does, the command is

- split like a shell would (``shlex``) but **never run through a shell**: no pipes, redirections,
  ``&&`` or variable expansion; put those in a script and run the script;
- stripped of its own ``--output_directory``/``--output-directory`` (with value) and ``--profile``:
  magpie owns where results go and when to profile;
- extended with ``envs.EXTRA_XDIT_ARGS`` (per-variant flags such as ``--use_fbcache``), split on
  whitespace with quotes kept, as AMD Magpie's scripts split every ``EXTRA_*_ARGS``
  (:func:`magpie_benchmark.serving.cli_args.split_extra_args`),
  then ``--output_directory <run folder>`` and, for the profiled diagnostic run, ``--profile``.

It runs in its own process group with ``benchmark.timeout_seconds``, the run's ``envs`` (all but the
keys magpie reads) and the GPUs' visible-devices variable in its environment; Ctrl-C stops its group.
Its output goes to ``run_cmd.log`` in the run folder. The result is ``timings.json`` in the output
directory (:mod:`magpie_run_cmd.timings`); the profiled run's traces are xDiT's
``profile_trace_rank_<N>.json.gz``, renamed ``rank_<N>.trace.json.gz`` as AMD Magpie does.

Trust: the command is whatever the config file says, run with the user's rights: run only configs
you would run yourself. Secrets go in ``envs`` (the environment), never in ``run_cmd``, where every
user of the machine can read them in ``ps``; magpie hides the values of secret-looking flags in its
report and logs, but cannot hide them from ``ps``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from magpie_benchmark.interfaces import OfflineFramework, OfflineRun
from magpie_benchmark.serving.cli_args import split_extra_args

from magpie_core import hookimpl
from magpie_core.runtime.processes import run_command, tail
from magpie_run_cmd.timings import RESULT_FILE, ResultError, metrics, read_timings, report_blocks, shape_of

#: flags magpie sets itself: a value the command gives is dropped (``--flag value`` and ``--flag=value``)
OWNED_WITH_VALUE = ("--output_directory", "--output-directory")
OWNED_SWITCHES = ("--profile",)
EXTRA_ARGS_ENV = "EXTRA_XDIT_ARGS"
#: xDiT's per-rank profile traces in the output directory
TRACE_PREFIX = "profile_trace_rank_"


class CommandError(ValueError):
    """``benchmark.run_cmd`` cannot be turned into a command."""


def _split(text: str, field: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:  # an unclosed quote
        raise CommandError(f"{field}: {exc}: {text!r}") from None


def build_argv(run_cmd: str | None, extra_args: str, out_dir: Path, *, profile: bool) -> list[str]:
    """The argv AMD Magpie runs for ``run_cmd`` (see the module docstring)."""
    tokens = _split(run_cmd or "", "benchmark.run_cmd")
    if not tokens:
        raise CommandError("benchmark.run_cmd is empty: an offline framework needs the command to benchmark")
    argv: list[str] = []
    skip_value = False
    for token in tokens:
        if skip_value:
            skip_value = False
            continue
        flag, eq, _ = token.partition("=")
        if flag in OWNED_WITH_VALUE:
            skip_value = not eq
            continue
        if token in OWNED_SWITCHES:
            continue
        argv.append(token)
    argv += split_extra_args(extra_args)
    argv += ["--output_directory", str(out_dir)]
    return [*argv, "--profile"] if profile else argv


def collect_traces(out_dir: Path) -> list[Path]:
    """xDiT's ``profile_trace_rank_<N>.json.gz``, renamed ``rank_<N>.trace.json.gz`` (AMD Magpie's layout)."""
    traces = []
    for src in sorted(out_dir.glob(f"{TRACE_PREFIX}*.json.gz")):
        rank = src.name[len(TRACE_PREFIX) : -len(".json.gz")]
        traces.append(src.rename(out_dir / f"rank_{rank}.trace.json.gz"))
    return traces


class Xdit(OfflineFramework):
    name = "xdit"
    description = "AMD Magpie's offline xDiT workloads: runs benchmark.run_cmd, reads its timings.json"

    def run_offline(
        self, config: Any, out_dir: Path, *, profile: bool, env: dict[str, str], log_path: Path
    ) -> OfflineRun:
        extra = str(config.envs.get(EXTRA_ARGS_ENV) or "")
        try:
            argv = build_argv(config.run_cmd, extra, out_dir, profile=profile)
        except CommandError as exc:
            return OfflineRun([], None, 0.0, log_path, errors=[str(exc)])
        from magpie_benchmark.offline import redact_argv  # here: this module loads with every command

        out_dir.mkdir(parents=True, exist_ok=True)
        log_path.write_text(f"$ {shlex.join(redact_argv(argv))}\n")
        outcome = run_command(
            argv, cwd=Path.cwd(), env=env, timeout_s=config.timeout_seconds, stream_to=log_path, grace_s=10.0
        )
        run = OfflineRun(argv, outcome.returncode, outcome.duration_s, log_path, timed_out=outcome.timed_out)
        if not outcome.ok:
            last = tail(outcome.output, 1)
            run.errors.append(
                f"run_cmd {_how_it_ended(outcome.returncode, outcome.timed_out, outcome.duration_s)} "
                f"(see {log_path}{'; last line: ' + last if last else ''})"
            )
        if profile:
            run.traces = collect_traces(out_dir)
            if not run.traces:
                run.errors.append(f"{out_dir}: no {TRACE_PREFIX}*.json.gz: the profiled run wrote no trace")
            return run
        self._read_result(run, out_dir / RESULT_FILE)
        return run

    @staticmethod
    def _read_result(run: OfflineRun, path: Path) -> None:
        """The metrics of ``path`` into ``run`` (kept even when the command then failed: nothing measured is lost)."""
        run.result_file = path
        try:
            raw = metrics(read_timings(path), shape_of(run.argv))
        except ResultError as exc:
            run.errors.append(str(exc))
            return
        run.metrics = raw
        run.throughput, run.latency = report_blocks(raw)


def _how_it_ended(code: int | None, timed_out: bool, seconds: float) -> str:
    if timed_out:
        return f"timed out after {seconds:.0f} s (benchmark.timeout_seconds) and was stopped"
    if code is not None and code < 0:
        return f"was killed by signal {-code}"
    return f"exited with status {code}"


@hookimpl
def magpie_register_serving_frameworks(register: Any) -> None:
    register(Xdit())
