"""The optional compiled reader of the events a sink keeps, as the sink's own struct objects.

The extension is ``magpie_trace_native._kineto_kept`` (``_kineto_kept.c`` of the optional distribution
``magpie-trace-native``, built next to the trace reader whose tokenizer it shares), found through
:func:`magpie_trace.native.compiled`; without it every function here gives None and the caller decodes with msgspec.

Analyses that keep a few categories of complete (``"X"``) events as msgspec structs and drop the rest (a
plugin's own ``Ev``/``Args`` types, with the fields its decoder reads) give :func:`kept_reader` their types and
categories; the function it returns reads one JSON array of events (a piece cut by
:func:`~magpie_trace.columns.stream_events`) into :class:`KeptPiece`: per bucket the kept events in file
order and their ``ts``/``dur``/``tid`` as columns, or None for anything it is not sure to read exactly as
msgspec decodes it (the caller then decodes those bytes with msgspec). Every event is type-checked as msgspec
would check it; only kept events become objects, with strings, thread ids and raw argument texts interned
across pieces. ``MAGPIE_TRACE_NATIVE=0`` turns it off, as :mod:`magpie_trace.native`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from magpie_trace.native import compiled, switched_off

__all__ = ["ARG_INT", "ARG_RAW", "ARG_STR", "KeptPiece", "enclosing_chains", "kept_reader"]

#: kinds of an ``args`` field: ``int | None``, ``str | None``, and the raw JSON text of any value (as ``bytes``)
ARG_INT, ARG_STR, ARG_RAW = 0, 1, 2


@dataclass(frozen=True, slots=True)
class KeptPiece:
    """What the reader kept of one piece, per bucket (file order within each)."""

    events: tuple[list[Any], ...]
    ts: tuple[np.ndarray, ...]  # NaN where ``ts`` is null or absent (the object holds None)
    dur: tuple[np.ndarray, ...]  # NaN where absent
    tid: tuple[np.ndarray, ...]  # integer thread ids (0 where a kept event's tid is a string)
    tid_is_str: tuple[bool, ...]  # a kept event of that bucket has a string thread id
    seen: int  # events in the piece, kept or not


def _module() -> Any:
    return compiled("_kineto_kept")


def available() -> bool:
    """Whether the compiled reader is built (whatever ``MAGPIE_TRACE_NATIVE`` says)."""
    return _module() is not None


def kept_reader(
    ev_type: type,
    args_type: type,
    buckets: Sequence[Sequence[str]],
    arg_fields: Sequence[tuple[str, int]],
    raw_default: bytes,
    need_arg: Sequence[int | None] | None = None,
    skip_categories: Sequence[str] = (),
    unescape: Callable[[bytes], str] | None = None,
) -> Callable[[Any], KeptPiece | None] | None:
    """A reader of pieces into ``ev_type(ph, cat, name, tid, ts, dur, args)`` objects, or None when it is off or
    not built.

    ``ev_type``'s fields, in order, must be ``ph: str = ""``, ``cat: str = ""``, ``name: str = ""``,
    ``tid: int | str = 0``, ``ts: float | None = None``, ``dur: float = nan``, ``args: args_type | None = None``;
    ``args_type``'s fields are ``arg_fields`` in order (JSON key, kind; an absent raw field is ``raw_default``,
    other absent fields None). ``buckets[i]``: the categories kept in bucket i; ``need_arg[i]``: the index of an
    argument that must be present and not null for an event to be kept in bucket i (None: no condition).
    ``skip_categories``: as :func:`~magpie_trace.columns.stream_events`'s (the caller passes none there): a
    piece it cuts whose events all have one of them is only counted, by the same rule, in C (cheaper than the
    bytes searches of the Python rule: ~0.2 s per 555 MB).
    """
    if switched_off():
        return None
    mod = _module()
    if mod is None:
        return None
    if unescape is None:
        import msgspec

        unescape = msgspec.json.Decoder(str).decode
    cats: Mapping[str, int] = {cat: i for i, names in enumerate(buckets) for cat in names}
    need = [-1 if n is None else n for n in (need_arg or [None] * len(buckets))]
    keys = [(key.encode(), kind) for key, kind in arg_fields]
    from magpie_trace.columns import PieceSkipper  # its keys: both paths skip by the same rule

    skip = list(PieceSkipper(skip_categories).keys) if skip_categories else []
    read = mod.Reader(ev_type, args_type, dict(cats), len(buckets), keys, raw_default, need, skip).read
    nothing = tuple(() for _ in buckets)
    no_numbers = tuple(np.zeros(0) for _ in buckets)
    no_tids = tuple(np.zeros(0, np.int64) for _ in buckets)
    no_str = tuple(False for _ in buckets)

    def piece(buf: Any) -> KeptPiece | None:
        # the skip rule is stream_events' for the pieces it cuts (views of its buffer), never for the last piece
        # (a bytes object), which it decodes whole while it searches where the event array ends
        raw = read(buf, unescape, isinstance(buf, memoryview))
        if raw is None:
            return None
        if isinstance(raw, int):  # skipped whole: only counted
            return KeptPiece(nothing, no_numbers, no_numbers, no_tids, no_str, raw)  # type: ignore[arg-type]
        events, ts, dur, tid, tid_str, seen = raw
        f64, i64 = np.float64, np.int64
        return KeptPiece(
            events,
            tuple(np.frombuffer(b, f64) for b in ts),
            tuple(np.frombuffer(b, f64) for b in dur),
            tuple(np.frombuffer(b, i64) for b in tid),
            tid_str,
            seen,
        )

    return piece


def enclosing_chains(
    order: np.ndarray, ts: np.ndarray, ends: np.ndarray, tid: np.ndarray, n_ops: int, n_calls: int
) -> list[tuple[int, ...]] | None:
    """For each call (items ``n_ops`` to ``n_ops + n_calls`` of the columns), the ops (items below ``n_ops``) open
    at its start on its thread, innermost first; None when the extension is off or not built (the caller sweeps
    in Python). ``order``: the items to sweep, sorted by thread, start, longer first, ops before calls; an op is
    open at ``t`` while its end is after ``t``. The same stack sweep as the Python one, without an object per
    step."""
    if switched_off():
        return None
    mod = _module()
    if mod is None:
        return None
    i64, f64 = np.int64, np.float64
    columns = (np.ascontiguousarray(c, t) for c, t in ((order, i64), (ts, f64), (ends, f64), (tid, i64)))
    return mod.chains(*columns, n_ops, n_calls)  # type: ignore[no-any-return]
