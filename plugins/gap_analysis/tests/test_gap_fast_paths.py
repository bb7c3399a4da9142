"""The analysis' shortcuts for the usual trace (runs of graph kernels sharing a correlation id, CPU ops with ordered
distinct External ids, ordered host ranges asked about lazily) give what the plain computation gives, including on
input where the shortcut does not apply (the whole-trace equality is in test_gap_columns.py)."""

from __future__ import annotations

import numpy as np
from magpie_gap_analysis.analysis import _find, _last_index, _Launches, _ops_with_dims, _Ranges, _top_indices
from magpie_trace.columns import NONE


def _launches(rng: np.random.Generator) -> _Launches:
    rt_corr = rng.choice(np.arange(0, 400, 2), 150, replace=False)
    rt = {"corr": rt_corr, "ts": rng.random(150) * 1e3, "dur": rng.random(150)}
    flow = {"id": rng.integers(0, 400, 120), "ts": rng.random(120) * 1e3}
    return _Launches(rt, flow)  # type: ignore[arg-type]


def _plain_lookup(launches: _Launches, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One search per event, runtime call over flow start: the lookup as written before the run shortcut."""
    t = np.full(len(corr), np.nan)
    call = np.full(len(corr), -1, np.int64)
    pos, found = _find(launches.fl_keys, corr)
    t = np.where(found, launches.fl_ts[pos], t)
    pos, found = _find(launches.rt_keys, corr)
    call = np.where(found, launches.rt_row[pos], -1)
    return np.where(found, launches.rt_ts[pos], t), call


def test_launch_lookup_per_run_of_equal_ids_is_the_per_event_lookup() -> None:
    rng = np.random.default_rng(7)
    launches = _launches(rng)
    runs = rng.integers(-1, 400, 300)
    runs[::17] = NONE  # events without a correlation id
    for corr in (np.repeat(runs, rng.integers(1, 40, len(runs))), rng.integers(0, 400, 500), runs[:1], runs[:0]):
        t, call = launches.of(corr)
        t_ref, call_ref = _plain_lookup(launches, corr)
        np.testing.assert_array_equal(t, t_ref)
        np.testing.assert_array_equal(call, call_ref)
        assert call.dtype == np.int64 and t.dtype == np.float64


def _plain_join(cpu: dict[str, np.ndarray], ext: np.ndarray, slots: np.ndarray) -> list[tuple[int, int]]:
    """Every (slot, op row) pair, events in order, each event's ops in id order then row order."""
    rows = [r for r in range(len(cpu["ext"])) if cpu["dims"][r] >= 0 and cpu["ext"][r] != NONE]
    rows.sort(key=lambda r: cpu["ext"][r])
    return [(int(s), r) for e, s in zip(ext.tolist(), slots.tolist(), strict=True) for r in rows if cpu["ext"][r] == e]


def test_cpu_op_join_with_ordered_distinct_ids_is_the_general_join() -> None:
    rng = np.random.default_rng(3)
    ordered = np.sort(rng.choice(1000, 300, replace=False))
    shuffled_with_repeats = rng.integers(0, 200, 300)
    for ids in (ordered, shuffled_with_repeats):
        cpu = {"ext": ids.copy(), "dims": rng.integers(-1, 5, len(ids)).astype(np.int32)}
        cpu["ext"][::23] = NONE
        ext = rng.integers(0, 1000, 400)
        ext[::5] = NONE
        slots = rng.integers(0, 9, 400)
        got_slots, got_rows = _ops_with_dims(cpu, ext, slots)
        assert list(zip(got_slots.tolist(), got_rows.tolist(), strict=True)) == _plain_join(cpu, ext, slots)


def _plain_ranges(ts: np.ndarray, dur: np.ndarray, t_min: float, key: np.ndarray | None, value: int, t: float) -> list:
    rows = [r for r in range(len(ts)) if key is None or key[r] == value]
    starts = {r: ts[r] - t_min for r in rows}
    inside = [r for r in rows if starts[r] <= t and starts[r] + dur[r] >= t]
    return sorted(inside, key=lambda r: ((starts[r] + dur[r]) - starts[r], r))


def test_lazy_ranges_answer_as_a_scan_of_every_range() -> None:
    rng = np.random.default_rng(11)
    t_min = 1.7e15  # microsecond timestamps of today: the relative times are rounded
    for ordered in (True, False):
        ts = t_min + np.cumsum(rng.random(2000) * 50) if ordered else t_min + rng.random(2000) * 1e5
        dur = rng.random(2000) * 400
        tid = rng.integers(0, 3, 2000).astype(np.int32)
        names = [f"f{i}" for i in range(2000)]
        ranges = _Ranges(ts, dur, t_min, np.arange(2000, dtype=np.int32), names)
        assert ranges.ordered is ordered
        for t in rng.random(40) * 1.1e5:  # in no particular order: the computed prefix grows and is reused
            for key, value in ((None, 0), (tid, 1)):
                want = _plain_ranges(ts, dur, t_min, key, value, t)
                assert ranges.containing(t, key, value).tolist() == sorted(want)
                assert ranges.innermost(t, key, value) == (names[want[0]] if want else None)
                assert len(ranges.frames_at(t, key, value)) == min(4, len(want))


def test_last_index_skips_missing_ids() -> None:
    keys, last = _last_index(np.array([5, NONE, 3, 5, 3, NONE]))
    assert keys.tolist() == [3, 5] and last.tolist() == [4, 3]


def test_top_indices_are_the_first_of_a_full_stable_sort() -> None:
    rng = np.random.default_rng(5)
    for values in (
        rng.random(5000),
        np.round(rng.random(5000), 2),  # many ties
        np.zeros(5000),
        np.concatenate((np.zeros(4000), rng.random(1000))),
        rng.random(700),  # too few slices for the bound
    ):
        for k in (1, 10, 30):
            assert _top_indices(values, k).tolist() == np.argsort(-values, kind="stable")[:k].tolist()
