"""Which trace events hold a measurement, and what to say about the ones that do not.

A profiler trace may come from a crashed run, a buggy exporter or a hand edit: a complete (``ph: X``)
event can lack ``dur`` or ``ts``, carry a string where a number belongs, or hold a negative, infinite or
absurd value (``ts: 1e300``, a 30-digit duration). Summing such events prints garbage as if it were
measured, so every analysis skips them and says how many it skipped, by category and reason
("1,204 kernel events without a numeric `dur` skipped").

* :func:`valid_times` / :func:`reasons`: vectorized checks over the ``ts`` and ``dur`` columns of a piece;
* :class:`SkipCounts`: the counts, mergeable across pieces and processes, and :func:`skipped_messages`;
* :func:`sanitize_events_json`: for a file whose typed decode failed, the same bytes with every ``ts`` or
  ``dur`` that is not a number removed (so the event is counted as lacking it), or None when the file is
  not a trace at all (no event array, events that are not objects).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:  # numpy is imported where the columns are checked: `magpie_trace` loads without it
    import numpy as np

__all__ = [
    "MAX_DUR_US",
    "MAX_TS_US",
    "NOT_A_TRACE_NESTED",
    "REASONS",
    "SkipCounts",
    "count_skipped",
    "not_a_trace",
    "reasons",
    "sanitize_events_json",
    "skipped_messages",
    "valid_durations",
    "valid_times",
]

#: largest believable timestamp (microseconds; profilers write epoch or boot times, ~1.8e15 today)
MAX_TS_US = 1e17
#: largest believable duration of one event (microseconds; 1e12 us is 11.6 days)
MAX_DUR_US = 1e12

#: why an event was skipped, by the code :func:`reasons` gives (0: kept)
REASONS = {
    1: "without a numeric `ts`",
    2: f"with a negative or absurd `ts` (outside 0..{MAX_TS_US:.0e} us)",
    3: "without a numeric `dur`",
    4: "with a negative `dur`",
    5: f"with an absurd `dur` (infinite or over {MAX_DUR_US:.0e} us)",
}

#: the message for JSON nested deeper than the decoder recurses (no profiler writes that)
NOT_A_TRACE_NESTED = "not a trace: JSON nested too deep (a profiler writes a few levels)"


def not_a_trace(decode_error: str) -> str:
    """The message for a typed decode that failed: a missing ``traceEvents`` said in words."""
    if "missing required field `traceEvents`" in decode_error:
        return "not a trace: a JSON object without `traceEvents` (the profiler's event array)"
    return f"not a trace: {decode_error}"


#: (category, reason code) -> events skipped
SkipCounts = Counter


def valid_times(ts: np.ndarray) -> np.ndarray:
    """Mask of believable timestamps (NaN, the decoders' "absent", is not)."""
    return (ts >= 0.0) & (ts <= MAX_TS_US)


def valid_durations(dur: np.ndarray) -> np.ndarray:
    """Mask of believable durations (NaN, the decoders' "absent", is not)."""
    return (dur >= 0.0) & (dur <= MAX_DUR_US)


def reasons(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The :data:`REASONS` code of each event (0: its ``ts`` and ``dur`` are believable)."""
    import numpy as np

    out = np.zeros(len(ts), np.int8)
    out[(dur > MAX_DUR_US) | np.isinf(dur)] = 5
    out[dur < 0.0] = 4
    out[np.isnan(dur)] = 3
    out[~valid_times(ts)] = 2
    out[np.isnan(ts)] = 1
    return out


def count_skipped(counts: SkipCounts, cats: list[str], cat_ids: np.ndarray, codes: np.ndarray) -> None:
    """Add the skipped events (category ids ``cat_ids``, reason ``codes``, both of skipped events only)."""
    import numpy as np

    pairs, n = np.unique(np.stack([cat_ids.astype(np.int64), codes.astype(np.int64)]), axis=1, return_counts=True)
    for (cid, code), k in zip(pairs.T.tolist(), n.tolist(), strict=True):
        counts[(cats[cid], int(code))] += int(k)


def skipped_messages(counts: SkipCounts | dict[tuple[str, int], int]) -> list[str]:
    """One line per category and reason, most first: "1,204 kernel events without a numeric `dur` skipped"."""
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        f"{n:,} {cat or '(no category)'} event{'s' if n != 1 else ''} {REASONS.get(code, '?')} skipped"
        for (cat, code), n in rows
        if n
    ]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _clean(event: Any) -> Any:
    if isinstance(event, dict):
        for key in ("ts", "dur"):
            if key in event and not _is_number(event[key]):
                del event[key]
    return event


def sanitize_events_json(buf: bytes | memoryview) -> bytes | None:
    """``buf`` (a trace: an event list or an object with ``traceEvents``) re-encoded with every non-numeric
    ``ts``/``dur`` removed, so a typed decoder counts those events as lacking the field; None when ``buf`` is
    not a trace (its typed decode error then says why). Slow (plain objects): only for files that failed."""
    try:
        data = msgspec.json.decode(buf)
    except (msgspec.DecodeError, RecursionError):  # nested too deep to be a trace
        return None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        return None
    for event in events:
        _clean(event)
    return msgspec.json.encode(data)
