"""What a compare's trusted side needs so that the code under test can fake neither its speed nor its correctness.

A candidate kernel is untrusted code written by an agent rewarded for a FASTER verdict, and it runs inside the worker
process that times it, where it can read and patch anything Python can. So nothing a verdict rests on is decided
there (docs/kernel-evaluation.md, "Threat model"):

* **Fresh values for every batch** (:class:`FreshInputs`): the rotating input copies live in one stacked buffer per
  input; just before each batch of timed launches a chunk of every copy the batch will use (~1/61 of the elements,
  as teeth of a comb through every row (:func:`comb`), at a place drawn for the batch) is rewritten as the original
  values times a factor in [0.75, 1) drawn per copy, all from a seed the worker draws from the OS then, after the
  kernel last ran, and sends out at once (a seed known earlier, the slot's, let a kernel rebuild a whole slot's
  values in its untimed first launch and time only copies: ``precompute_slot`` in the catalogue). A result cache
  keyed on ``id()``, ``data_ptr()`` or a cheap fingerprint either misses (and the kernel does the work) or returns
  an output that is wrong on that chunk. Inputs whose structure a perturbation could break (integers, symmetric
  matrices, rows that sum to one) keep their values.
* **Timed launches are checked launches**: every output of a batch of timed launches is held until the batch is
  timed; then, before the kernel runs again, a launch of it drawn from the OS is captured (:func:`to_wire`: its
  output and its input copy at elements drawn then) and sent out through the reply pipe at once, where no later
  call can mend it. The parent spot-checks up to 8 of a slot's captures: the trusted process that holds the expected
  values (the baseline's first worker, which never loads a candidate) rebuilds each launch's inputs from the seed
  the worker sent before its batch (:meth:`FreshInputs.rebuilt`), runs the reference on them and compares.
* **Plain outputs** (:func:`plain_problems`): an output must be a dense ``torch.Tensor`` of exactly that type, so a
  lazy subclass that defers its work until read is rejected before it is ever timed as fast.
* **Unchanged clocks** (:class:`Tamper`): the timer functions, device events and magpie's own timing and reply code,
  recorded when the worker started (before any kernel was imported) and compared before each answer.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils._pytree import tree_leaves

#: a prime, so a chunk never lines up with whole rows of a power-of-two shape (a row scaled as a whole leaves a
#: normalisation's output unchanged, and a stale cached output would then still be right)
CHUNK_DIVISOR = 61
FACTOR_LOW, FACTOR_HIGH = 0.75, 1.0
#: the stacked copies of one input start on this many bytes (vectorised kernels assume 16; allocators give 512)
ALIGN_BYTES = 512


class IntegrityError(Exception):
    """The code under test was caught faking (its speed or its correctness): the candidate is REJECTED."""


def plain_problems(value: Any, where: str = "output") -> list[str]:
    """Why ``value`` is not made of plain dense tensors (exact type, strided layout), if it is not."""
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor and type(value) is not torch.nn.Parameter:
            return [f"{where} is a {type(value).__module__}.{type(value).__qualname__}, not a plain torch.Tensor"]
        if value.layout != torch.strided:
            return [f"{where} has layout {value.layout}, not a dense tensor"]
        return []
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in plain_problems(v, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in plain_problems(v, f"{where}[{k!r}]")]
    return []


def _perturbable(tensor: torch.Tensor) -> bool:
    """A floating-point input whose values can change without breaking a structure kernels may rely on."""
    if not tensor.is_floating_point() or tensor.numel() < 2:
        return False
    flat = tensor.detach().reshape(tensor.shape[0], -1) if tensor.dim() >= 2 else None
    if tensor.dim() >= 2 and tensor.shape[-1] == tensor.shape[-2] and torch.equal(tensor, tensor.transpose(-1, -2)):
        return False  # symmetric matrices
    if flat is not None and bool((tensor >= 0).all()):
        sums = tensor.detach().double().sum(dim=-1)
        if bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-3)):
            return False  # probability rows
    return True


class FreshInputs:
    """The rotating input copies of one timed kernel, in one stacked, aligned buffer per perturbable tensor input."""

    def __init__(self, inputs: list[Any], copies: int) -> None:
        self.base = inputs
        self.copies = max(1, copies)
        self.fresh = [isinstance(x, torch.Tensor) and _perturbable(x) for x in inputs]
        self.stacks: dict[int, torch.Tensor] = {}
        self.sets: list[list[Any]] = [[] for _ in range(self.copies)]
        for position, value in enumerate(inputs):
            if isinstance(value, torch.Tensor):
                stack, views = _stacked(value, self.copies)
                self.stacks[position] = stack
                for c in range(self.copies):
                    self.sets[c].append(views[c])
            else:
                for c in range(self.copies):
                    self.sets[c].append(clone(value))
        self.chunk: tuple[int, int] | None = None  # (place, seed) of this batch's chunk
        self.held = np.full(self.copies, -1, dtype=np.int64)  # the place of the chunk each copy holds (-1: none)

    @property
    def active(self) -> bool:
        return any(self.fresh)

    def refresh(self, seed: int, first: int, lo: int, hi: int) -> dict[str, int]:
        """Before launches ``lo``..``hi - 1`` of a slot (a batch; copy of launch j: ``(first + j) % copies``): the
        chunk of every copy they use, at a place drawn from ``seed``, rewritten with a factor drawn from it too, after
        the chunk it held before is put back. What the referee needs to rebuild them (:meth:`rebuilt`)."""
        n = min(hi - lo, self.copies)
        self.chunk = _chunk(seed)
        table = factors(seed, n)
        if self.active:  # the device idles between batches (each one ends waiting for it): a copy waits for nothing
            self.scales = {p: torch.as_tensor(table, dtype=s.dtype).to(s.device) for p, s in self.stacks.items()}
            self._rewrite(first, lo, n)
        return {"seed": seed, "lo": lo, "launches": hi - lo, "copies": n}

    def _teeth(self, position: int, place: int, rows: torch.Tensor) -> torch.Tensor:
        """The elements the chunk at ``place`` covers in ``rows`` (flat copies, the last dimension is the element's)."""
        return comb(rows, self.base[position], place)

    def _base_flat(self, position: int) -> torch.Tensor:
        return self.base[position].reshape(1, -1)

    def _rewrite(self, first: int, lo: int, n: int) -> None:
        """The ``n`` copies from launch ``lo``'s on: copy ``k`` of them with factor ``k`` (only the copies used)."""
        assert self.chunk is not None
        index = (first + lo + np.arange(n)) % self.copies
        held = self.held[index]
        # runs of copies that are contiguous in the buffer and held the same chunk: one slice each
        cuts = np.flatnonzero((np.diff(index) != 1) | (np.diff(held) != 0)) + 1
        for begin, end in zip([0, *cuts], [*cuts, n], strict=True):
            rows = slice(int(index[begin]), int(index[begin]) + end - begin)
            for position, stack in self.stacks.items():
                if not self.fresh[position]:
                    continue
                base = self._base_flat(position)
                if held[begin] >= 0 and held[begin] != self.chunk[0]:
                    old = int(held[begin])
                    self._teeth(position, old, stack[rows]).copy_(self._teeth(position, old, base))
                scales = self.scales[position][begin:end].view(-1, 1, 1)
                place = self.chunk[0]
                self._teeth(position, place, stack[rows]).copy_(self._teeth(position, place, base) * scales)
        self.held[index] = self.chunk[0]

    def rebuilt(self, refresh: Any, launch: int) -> list[Any]:
        """The inputs launch ``launch`` read, rewritten by ``refresh`` (what :meth:`refresh` returned before its
        batch, as the worker sent it): rebuilt on the trusted side. IntegrityError for a refresh that did not cover
        that launch."""
        try:
            seed, lo, copies = int(refresh["seed"]), int(refresh["lo"]), int(refresh["copies"])
            k = (launch - lo) % max(1, copies)
            covered = 0 <= launch - lo < int(refresh["launches"]) and 0 < copies <= 1 << 16
        except (TypeError, KeyError, ValueError):
            covered = False
        if not covered:
            why = f"it captured launch {launch}, which the refresh before it did not cover: {str(refresh)[:120]}"
            raise IntegrityError(why)
        return self.values(seed, float(factors(seed, copies)[k]))

    def values(self, seed: int, factor: float) -> list[Any]:
        """The inputs of a copy refreshed with ``factor`` by the refresh with ``seed``."""
        chunk = _chunk(seed)
        out: list[Any] = []
        for position, value in enumerate(self.base):
            if not (isinstance(value, torch.Tensor) and self.fresh[position]):
                out.append(clone(value))
                continue
            flat = value.reshape(1, -1).clone()
            scale = torch.as_tensor([factor], dtype=flat.dtype).to(flat.device)
            teeth = self._teeth(position, chunk[0], flat)
            teeth.copy_(teeth * scale)
            out.append(flat.reshape(value.shape))
        return out


def comb(rows: torch.Tensor, like: torch.Tensor, place: int) -> torch.Tensor:
    """A view of the chunk at ``place`` in each of ``rows`` (2-D: one flat copy of ``like`` a row): teeth of ``width``
    elements every :data:`CHUNK_DIVISOR` teeth' widths, so ~1/61 of the elements and of the cache lines, as a
    contiguous chunk would be, but in every row of the last dimension that is 61 elements or longer. A contiguous
    chunk changed a few rows of a matrix: a kernel that kept its last inputs and output could update the product
    with those rows alone (a rank-k correction) and be right and fast (``incremental`` in the catalogue: FASTER
    3.39x on a 1024x1024 matmul); with every row and, through the spacing, every column changed, no such update is
    cheaper than the product. A tooth never covers a whole row (a row scaled as a whole leaves a normalisation's
    output unchanged)."""
    numel, last = like.numel(), like.shape[-1] if like.dim() else 1
    width = max(1, min(max(1, 64 // like.element_size()), last // CHUNK_DIVISOR))
    spacing = width * CHUNK_DIVISOR
    if numel >= spacing + width:
        offset = place % spacing
        count = (numel - offset - width) // spacing + 1
    else:  # smaller than one spacing: one tooth (a ~1/61 chunk, at least one element)
        width = max(1, min(width, numel // CHUNK_DIVISOR))
        offset, count, spacing = place % max(1, numel - width + 1), 1, numel
    return rows.as_strided((rows.shape[0], count, width), (rows.stride(0), spacing, 1), rows.storage_offset() + offset)


def _chunk(seed: int) -> tuple[int, int]:
    """(place, seed) of the chunk a refresh rewrites: the same for the worker and the referee."""
    return int(np.random.default_rng([seed, 1]).integers(1 << 30)), seed


def factors(seed: int, copies: int) -> np.ndarray:
    """The factor of each copy a refresh rewrites (in the order the batch's launches use them)."""
    return np.random.default_rng([seed, 2]).uniform(FACTOR_LOW, FACTOR_HIGH, max(1, copies))


def _stacked(value: torch.Tensor, copies: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``copies`` contiguous copies of ``value`` in one buffer, each starting on :data:`ALIGN_BYTES`."""
    numel = value.numel()
    per = ALIGN_BYTES // value.element_size() if value.element_size() <= ALIGN_BYTES else 1
    stride = -(-max(1, numel) // per) * per
    stack = torch.empty((copies, stride), dtype=value.dtype, device=value.device)
    stack[:, :numel] = value.reshape(1, -1)
    return stack, [stack[c, :numel].view(value.shape) for c in range(copies)]


def clone(value: Any) -> Any:
    """A copy of every tensor in ``value`` (lists, tuples, dicts kept as they are)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(clone(v) for v in value)
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    return value


#: a capture holds this many elements of each output and input (all of a smaller one), drawn after the batch ran: a
#: stale or cached output is wrong on 1/61 of its elements or more, which 1,024 draws miss once in 2x10^7 captures
#: (and a spot check judges up to 8); more made the capture after every batch cost a third of a 1 ms batch on the CPU
CAPTURE_ELEMENTS = 1 << 10


def sampled(value: Any, seed: int) -> Any:
    """Each tensor of ``value`` as (its shape, its elements at places drawn from ``seed``), on the host."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().reshape(-1)
        if flat.numel() > CAPTURE_ELEMENTS:
            draw = torch.Generator().manual_seed(seed)
            flat = flat[torch.randint(flat.numel(), (CAPTURE_ELEMENTS,), generator=draw).to(flat.device)]
        return (torch.tensor(list(value.shape)), flat.to("cpu").clone())
    if isinstance(value, (list, tuple)):
        return [sampled(v, seed) for v in value]
    if isinstance(value, dict):
        return {k: sampled(v, seed) for k, v in value.items()}
    return value


def to_wire(value: Any) -> Any:
    """``value`` (tensors, containers of them, plain values) as JSON: each tensor as its dtype, shape and bytes."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().to("cpu").contiguous().reshape(-1)
        data = base64.b64encode(flat.view(torch.uint8).numpy().tobytes()).decode()
        return {"tensor": [str(value.dtype).removeprefix("torch."), list(value.shape), data]}
    if isinstance(value, (list, tuple)):
        return {"list": [to_wire(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): to_wire(v) for k, v in value.items()}}
    return {"value": value}


def from_wire(value: Any) -> Any:
    """What :func:`to_wire` wrote, rebuilt without running anything of the sender's (plain data only)."""
    try:
        ((kind, body),) = value.items()
        if kind == "tensor":
            name, shape, data = body
            if not isinstance(dtype := getattr(torch, str(name), None), torch.dtype):
                raise ValueError(f"no dtype {name!r}")
            raw = bytearray(base64.b64decode(data, validate=True))
            flat = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
            return flat.view(dtype).reshape([int(d) for d in shape])
        if kind == "list":
            return [from_wire(v) for v in body]
        if kind == "dict":
            return {k: from_wire(v) for k, v in body.items()}
        if kind == "value":
            return body
        raise ValueError(f"unknown kind {kind!r}")
    except (AttributeError, TypeError, ValueError, RuntimeError) as exc:
        raise IntegrityError(f"a capture that is not what magpie's harness sends ({exc})") from None


def same(a: Any, b: Any) -> bool:
    """Bit for bit the same values (tensors, containers of them, plain values)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def reused_output(outputs: list[Any]) -> list[int] | None:
    """The first two calls ``[i, j]`` whose outputs share memory, if any: a buffer kept across calls (or a CUDA
    graph's static output) holds only the last call's values by the time anyone reads the first's."""
    first_use: dict[int, int] = {}
    for j, out in enumerate(outputs):
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor) and tensor.numel():
                i = first_use.setdefault(tensor.untyped_storage().data_ptr(), j)
                if i != j:
                    return [i, j]
    return None


def save_handover(
    workspace: str, name: str, outputs: list[Any], inputs_after: list[Any], reused: list[int] | None = None
) -> str:
    """Write what the trusted side judges of a check (its outputs and the inputs after the calls, on the host, and
    :func:`reused_output`'s finding: a hint for a failure's message, never a verdict) into the worker's folder; the
    file (the referee removes it once read)."""
    file = Path(workspace) / f"handover_{name}.pt"
    torch.save({"outputs": _to_cpu(outputs), "inputs_after": _to_cpu(inputs_after), "reused": reused}, file)
    return str(file)


def load_handover(path: str) -> dict[str, Any]:
    """A candidate's handover, read without running any of its code (``weights_only``: tensors and containers)."""
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # a tensor subclass or any other object cannot be loaded here
        raise IntegrityError(f"its outputs are not plain tensors ({type(exc).__name__}: {str(exc)[:160]})") from None
    finally:
        Path(path).unlink(missing_ok=True)
    if not isinstance(data, dict) or set(data) != {"outputs", "inputs_after", "reused"}:
        raise IntegrityError("its handover file is not what magpie's harness writes")
    reused = data["reused"]
    if reused is not None and not (isinstance(reused, list) and [type(i) for i in reused] == [int, int]):
        raise IntegrityError("its handover file is not what magpie's harness writes")
    return data


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):  # its own storage: a view of a stacked copy would save the whole stack
        tensor = value.detach().to("cpu")
        whole = tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size()
        if whole and tensor.is_contiguous() and tensor.storage_offset() == 0:
            return tensor  # saved as it is: a copy first only cost a pass over it
        return tensor.clone(memory_format=torch.contiguous_format)
    if isinstance(value, (list, tuple)):
        return [_to_cpu(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    return value


def _recorded() -> dict[str, Callable[[], Any]]:
    """Where each watched function is looked up from (by name, so a patch of the attribute shows)."""
    from magpie_core.measurement import timing, worker
    from magpie_kernels_pytorch import checking, timers

    watched: dict[str, Callable[[], Any]] = {
        "time.perf_counter_ns": lambda: time.perf_counter_ns,
        "time.perf_counter": lambda: time.perf_counter,
        "time.monotonic": lambda: time.monotonic,
        "json.dumps": lambda: json.dumps,
        "magpie_core.measurement.worker._say": lambda: worker._say,
        "magpie_core.measurement.worker._answer": lambda: worker._answer,
        "BatchSampler.sample": lambda: timing.BatchSampler.sample,
        "SamplerSession.sample": lambda: timing.SamplerSession.sample,
        "CpuClock.time_batch": lambda: timers.CpuClock.time_batch,
        "CudaClock.time_batch": lambda: timers.CudaClock.time_batch,
        "timers._now": lambda: timers._now,
        "timers._elapsed": lambda: timers._elapsed,
        "timers._sync_device": lambda: timers._sync_device,
        "checking.compare_outputs": lambda: checking.compare_outputs,
        "os.urandom": lambda: os.urandom,
    }
    if torch.cuda.is_available():
        watched |= {
            "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
            "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
            "torch.cuda.Event.synchronize": lambda: torch.cuda.Event.synchronize,
            "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
        }
    return watched


class Tamper:
    """The timing and reply functions as they were when recorded; :meth:`changes` names any replaced since.
    ``more``: the caller's own watched functions, name -> lookup (the harness's: it imports this module)."""

    def __init__(self, more: dict[str, Callable[[], Any]] | None = None) -> None:
        self.lookups = _recorded() | (more or {})
        self.objects = {name: lookup() for name, lookup in self.lookups.items()}
        self.codes = {name: getattr(obj, "__code__", None) for name, obj in self.objects.items()}

    def overridden(self, *objects: tuple[Any, type]) -> list[str]:
        """For each (live object, the class magpie made it as): methods set on the object itself
        (``session._sampler.clock.time_batch = fake``: a patch the classes above do not show), or another class."""
        found = []
        for obj, kind in objects:
            if type(obj) is not kind:
                found.append(f"{kind.__qualname__} (its class)")
            found += [f"{kind.__qualname__}.{k}" for k, v in vars(obj).items() if callable(v) and hasattr(kind, k)]
        return found

    def changes(self) -> list[str]:
        changed = []
        for name, lookup in self.lookups.items():
            try:
                now = lookup()
            except Exception:  # deleted
                changed.append(name)
                continue
            if now is not self.objects[name] or getattr(now, "__code__", None) is not self.codes[name]:
                changed.append(name)
        return changed
