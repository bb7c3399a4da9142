"""The built-in correctness harness and timing driver for Python-callable kernels.

KernelBench style: ``entry`` is a function or an ``nn.Module`` class,
``get_inputs()``/``get_init_inputs()`` make inputs, ``reference`` gives the
expected outputs. Several freshly seeded input sets are checked, with outputs
poisoned before each run. In ``compare`` the baseline's worker saves its
inputs and expected outputs, and every candidate is checked on exactly those.

Other backends (Triton, CUDA) reuse :func:`evaluate_python_kernel` and only
say how to prepare the callable and what to add to the report.
"""

from __future__ import annotations

import gc
import inspect
import itertools
import math
import os
import platform
import random
import secrets
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from magpie_core.config.kernel import CorrectnessConfig, KernelConfig, PerformanceConfig
from magpie_core.measurement import worker
from magpie_core.measurement.stats import sample_until_stable, summarize
from magpie_core.measurement.timing import BatchSampler, SamplerSession, TimingSettings, input_copies
from magpie_core.pipelines.blocked import FLOOR_MARGIN
from magpie_core.pipelines.instances import rejected
from magpie_core.plugins import get_plugin_manager
from magpie_core.reports import (
    CorrectnessResult,
    EvaluationOutcome,
    EvaluationTask,
    PerformanceResult,
    StageStatus,
)
from magpie_kernels_pytorch.checking import Tolerance, compare_outputs, poison_, poisoned_outputs
from magpie_kernels_pytorch.confinement import confine_process, confinement
from magpie_kernels_pytorch.extensions import use_folder
from magpie_kernels_pytorch.integrity import (
    FreshInputs,
    IntegrityError,
    Tamper,
    clone,
    from_wire,
    load_handover,
    plain_problems,
    reused_output,
    same,
    sampled,
    save_handover,
    to_wire,
)
from magpie_kernels_pytorch.layout import Layout, fix_host_allocator
from magpie_kernels_pytorch.loading import LoadError, module_of, resolve
from magpie_kernels_pytorch.timers import clock_info, per_call_us, write_floor_us

_urandom = os.urandom  # bound before any kernel is imported (integrity.Tamper watches it)
_tell = worker.tell  # the same


def _drawn() -> int:
    """A number from the OS, unknown to any code until drawn."""
    return int.from_bytes(_urandom(8), "little") >> 2


_GONE = object()


def _watched() -> dict[str, Callable[[], Any]]:
    """This module's functions :class:`~magpie_kernels_pytorch.integrity.Tamper` watches, looked up by name in the
    module (a patch of the attribute shows)."""
    own = globals()
    return {
        "harness.compare_outputs": lambda: own["compare_outputs"],
        "HarnessSession.sample": lambda: own["HarnessSession"].sample,
        "HarnessSession.capture": lambda: own["HarnessSession"].capture,
        "harness.sampled": lambda: own["sampled"],
        "harness.to_wire": lambda: own["to_wire"],
        "harness._urandom": lambda: own["_urandom"],
        "harness._tell": lambda: own["_tell"],
    }


@dataclass
class HarnessOptions:
    """What a backend adds to the shared harness."""

    backend: str
    default_device: str | None = None
    #: turn the loaded callable into the one to run (e.g. torch.compile)
    wrap: Callable[[Callable[..., Any], KernelConfig], Callable[..., Any]] | None = None
    #: False when timings cannot mean anything (e.g. an interpreter)
    timing_meaningful: bool = True
    timing_notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    #: load ``entry`` yourself (e.g. a native launcher in a compiled library); ``get_inputs``
    #: and ``reference`` must then name their Python file (``file.py:function``)
    load_entry: Callable[[KernelConfig, EvaluationTask], Callable[..., Any]] | None = None


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def nonfinite_problems(value: Any, where: str = "output") -> list[str]:
    """For a baseline without a reference: outputs must at least be fully written and finite."""
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
        bad = ~torch.isfinite(value.detach().cpu())
        if bool(bad.any()):
            flat = int(torch.nonzero(bad.reshape(-1))[0])
            return [
                f"{where}: {int(bad.sum())} non-finite elements, first at flat index {flat} (unwritten or overflow)"
            ]
        return []
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in nonfinite_problems(v, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in nonfinite_problems(v, f"{where}[{k!r}]")]
    return []


class _Prepared:
    """The callables of one kernel, loaded and instantiated."""

    def __init__(
        self,
        kernel: KernelConfig,
        search_dirs: list[Path],
        device: torch.device,
        seed: int,
        native_entry: Callable[[], Callable[..., Any]] | None = None,
    ) -> None:
        self.training = self._training(kernel)
        if native_entry is not None:
            self.module = None
            for what, ref in (("get_inputs", kernel.inputs_function), ("reference", kernel.reference)):
                if ref and ":" not in ref:
                    raise LoadError(
                        f"{what}: {ref!r} must name its Python file ('file.py:{ref}'): the entry "
                        f"{kernel.entry!r} is a compiled launcher, not a Python module"
                    )
            self.get_inputs = resolve(kernel.inputs_function, search_dirs)
            init_fn = self._optional(kernel.init_inputs_function, search_dirs)
            self.init_inputs = list(init_fn()) if init_fn else []
            self.fn = native_entry()
            self.reference = (
                self._instantiate(resolve(kernel.reference, search_dirs), device, seed) if kernel.reference else None
            )
            self.output_args = list(kernel.options.get("output_args", []))
            return
        if kernel.entry:
            entry_ref = kernel.entry
            inputs_ref = kernel.inputs_function
        elif kernel.bench_target:
            entry_ref = f"{kernel.bench_target.module}:{kernel.bench_target.callable}"
            inputs_ref = kernel.get_inputs or kernel.bench_target.get_inputs
        else:
            raise LoadError("no 'entry' (or 'bench_target') to run")
        self.module = module_of(entry_ref, search_dirs)
        self.get_inputs = resolve(inputs_ref, search_dirs, self.module)
        init_fn = self._optional(kernel.init_inputs_function, search_dirs)
        self.init_inputs = list(init_fn()) if init_fn else []
        self.fn = self._instantiate(resolve(entry_ref, search_dirs), device, seed)
        self.reference = (
            self._instantiate(resolve(kernel.reference, search_dirs, self.module), device, seed)
            if kernel.reference
            else None
        )
        self.output_args: list[int] = list(kernel.options.get("output_args", []))

    @staticmethod
    def _training(kernel: KernelConfig) -> bool:
        """``options.module_mode``: ``eval`` (the default) or ``train`` (KernelBench: its eval never calls
        ``.eval()``, so BatchNorm normalises with batch statistics and Dropout drops)."""
        mode = kernel.options.get("module_mode", "eval")
        if mode not in ("train", "eval"):
            raise LoadError(f"options.module_mode: {mode!r}, expected 'train' or 'eval'")
        return mode == "train"

    def _optional(self, ref: str, search_dirs: list[Path]) -> Callable[..., Any] | None:
        if self.module is None and ":" not in ref:
            return None
        try:
            return resolve(ref, search_dirs, self.module)
        except LoadError:
            return None

    def _instantiate(self, obj: Any, device: torch.device, seed: int) -> Callable[..., Any]:
        if inspect.isclass(obj):
            seed_everything(seed)  # same weights for the kernel and its reference
            instance = obj(*to_device(self.init_inputs, device))
            if isinstance(instance, torch.nn.Module):
                instance = instance.to(device).train(self.training)
            return instance
        return obj


def _call(fn: Callable[..., Any], args: Sequence[Any], output_args: list[int]) -> Any:
    result = fn(*args)
    if output_args:
        outs = [args[i] for i in output_args]
        return outs[0] if len(outs) == 1 else outs
    return result


def _run_candidate(prepared: _Prepared, fn: Callable[..., Any], inputs: Any, device: torch.device, poison: bool) -> Any:
    return _run_with_args(prepared, fn, inputs, device, poison)[0]


def _run_with_args(
    prepared: _Prepared, fn: Callable[..., Any], inputs: Any, device: torch.device, poison: bool
) -> tuple[Any, list[Any]]:
    """The kernel's outputs on a copy of ``inputs``, and that copy after the call (in-place writes show there)."""
    args = list(clone(inputs))
    for i in prepared.output_args:
        if poison:
            poison_(args[i])
    with poisoned_outputs(device, poison):
        out = _call(fn, args, prepared.output_args)
    synchronize(device)
    return out, args


def _error_text(exc: BaseException) -> str:
    """The exception and where it happened: the deepest frame in the user's own code (the candidate's
    file and line), not inside magpie, torch or another installed package, when there is one."""
    if isinstance(exc, (SyntaxError, LoadError)):  # they name the file (and line): magpie's frames say nothing
        return f"{type(exc).__name__}: {exc}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen ")]
    own = [f for f in frames if not _library_file(f.filename)]
    frame = own[-1] if own else (frames[-1] if frames else None)
    where = f" at {frame.filename}:{frame.lineno}" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


_LIBRARY_PARTS = (
    "site-packages",
    "dist-packages",
    f"{Path(traceback.__file__).parent}",
    "magpie_kernels_",
    "magpie_core",
)


def _library_file(filename: str) -> bool:
    return filename.startswith("<") or any(part in filename for part in _LIBRARY_PARTS)


@dataclass
class _Loaded:
    """One kernel loaded in this worker process, with the settings it is checked and timed under."""

    task: EvaluationTask
    kernel: KernelConfig
    corr: CorrectnessConfig
    perf: PerformanceConfig
    device: torch.device
    env: dict[str, Any]
    tol: Tolerance
    prepared: _Prepared | None = None
    fn: Callable[..., Any] | None = None
    error: str | None = None  # why the kernel could not be loaded

    @classmethod
    def load(cls, task: EvaluationTask, options: HarnessOptions) -> _Loaded:
        """Parse the settings and load the kernel; a kernel that cannot load is kept as ``error``."""
        kernel = KernelConfig.model_validate(task.kernel)
        corr = CorrectnessConfig.model_validate(task.settings.get("correctness", {}))
        device = torch.device(
            kernel.device or options.default_device or ("cuda" if torch.cuda.is_available() else "cpu")
        )
        loaded = cls(
            task=task,
            kernel=kernel,
            corr=corr,
            perf=PerformanceConfig.model_validate(task.settings.get("performance", {})),
            device=device,
            env=environment_info(device) | options.environment,
            tol=Tolerance(
                atol=corr.atol if corr.atol is not None else (corr.accordo.atol if corr.accordo else None),
                rtol=corr.rtol if corr.rtol is not None else (corr.accordo.rtol if corr.accordo else None),
                equal_nan=corr.equal_nan,
                preset=kernel.options.get("tolerance"),
            ),
        )
        use_folder(task.build_artifacts, kernel.env)  # before the file is imported: its extensions are built there
        try:
            load_entry = options.load_entry
            native = (lambda: load_entry(kernel, task)) if load_entry else None
            loaded.prepared = _Prepared(kernel, [Path.cwd(), Path(task.config_dir)], device, task.seed, native)
            loaded.fn = options.wrap(loaded.prepared.fn, kernel) if options.wrap else loaded.prepared.fn
        except Exception as exc:
            loaded.error = f"could not load the kernel: {_error_text(exc)}"
        return loaded

    def stored(self) -> dict[str, Any] | None:
        """The baseline's saved inputs and expected outputs (compare), if this kernel is checked on them."""
        path = self.task.baseline_outputs
        return torch.load(path, weights_only=False) if path and Path(path).exists() else None

    def check(self) -> tuple[CorrectnessResult, Any]:
        """Correctness on every input set (saving them when asked); the first input set."""
        assert self.prepared is not None and self.fn is not None
        baseline = self.stored()
        if self.task.baseline_outputs and baseline is None and self.prepared.reference is None:
            return _no_expected(), None
        correctness, first_inputs, saved = _check(
            self.task, self.corr, self.prepared, self.fn, self.device, self.tol, baseline
        )
        if self.task.save_outputs and saved:
            torch.save({"trials": saved}, self.task.save_outputs)
        return correctness, first_inputs


def _no_expected() -> CorrectnessResult:
    return CorrectnessResult(
        status=StageStatus.NOT_RUN,
        method="baseline",
        message="the baseline produced no expected outputs, so this candidate cannot be checked",
    )


def evaluate_python_kernel(task: EvaluationTask, options: HarnessOptions) -> EvaluationOutcome:
    # called in-process (a notebook, a test) it leaves the caller's process as it was; a profiler's run (its
    # tool's code in this process, talking to its own) gives no verdict
    if _in_worker_process() and not task.settings.get("profile"):
        confine_process(task.kernel.get("env") or {})
    fix_host_allocator()
    with torch.inference_mode():
        loaded = _Loaded.load(task, options)
        if loaded.error is not None:
            return _failed(loaded.error, loaded.env)
        assert loaded.prepared is not None and loaded.fn is not None
        prepared, fn, device, perf = loaded.prepared, loaded.fn, loaded.device, loaded.perf

        if task.settings.get("profile"):
            return _profile_only(task, prepared, fn, device, loaded.env)

        if task.settings.get("timing_only"):
            # A later timing round of compare: correctness was established in round 1.
            correctness = CorrectnessResult(status=StageStatus.PASSED, method="established in round 1")
            first_inputs = _timing_inputs(prepared, loaded.corr, device, loaded.stored())
        else:
            correctness, first_inputs = loaded.check()

        if not perf.enabled:
            performance = PerformanceResult(status=StageStatus.SKIPPED, message="performance not requested")
        elif correctness.status != StageStatus.PASSED:
            performance = PerformanceResult(status=StageStatus.SKIPPED, message="not timed: correctness did not pass")
        else:
            performance = _time(prepared, fn, first_inputs, device, perf, options)
    env = loaded.env | clock_info(device)  # read after timing, so the clocks are those under load
    return EvaluationOutcome(correctness=correctness, performance=performance, environment=env)


def _profile_only(
    task: EvaluationTask, prepared: _Prepared, fn: Callable[..., Any], device: torch.device, env: dict[str, Any]
) -> EvaluationOutcome:
    """A run for an external profiler: the kernel alone, a few launches, inside the profiler range.

    Inputs are made and moved before the range starts and no reference runs, so a profiler that
    honours the range (``cudaProfilerStart``/``Stop``; ``ncu --profile-from-start off``) sees
    only the kernel under test.
    """
    launches = int(task.settings["profile"].get("launches", 5))
    seed_everything(task.seed)
    inputs = to_device(list(prepared.get_inputs()), device)
    args = list(clone(inputs))
    fn(*args)  # warm-up outside the range (lazy init, autotuning, JIT)
    synchronize(device)
    ranged = device.type == "cuda"
    if ranged:
        torch.cuda.profiler.start()
    for _ in range(launches):
        fn(*args)
    synchronize(device)
    if ranged:
        torch.cuda.profiler.stop()
    message = f"profiling run: {launches} launches, not checked"
    return EvaluationOutcome(
        correctness=CorrectnessResult(status=StageStatus.NOT_RUN, message=message),
        performance=PerformanceResult(status=StageStatus.SKIPPED, message=message),
        environment=env,
    )


def _timing_inputs(
    prepared: _Prepared, corr: CorrectnessConfig, device: torch.device, baseline: dict[str, Any] | None
) -> Any:
    """The inputs of trial 0, exactly as the correctness round used them."""
    if baseline is not None:
        return to_device(baseline["trials"][0]["inputs"], device)
    seed_everything(corr.seed)
    return to_device(list(prepared.get_inputs()), device)


def _check(
    task: EvaluationTask,
    corr: CorrectnessConfig,
    prepared: _Prepared,
    fn: Callable[..., Any],
    device: torch.device,
    tol: Tolerance,
    baseline: dict[str, Any] | None,
) -> tuple[CorrectnessResult, Any, list[dict[str, Any]]]:
    trials = baseline["trials"] if baseline else [None] * corr.trials  # the baseline's own inputs when saved
    if prepared.reference is not None:
        method = "reference"
    elif baseline is not None:
        method = "baseline outputs"
    else:
        method = "self (no reference: outputs must be fully written and finite)"
    details: list[dict[str, Any]] = []
    saved: list[dict[str, Any]] = []
    outputs: list[Any] = []
    first_inputs: Any = None
    for t, stored in enumerate(trials):
        seed = corr.seed + t
        seed_everything(seed)
        if stored is not None:
            inputs = to_device(stored["inputs"], device)
        else:
            inputs = to_device(list(prepared.get_inputs()), device)
        if first_inputs is None:
            first_inputs = inputs
        expected = None
        if prepared.reference is not None:
            seed_everything(seed)  # the reference and the kernel draw the same random numbers (train-mode Dropout)
            expected = _call(prepared.reference, list(clone(inputs)), prepared.output_args)
            synchronize(device)
        elif stored is not None:
            expected = to_device(stored["expected"], device)
        try:
            seed_everything(seed)
            actual = _run_candidate(prepared, fn, inputs, device, corr.poison_outputs)
        except Exception as exc:
            msg = f"trial {t} (seed {seed}): the kernel raised {_error_text(exc)}"
            return (
                CorrectnessResult(status=StageStatus.FAILED, method=method, trials=t + 1, message=msg, details=details),
                first_inputs,
                [],
            )
        problems = compare_outputs(expected, actual, tol) if expected is not None else nonfinite_problems(actual)
        details.append({"trial": t, "seed": seed, "ok": not problems, "problems": problems[:5]})
        if problems:
            msg = f"trial {t} (seed {seed}): {problems[0]}"
            return (
                CorrectnessResult(status=StageStatus.FAILED, method=method, trials=t + 1, message=msg, details=details),
                first_inputs,
                [],
            )
        saved.append(
            {
                "inputs": to_device(inputs, torch.device("cpu")),
                "expected": to_device(expected if expected is not None else actual, torch.device("cpu")),
            }
        )
        outputs.append(actual)
    if (reused := reused_output(outputs)) and (
        problems := compare_outputs(to_device(saved[reused[0]]["expected"], device), outputs[reused[0]], tol)
    ):  # right when returned, then written over by a later call (as the referee sees it in a compare)
        msg = f"trial {reused[0]} (seed {corr.seed + reused[0]}): {problems[0]}{_reuse_hint(reused)}"
        result = CorrectnessResult(status=StageStatus.FAILED, method=method, trials=len(trials), message=msg)
        return result, first_inputs, []
    tol_text = _tolerance_text(tol)
    return (
        CorrectnessResult(
            status=StageStatus.PASSED,
            method=method,
            trials=len(trials),
            message=f"{len(trials)} input sets matched ({method}; {tol_text}; outputs poisoned: {corr.poison_outputs})",
            details=details,
        ),
        first_inputs,
        saved,
    )


def _tolerance_text(tol: Tolerance) -> str:
    if tol.atol is not None or tol.rtol is not None:
        return f"atol={tol.atol} rtol={tol.rtol}"
    return f"tolerance preset {tol.preset!r}" if tol.preset else "per-dtype default tolerances"


def _tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_tensor_bytes(v) for v in value.values())
    return 0


def _sampler(
    fn: Callable[..., Any], inputs: Any, device: torch.device, perf: PerformanceConfig
) -> tuple[BatchSampler, str]:
    """A warmed-up batch sampler of ``fn`` on rotating copies of ``inputs``, and the timer's name."""
    timer = get_plugin_manager().get("timer", device.type)
    settings = TimingSettings.from_performance(perf)
    clock = timer.clock(device, graph_replay=perf.graph_replay)
    copies = input_copies(_tensor_bytes(inputs), clock.cache_bytes, settings)
    input_sets = [list(clone(inputs)) for _ in range(copies)]
    turn = itertools.count()

    def launch(_: int) -> None:
        # the rotation goes on from batch to batch: restarted in each, a batch of n launches would read the
        # first n copies only, over and over, from a warm cache
        fn(*input_sets[next(turn) % copies])

    return BatchSampler(clock, launch, settings, copies), timer.name


def _graph_note(device: torch.device, perf: PerformanceConfig) -> list[str]:
    return ["graph replay: launches captured in a device graph"] if perf.graph_replay and device.type == "cuda" else []


def _time(
    prepared: _Prepared,
    fn: Callable[..., Any],
    inputs: Any,
    device: torch.device,
    perf: PerformanceConfig,
    options: HarnessOptions,
) -> PerformanceResult:
    timer_name = get_plugin_manager().get("timer", device.type).name
    try:
        sampler, timer_name = _sampler(fn, inputs, device, perf)
        samples, reason = sample_until_stable(sampler.sample, TimingSettings.from_performance(perf).sampling)
    except Exception as exc:
        message = f"timing failed: {_error_text(exc)}"
        return PerformanceResult(status=StageStatus.ERROR, timer=timer_name, message=message)
    return PerformanceResult(
        status=StageStatus.PASSED,
        timer=timer_name,
        timing=summarize(samples, reason),
        samples_us=samples,
        notes=[*options.timing_notes, *sampler.notes(samples), *_graph_note(device, perf)],
        timing_meaningful=options.timing_meaningful,
        batch_size=sampler.batch,
    )


class HarnessSession(SamplerSession):
    """A compare instance in its own long-lived worker process: loaded once, checked, then timed in blocks.

    Every instance — the baseline's included — is built the same way: the kernel is loaded, checked on the baseline's
    saved input sets, and its timing inputs are loaded afresh from that same file behind random-size pad allocations
    (:mod:`magpie_kernels_pytorch.layout`). Nothing about the baseline is special except its place in the ratio, and
    that its first process is the **referee** (``save_outputs``): it alone computes expected outputs, keeps them in
    its memory, writes the input sets (and nothing else) for the others, and judges the outputs every other process
    hands over, at its check and from timed launches (:mod:`magpie_kernels_pytorch.integrity`).
    """

    def __init__(self, task: EvaluationTask, options: HarnessOptions) -> None:
        confine_process(task.kernel.get("env") or {})  # before any kernel code (sessions live in timing workers only)
        self.tamper = Tamper(
            _watched()
        )  # before the kernel is imported: the clocks and reply path as magpie loaded them
        torch.inference_mode().__enter__()  # for the life of this worker process, as evaluate's block does
        allocator = fix_host_allocator()  # before anything is allocated: every instance's malloc alike
        self.loaded = _Loaded.load(task, options)
        self.layout: Layout | None = None
        self.fresh: FreshInputs | None = None
        self.expected: list[dict[str, Any]] = []  # the referee's: input sets and expected outputs, in memory only
        self.stochastic = False  # the expected outputs depend on the random state: spot checks compare types only
        self.held: list[tuple[Any, int]] = []  # the latest batch's outputs and the copies they were made from
        self.launched = 0  # launches of the latest slot so far (the warm-up rotates the copies by it)
        self.slot = (0, 0, 0)  # (seed, first copy, launches) of the latest slot
        self.problems: list[str] = []
        self.timing_data: list[tuple[Any, dict[str, Any], bool]] = []  # the timing objects' data as magpie made them
        self.launcher: Callable[[int, int], Callable[[int], None]] | None = None  # a batch's launches (_make_sampler)
        self.write_floor_us: float | None = None  # the referee's: the fastest this device writes the outputs
        self.measure_floor: Callable[[], float | None] = lambda: None
        timer_name = get_plugin_manager().get("timer", self.loaded.device.type).name
        notes = [*options.timing_notes, f"timer: {timer_name}", *_graph_note(self.loaded.device, self.loaded.perf)]
        notes += [allocator] if allocator else []
        super().__init__(self._make_sampler, notes, meaningful=options.timing_meaningful)

    @property
    def referee(self) -> bool:
        return bool(self.loaded.task.save_outputs)

    def check(self) -> EvaluationOutcome:
        loaded = self.loaded
        if loaded.error is not None:
            return _failed(loaded.error, loaded.env)
        correctness = self._referee_check() if self.referee else self._check_for_handover()
        performance = PerformanceResult(status=StageStatus.SKIPPED, message="timed in interleaved blocks")
        return EvaluationOutcome(correctness=correctness, performance=performance, environment=loaded.env)

    def _referee_check(self) -> CorrectnessResult:
        """The baseline's own check (trusted code); the expected outputs stay here, the input sets go to the file."""
        loaded = self.loaded
        assert loaded.prepared is not None and loaded.fn is not None and loaded.task.save_outputs
        correctness, _, saved = _check(
            loaded.task, loaded.corr, loaded.prepared, loaded.fn, loaded.device, loaded.tol, None
        )
        if saved:
            self.expected = saved
            torch.save({"trials": [{"inputs": t["inputs"]} for t in saved]}, loaded.task.save_outputs)
            again = self._expected_for(saved[0]["inputs"], loaded.corr.seed + 7919)
            self.stochastic = bool(compare_outputs(saved[0]["expected"], again, loaded.tol))
        return correctness

    def _expected_for(self, inputs: Any, seed: int, host: bool = True) -> Any:
        """What the reference (else the baseline) returns for ``inputs`` (on the host, or where it ran)."""
        loaded = self.loaded
        assert loaded.prepared is not None and loaded.fn is not None
        producer = loaded.prepared.reference if loaded.prepared.reference is not None else loaded.fn
        seed_everything(seed)
        out = _call(producer, list(clone(to_device(inputs, loaded.device))), loaded.prepared.output_args)
        synchronize(loaded.device)
        return to_device(out, torch.device("cpu")) if host else out

    def _check_for_handover(self) -> CorrectnessResult:
        """Run every input set of the baseline's file and hand the outputs over: the referee judges them."""
        loaded = self.loaded
        assert loaded.prepared is not None and loaded.fn is not None
        path = loaded.task.baseline_outputs
        if not path or not Path(path).exists():
            return _no_expected()
        trials = torch.load(path, weights_only=True)["trials"]
        handed: list[tuple[Any, list[Any]]] = []
        for t, trial in enumerate(trials):
            seed = loaded.corr.seed + t
            seed_everything(seed)
            try:
                inputs = to_device(trial["inputs"], loaded.device)
                handed.append(
                    _run_with_args(loaded.prepared, loaded.fn, inputs, loaded.device, loaded.corr.poison_outputs)
                )
            except Exception as exc:
                msg = f"trial {t} (seed {seed}): the kernel raised {_error_text(exc)}"
                return CorrectnessResult(status=StageStatus.FAILED, method="referee", trials=t + 1, message=msg)
            if problems := plain_problems(handed[-1][0]):
                return rejected(problems[0])
        outputs = [out for out, _ in handed]
        reused = reused_output(outputs)
        try:
            file = save_handover(loaded.task.workspace, "check", outputs, [a for _, a in handed], reused)
        except RuntimeError as exc:  # torch.compile's CUDA graphs refuse to read an output a later call overwrote
            msg = f"its outputs could not be read after its calls: {_error_text(exc)}{_reuse_hint(reused)}"
            return CorrectnessResult(status=StageStatus.FAILED, method="referee", trials=len(trials), message=msg)
        return CorrectnessResult(status=StageStatus.NOT_RUN, method="referee", trials=len(trials), handover=file)

    def verify(self, request: dict[str, Any]) -> CorrectnessResult:
        """The referee's judgement of another process's check (its handover file) or of timed launches it captured."""
        if not self.expected:
            return _no_expected()
        try:
            if "records" in request:
                return self._judge_captures(request)
            return self._judge_trials(load_handover(str(request["file"])))
        except IntegrityError as exc:
            return rejected(str(exc))
        except Exception as exc:  # what it sent broke the judge: rejected (an error here would end the spot checks)
            return rejected(f"what it sent could not be judged: {_error_text(exc)}")

    def _judge_trials(self, data: dict[str, Any]) -> CorrectnessResult:
        loaded, method = self.loaded, "reference" if self._has_reference() else "baseline outputs"
        if len(data["outputs"]) != len(self.expected):
            raise IntegrityError(f"it handed over {len(data['outputs'])} trials of {len(self.expected)}")
        details = []
        for t, (trial, out, after) in enumerate(zip(self.expected, data["outputs"], data["inputs_after"], strict=True)):
            _judge_inputs(trial["inputs"], after, loaded.prepared.output_args if loaded.prepared else [], "its check")
            on = loaded.device  # compared where the kernels run (a GPU compares 128 MiB in milliseconds)
            problems = compare_outputs(to_device(trial["expected"], on), to_device(out, on), loaded.tol)
            details.append({"trial": t, "seed": loaded.corr.seed + t, "ok": not problems, "problems": problems[:5]})
            if problems:
                msg = f"trial {t} (seed {loaded.corr.seed + t}): {problems[0]}{_reuse_hint(data['reused'])}"
                return CorrectnessResult(
                    status=StageStatus.FAILED, method=method, trials=t + 1, message=msg, details=details
                )
        n, tol = len(self.expected), _tolerance_text(loaded.tol)
        poisoned = loaded.corr.poison_outputs
        message = f"{n} input sets matched ({method}, judged by the referee; {tol}; outputs poisoned: {poisoned})"
        return CorrectnessResult(status=StageStatus.PASSED, method=method, trials=n, message=message, details=details)

    def _judge_captures(self, request: dict[str, Any]) -> CorrectnessResult:
        """Up to ``judge`` timed launches, drawn here from a slot's ``records`` (what the worker sent, in order: the
        values of each batch before it ran, then a launch of it captured once it was timed, :meth:`sample`): each
        one's inputs rebuilt from the refresh before its batch, its output (the elements drawn with it) against the
        reference's for those inputs, its input copy unchanged."""
        assert self.fresh is not None and self.loaded.prepared is not None
        captures, refresh = [], None
        for record in request["records"]:
            if not isinstance(record, dict):
                raise IntegrityError(f"its record of a batch is not magpie's: {str(record)[:80]}")
            if "launch" in record:  # the batch timed last: its values are those of the refresh before it
                captures.append((record, refresh))
            refresh = record.get("refresh")
        picked = random.sample(captures, min(len(captures), int(request["judge"])))
        for capture, refresh in picked:
            inputs = self.fresh.rebuilt(refresh, capture["launch"])
            draw = int(capture["draw"])
            after = from_wire(capture["inputs"])
            _judge_inputs(sampled(inputs, draw), after, self.loaded.prepared.output_args, "a timed launch")
            expected = sampled(self._expected_for(inputs, self.loaded.corr.seed, host=False), draw)
            problems = compare_outputs(expected, from_wire(capture["output"]), self.loaded.tol)
            if self.stochastic:  # the reference draws random numbers: only what does not depend on them is compared
                problems = [p for p in problems if "mismatch at" not in p]
            if problems:
                raise IntegrityError(f"a timed launch's output is wrong although its check passed: {problems[0]}")
        method = "referee: captured timed launches"
        return CorrectnessResult(status=StageStatus.PASSED, method=method, trials=len(picked))

    def _has_reference(self) -> bool:
        return self.loaded.prepared is not None and self.loaded.prepared.reference is not None

    def _make_sampler(self) -> BatchSampler:
        loaded = self.loaded
        if loaded.error is not None:
            raise LoadError(loaded.error)
        assert loaded.prepared is not None and loaded.fn is not None
        if not self.referee:
            loaded.prepared.reference = None  # the check's: not part of any timed instance
        gc.collect()
        self.layout = Layout(loaded.device)  # random pads before the inputs ...
        file = loaded.task.baseline_outputs or loaded.task.save_outputs
        stored = torch.load(file, weights_only=True) if file and Path(file).exists() else None
        inputs = _timing_inputs(loaded.prepared, loaded.corr, loaded.device, stored)
        self.layout.pad()  # ... and between the inputs and what the kernel allocates
        timer = get_plugin_manager().get("timer", loaded.device.type)
        settings = TimingSettings.from_performance(loaded.perf)
        clock = timer.clock(loaded.device, graph_replay=loaded.perf.graph_replay)
        self.clock_class = type(clock)  # before any timed launch: what the clock must still be when it answers
        if self.referee and self.expected:  # trusted: the physical floor every timed process is held to (a clock
            # of its own: a graph-replay clock keeps the graphs it captured, by batch size)
            floor_clock = timer.clock(loaded.device, graph_replay=loaded.perf.graph_replay)
            nbytes = _tensor_bytes(self.expected[0]["expected"])
            self.measure_floor = lambda: write_floor_us(floor_clock, nbytes, loaded.device)
            self.write_floor_us = self.measure_floor()
        self.fresh = FreshInputs(list(inputs), input_copies(_tensor_bytes(inputs), clock.cache_bytes, settings))
        fn, fresh, held, output_args = loaded.fn, self.fresh, self.held, loaded.prepared.output_args

        def warm_up(_: int) -> None:  # the sampler's own launches (warm-up, batch size): rotating copies, none held
            n = self.launched
            self.launched += 1
            _call(fn, fresh.sets[n % fresh.copies], output_args)

        def launcher(first: int, base: int) -> Callable[[int], None]:
            """A batch's launches ``base``, ``base + 1``, ... of a slot on their copies (from ``first``): bound in the
            closure, not read from the session, so that a kernel resetting a count cannot give every launch the same
            copy. Every output of the batch is held until the batch is timed and one of them captured: a kernel
            cannot tell which one a capture will take, nor mend any later (no kernel code runs before the capture)."""

            def launch(i: int) -> None:
                copy = (first + base + i) % fresh.copies
                self.launched += 1
                out = _call(fn, fresh.sets[copy], output_args)
                if out.__class__ is not torch.Tensor and not isinstance(out, (tuple, list)) and out is not None:
                    self.problems.append(f"a timed launch returned a {type(out).__qualname__}, not a plain tensor")
                if i == 0:  # a new batch (a graph's launches run only as it is captured: theirs stay, replayed)
                    held.clear()
                held.append((out, copy))

            return launch

        self.launcher = launcher
        # as made: their data is checked with the code, before every timed batch (a clock's idle tail set huge would
        # leave side-stream work uncounted; a launcher of the kernel's own would choose the copies)
        self.timing_data = [(clock, dict(vars(clock)), True), (self, {"launcher": launcher}, False)]
        sampler = BatchSampler(clock, warm_up, settings, fresh.copies)
        if forget := getattr(clock, "forget_graphs", None):  # a graph of the warm-up's launches holds no batch's
            forget()
        if fresh.active and 1 < fresh.copies < sampler.batch:
            # no two launches of a batch on one copy (values change between batches only: a cache emptied at each
            # batch was right on every launch after a copy's first): more copies where memory allows, else fewer
            # launches a batch (warm-cache timing, one copy, repeats it: the operator's choice, for trusted code)
            nbytes = max(1, _tensor_bytes(inputs))
            room = settings.max_copy_bytes // nbytes if settings.max_copy_bytes else sampler.batch
            if (more := min(sampler.batch, settings.max_input_copies, room)) > fresh.copies:
                self.fresh = fresh = FreshInputs(list(inputs), more)
            sampler.batch, sampler.copies = min(sampler.batch, fresh.copies), fresh.copies
        if settings.max_copy_bytes and not output_args:  # a batch's outputs are held until it is captured: within
            held_bytes = _tensor_bytes(_call(fn, fresh.sets[0], output_args))  # the copies' memory again, at most
            sampler.batch = max(1, min(sampler.batch, settings.max_copy_bytes // max(1, held_bytes)))
        self.timing_data.append((sampler, dict(vars(sampler)), True))
        return sampler

    def sample(self, count: int, slot: int | None = None) -> list[float]:
        """``count`` samples on fresh input values: a chunk of every copy a batch uses is rewritten just before it,
        with values drawn then (``slot``, the parent's, only picks the first copy). Sent out, in order: each batch's
        values before it runs, then one launch of it captured once it was timed (one record more than batches)."""
        sampler, fresh = self.sampler, self.fresh
        assert fresh is not None
        seed = secrets.randbits(62) if slot is None else slot
        first, batch = seed % fresh.copies, sampler.batch
        self.slot = (seed, first, 1 + max(1, count) * batch)
        replay = bool(getattr(sampler.clock, "graph_replay", False))
        self.launched = 0
        # untimed, on the values its copy held (after its wait the device and threads are cold): no batch's values
        # exist yet, so it cannot work ahead on them
        sampler.clock.time_batch(self.launcher(first, 0), 1)
        got: list[float] = []
        at = first  # launch n of a batch reads copy (at + n) % copies: a replayed graph, the ones it was captured with
        for k in range(max(1, count)):
            # before every timed batch and every capture (no kernel code runs between the two): a patch undone
            # before the answer, or one that changes a capture, shows here
            if self._tampered():
                break
            record = self.capture(at, 1 + (k - 1) * batch, batch) if k else {}
            if record is None:
                break
            lo = 1 + k * batch
            if replay and len(self.held) == batch:  # captured: the copies its launches read are rewritten
                at = (self.held[0][1] - lo) % fresh.copies
            # the batch's values: drawn now, after the kernel last ran, and sent out before it runs again
            record["refresh"] = fresh.refresh(_drawn(), at, lo, lo + batch)
            _tell({"captured": record})
            got.append(sampler.sample(self.launcher(at, lo)))
        if not self._tampered() and (record := self.capture(at, 1 + (len(got) - 1) * batch, batch)) is not None:
            _tell({"captured": record})
        self.taken.extend(got[: max(0, 64 - len(self.taken))])
        return got

    def _tampered(self) -> bool:
        if (found := self.integrity()) and found not in self.problems:
            self.problems.insert(0, found)  # what the answer says, even once the patch is undone
        return found is not None

    def capture(self, first: int, lo: int, batch: int) -> dict[str, Any] | None:
        """One launch of the batch just timed (``lo`` .. ``lo + batch - 1``), to send out at once through the reply
        pipe: drawn from the OS, its output and its input copy at elements drawn too (:func:`~.integrity.sampled`),
        named by its place in the slot (launch n read copy ``(first + n) % copies``; :meth:`sample` keeps that so for
        a graph). None when its output is not plain or the record of the batch was changed (the answer says so)."""
        assert self.fresh is not None  # made with the sampler, before any slot
        copies, held = self.fresh.copies, self.held
        if [copy for _, copy in held] != [(first + lo + i) % copies for i in range(batch)]:  # launch lo + i's
            self.problems.append("the kernel changed magpie's record of a batch's outputs")
            return None
        i = _drawn() % batch
        out, n = held[i][0], lo + i
        if problems := plain_problems(out):
            self.problems.append(problems[0])
            return None
        draw = _drawn()
        inputs = sampled(list(self.fresh.sets[(first + n) % copies]), draw)
        return {"launch": n, "draw": draw, "output": to_wire(sampled(out, draw)), "inputs": to_wire(inputs)}

    def call_times(self, trials: int) -> list[float]:
        """KernelBench's clock (``performance.call_trials``): single synchronized calls on the original inputs."""
        loaded, fresh = self.loaded, self.fresh
        assert loaded.fn is not None and loaded.prepared is not None and fresh is not None
        fn, inputs, output_args = loaded.fn, fresh.base, loaded.prepared.output_args
        return per_call_us(loaded.device, lambda: _call(fn, inputs, output_args), trials)

    def integrity(self) -> str | None:
        """What this process saw that no honest kernel does (a patched clock, a lazy output), if anything."""
        live = [(self, HarnessSession)]
        if self._sampler is not None:
            live += [(self._sampler, BatchSampler), (self._sampler.clock, self.clock_class)]
        changed = [*self.tamper.changes(), *self.tamper.overridden(*live), *_data_changes(self.timing_data)]
        if changed := list(dict.fromkeys(changed)):  # a method set on a live object is also new data there
            return f"the kernel replaced magpie's clock or reply code: {', '.join(changed)}"
        return self.problems[0] if self.problems else None

    def info(self) -> dict[str, Any]:
        info = super().info()
        if self.layout is not None:
            info["layout"] = self.layout.describe()
        if self.write_floor_us is not None and self.taken:  # after the blocks too, the best of both: load only
            self.write_floor_us = min(self.write_floor_us, self.measure_floor() or math.inf)  # slows a fill down
        if self.write_floor_us is not None:
            info["write_floor_us"] = self.write_floor_us
            floor = f"{self.write_floor_us:.3g} us to write the outputs here (a fill by the same clock)"
            info["notes"] = [*info.get("notes", []), f"{floor}: a process under 1/{FLOOR_MARGIN:g} of it is REJECTED"]
        info["notes"] = [*info.get("notes", []), f"worker confinement: {confinement()}"]
        if self.fresh is not None:
            kept = "" if self.fresh.active else " (no input whose values can change: integer or structured inputs)"
            info["notes"] = [
                *info.get("notes", []),
                f"fresh input values for every batch{kept}; timed launches spot-checked",
            ]
        return info


def _data_changes(made: list[tuple[Any, dict[str, Any], bool]]) -> list[str]:
    """Data of the live timing objects set since magpie made them: the names kept (and, ``whole``, any new name), but
    for those a class says it updates itself."""
    changed = []
    for obj, data, whole in made:
        now, own = vars(obj), getattr(type(obj), "changing", ())
        for key in sorted(set(data) | (set(now) if whole else set())):
            if key not in own and now.get(key, _GONE) is not data.get(key, _GONE):
                changed.append(f"{type(obj).__qualname__}.{key}")
    return changed


def _reuse_hint(reused: list[int] | None) -> str:
    """Why outputs that were right when returned come out wrong: a later call wrote over an earlier one's."""
    if reused is None:
        return ""
    i, j = reused
    return (
        f" (its outputs of trials {i} and {j} share memory: a later call wrote over an earlier call's output, in a"
        " buffer kept across calls or a CUDA graph's static output; every call must return a tensor of its own:"
        " clone it)"
    )


def _judge_inputs(expected: list[Any], after: list[Any], output_args: list[int], when: str) -> None:
    """The inputs after the call must be the inputs given (bit for bit), except arguments declared as outputs."""
    if len(expected) != len(after):
        raise IntegrityError(f"{when}: it handed over {len(after)} inputs of {len(expected)}")
    for i, (given, now) in enumerate(zip(expected, after, strict=True)):
        if i in output_args:
            continue
        if not same(given, now):
            raise IntegrityError(f"{when}: the kernel wrote into its input {i} (in place; not declared in output_args)")


def _in_worker_process() -> bool:
    """Whether this is magpie's one-shot worker (``python -m magpie_core.measurement.worker``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "magpie_core.measurement.worker"


def open_python_timing(task: EvaluationTask, options: HarnessOptions) -> HarnessSession:
    """A compare candidate kept ready in the long-lived worker: checked on command, then timed."""
    return HarnessSession(task, options)


def _failed(message: str, env: dict[str, Any]) -> EvaluationOutcome:
    return EvaluationOutcome(
        correctness=CorrectnessResult(status=StageStatus.FAILED, message=message),
        performance=PerformanceResult(status=StageStatus.SKIPPED, message="kernel could not be loaded"),
        environment=env,
    )


def environment_info(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "device": str(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info["device_name"] = props.name
        info["cuda_runtime"] = torch.version.cuda
        info["hip_runtime"] = getattr(torch.version, "hip", None)
        info["sm_count"] = props.multi_processor_count
        info["l2_cache_bytes"] = getattr(props, "L2_cache_size", None)
        info["arch"] = props.gcnArchName if torch.version.hip else f"sm_{props.major}{props.minor}"
    else:
        info["device_name"] = platform.processor() or platform.machine()
    return info
