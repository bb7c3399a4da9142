"""``adapt-torch``: the kernels of PyTorch profiler traces that match a target, as targeted-trace shards.

Which events: device activity (the core trace library's ``GPU_ACTIVITY_CATS``: kernels, copies, memsets)
of complete (``ph: X``) events whose name matches one of a target's glob patterns (``fnmatch``,
case-sensitive). One record per (event, matching target), in one shard per (rank, pid). Traces under a
``capture_traces`` folder (CUDA-graph capture) are left out unless they are all there is.

What a record holds, from the event alone (AMD Magpie's adapter): symbol, grid and block, stream,
duration and start, ``External id`` (cpu_uid), ``correlation``, graph id (execution mode ``graph``), the
rank (the event's ``rank`` arg, else ``rank<N>`` in the path, else 0), the stage (the event's
``stage``/``phase`` arg, else prefilldecode/decode/prefill/mixed in the path, else ``unknown``), and tensor
shapes/dtypes/strides when the event itself has ``Input Dims``. Missing evidence stays null with a named
warning (``torch_profiler_missing_tensor_shapes``, ``..._missing_launch_source``,
``..._missing_runtime_correlation``); no CPU-to-GPU join is made up.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from magpie_trace import FallBack, read_trace_bytes, stream_events
from magpie_trace.columns import GPU_ACTIVITY_CATS
from magpie_trace.loader import TraceLoadError

from magpie_targeted_trace.config import TargetedTraceConfig, TargetSpec
from magpie_targeted_trace.contract import ShardWriter, manifest, shard_path, stable_key, write_manifest

RANK_RE = re.compile(r"(?:^|[/_.-])rank[_-]?(\d+)(?:[/_.-]|$)", re.IGNORECASE)
STAGES = ("prefilldecode", "decode", "prefill", "mixed")


class Ev(msgspec.Struct):
    """The fields of a trace event the adapter reads (msgspec skips the rest without building them)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    args: msgspec.Raw = msgspec.Raw(b"{}")  # decoded only for the events that match a target


class _Whole(msgspec.Struct):
    traceEvents: list[Ev] = []


EVENTS = msgspec.json.Decoder(list[Ev])


@dataclass
class Inputs:
    """The traces to adapt and the ones that could not be read (named, with why)."""

    traces: list[Path]
    unreadable: list[str] = field(default_factory=list)


def select_inputs(paths: list[Path]) -> list[Path]:
    """``paths`` without graph-capture traces, unless those are all there is (AMD Magpie's rule)."""
    regular = [p for p in paths if "capture_traces" not in {part.lower() for part in p.parts}]
    return sorted(regular or paths)


def _first(args: dict[str, Any], names: tuple[str, ...]) -> Any:
    lowered = {str(k).lower(): v for k, v in args.items()}
    return next((lowered[n] for n in names if n in lowered), None)


def _vector(args: dict[str, Any], key: str) -> list[int] | None:
    """``grid``/``block`` as a list, from ``[x, y, z]`` or ``grid_x``/``grid x`` style args."""
    direct = _first(args, (key, f"{key} size", f"{key}_size"))
    if isinstance(direct, list):
        try:
            return [int(v) for v in direct]
        except (TypeError, ValueError):
            return None
    values: list[int] = []
    for axis in "xyz":
        value = _first(args, (f"{key}_{axis}", f"{key} {axis}"))
        if value is None:
            if values:
                values.append(1)
            continue
        try:
            values.append(int(value))
        except (TypeError, ValueError):
            return None
    return values or None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _rank(args: dict[str, Any], path: Path) -> int:
    value = _first(args, ("rank", "global rank", "distributed rank"))
    try:
        if value is not None:
            return max(0, int(value))
    except (TypeError, ValueError):
        pass
    match = RANK_RE.search(path.as_posix())
    return int(match.group(1)) if match else 0


def _stage(args: dict[str, Any], path: Path) -> str:
    value = _first(args, ("stage", "inference stage", "phase"))
    if value is not None:
        return str(value).lower()
    lowered = path.as_posix().lower()
    return next((s for s in STAGES if s in lowered), "unknown")


def _tensors(args: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    dims = _first(args, ("input dims", "input shapes", "shapes"))
    if not isinstance(dims, list):
        return [], ["torch_profiler_missing_tensor_shapes"]
    if dims and not isinstance(dims[0], list):
        dims = [dims]
    dtypes = _first(args, ("input type", "input types", "dtypes"))
    strides = _first(args, ("input strides", "strides"))
    dtypes = dtypes if isinstance(dtypes, list) else []
    strides = strides if isinstance(strides, list) else []
    tensors, warnings = [], []
    for i, shape in enumerate(dims):
        if not isinstance(shape, list):
            continue
        stride = strides[i] if i < len(strides) and isinstance(strides[i], list) else None
        if stride is None:
            warnings.append(f"arg{i}:torch_profiler_missing_stride")
        tensors.append(
            {
                "name": f"arg{i}",
                "shape": shape,
                "dtype": str(dtypes[i]) if i < len(dtypes) else "unknown",
                "stride": stride,
                "device": None,
                "layout": None,
                "requires_grad": None,
            }
        )
    return tensors, warnings


def _pid(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


class Adapter:
    """Streams traces into shards; :meth:`finish` writes the manifest."""

    def __init__(
        self,
        out_dir: Path,
        config: TargetedTraceConfig,
        *,
        run_id: str,
        framework: str,
        framework_version: str | None = None,
        image: str | None = None,
    ) -> None:
        if not run_id.strip() or not framework.strip():
            raise ValueError("run_id and framework must not be empty")
        self.out_dir, self.config, self.run_id = out_dir, config, run_id
        self.framework, self.framework_version, self.image = framework, framework_version, image
        self.writers: dict[tuple[int, int], ShardWriter] = {}
        self.occurrences: defaultdict[str, int] = defaultdict(int)
        self.targets = [(t, tuple(t.name_patterns)) for t in config.targets]

    def _writer(self, rank: int, pid: int) -> ShardWriter:
        key = (rank, pid)
        if key not in self.writers:
            meta = {
                "framework": self.framework,
                "framework_version": self.framework_version,
                "capture_backend": "torch_profiler",
            }
            self.writers[key] = ShardWriter(
                shard_path(self.out_dir, rank, pid),
                run_id=self.run_id,
                rank=rank,
                pid=pid,
                run_seed=self.config.run_seed,
                sample_rate=self.config.sample_rate,
                max_records=self.config.max_records_per_shard,
                metadata=meta,
            )
        return self.writers[key]

    def add_trace(self, path: Path) -> None:
        """Every matching event of ``path``; TraceLoadError naming the file when it cannot be read."""

        def sink(events: list[Ev]) -> None:
            for ev in events:
                if ev.ph == "X" and ev.cat.lower() in GPU_ACTIVITY_CATS:
                    matches = [t for t, pats in self.targets if any(fnmatch.fnmatchcase(ev.name, p) for p in pats)]
                    if matches:
                        self._add(ev, matches, path)

        try:
            stream_events(
                path, sink, decoder=EVENTS, skip_categories=("python_function", "cpu_op", "cpu_instant_event")
            )
        except FallBack:  # something the fast path does not handle: decode whole (its errors name the file)
            buf = read_trace_bytes(path)
            try:
                events = (
                    EVENTS.decode(buf)
                    if buf.lstrip()[:1] == b"["
                    else msgspec.json.decode(buf, type=_Whole).traceEvents
                )
            except msgspec.DecodeError as exc:
                raise TraceLoadError(path, f"not a PyTorch profiler trace: {exc}") from None
            sink(events)

    def _add(self, ev: Ev, matches: list[TargetSpec], path: Path) -> None:
        args = msgspec.json.decode(bytes(ev.args))
        args = args if isinstance(args, dict) else {}
        rank, pid, stage = _rank(args, path), _pid(ev.pid), _stage(args, path)
        tensors, tensor_warnings = _tensors(args)
        correlation = _text(_first(args, ("correlation", "correlation id")))
        graph_id = _text(_first(args, ("graph id", "graph_id", "cuda graph id")))
        runtime = {
            "cpu_uid": _text(_first(args, ("cpu uid", "external id"))),
            "correlation_id": correlation,
            "gpu_uid": stable_key({"name": ev.name, "rank": rank, "tid": ev.tid, "ts": ev.ts}),
            "gpu_symbol": ev.name,
            "grid": _vector(args, "grid"),
            "block": _vector(args, "block"),
            "stream": _text(_first(args, ("stream", "stream id"))),
            "duration_us": float(ev.dur) if ev.dur is not None and ev.dur >= 0 else None,
            "timestamp_us": float(ev.ts) if ev.ts is not None else None,
        }
        writer = self._writer(rank, pid)
        for target in matches:
            parts = {
                "target_id": target.target_id,
                "symbol": ev.name,
                "rank": rank,
                "stage": stage,
                "grid": runtime["grid"],
                "block": runtime["block"],
                "tensors": [{k: t[k] for k in ("shape", "dtype", "stride")} for t in tensors],
            }
            token = stable_key(parts)
            key = stable_key(parts, self.occurrences[token])
            self.occurrences[token] += 1
            warnings = list(tensor_warnings)
            if target.source is None:
                warnings.append("torch_profiler_missing_launch_source")
            if correlation is None:
                warnings.append("torch_profiler_missing_runtime_correlation")
            record = {
                "kind": "torch_profiler_kernel",
                "stable_event_key": key,
                "identity": {
                    "run_id": self.run_id,
                    "target_id": target.target_id,
                    "variant_id": target.variant_id,
                    "package": target.package,
                    "image": self.image,
                    "source_hashes": target.source_hashes,
                    "provenance_hashes": target.provenance_hashes,
                },
                "context": {
                    "framework": self.framework,
                    "framework_version": self.framework_version,
                    "rank": rank,
                    "pid": pid,
                    "stage": stage,
                    "execution_mode": "graph" if graph_id else "unknown",
                    "graph_id": graph_id,
                    "world_size": None,
                },
                "semantics": {
                    "source": target.source.model_dump() if target.source else None,
                    "tensors": tensors,
                    "named_scalars": {},
                    "constexpr": {},
                    "meta": {"profiler_category": ev.cat},
                    "python_grid": None,
                },
                "runtime": runtime,
                "timestamp_ns": int(ev.ts * 1000) if ev.ts is not None and ev.ts >= 0 else None,
                "warnings": warnings,
            }
            writer.submit(key, record)

    def finish(self, inputs: Inputs) -> dict[str, Any]:
        receipts = [w.close() for _, w in sorted(self.writers.items())]
        provenance = {
            "framework": self.framework,
            "framework_version": self.framework_version,
            "image": self.image,
            "input_traces": [str(p) for p in inputs.traces],
            "adapter_warnings": inputs.unreadable,
        }
        targets = [t.model_dump() for t in self.config.targets]
        data = manifest(self.run_id, targets, receipts, provenance)
        write_manifest(self.out_dir / "manifest.json", data)
        return data


def adapt_torch(
    traces: list[Path],
    out_dir: Path,
    config: TargetedTraceConfig,
    *,
    run_id: str,
    framework: str,
    framework_version: str | None = None,
    image: str | None = None,
) -> tuple[dict[str, Any], Inputs]:
    """Adapt ``traces`` into ``out_dir`` (a new folder); the manifest, and which inputs could not be read.

    An unreadable trace does not stop the others: it is named in ``provenance.adapter_warnings`` (which
    ``postprocess`` reports as an integrity issue) and in the returned :class:`Inputs`.
    """
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ValueError(f"{out_dir}: not empty: write a targeted trace into a new folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = Inputs(select_inputs(traces))
    adapter = Adapter(
        out_dir, config, run_id=run_id, framework=framework, framework_version=framework_version, image=image
    )
    for path in inputs.traces:
        try:
            adapter.add_trace(path)
        except (TraceLoadError, OSError) as exc:
            inputs.unreadable.append(str(exc))
    return adapter.finish(inputs), inputs
