"""The busy/idle timeline gap analysis keeps for report.html: busy share per time bin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from magpie_gap_analysis.analysis import busy_timeline
from magpie_gap_analysis.pipeline import gap_analysis

from magpie_core.config.gap import GapAnalysisConfig
from tests.conftest import DATA


def test_bins_of_known_intervals() -> None:
    t = busy_timeline(np.array([0.0, 20.0, 25.0]), np.array([10.0, 22.0, 30.0]), bins=3)
    assert t["start_us"] == 0.0 and t["bin_us"] == 10.0
    assert t["busy_pct"] == [100.0, 0.0, 70.0]  # [0,10] busy; [10,20] idle; 2 + 5 of [20,30]
    assert busy_timeline(np.array([]), np.array([])) == {}


def test_timeline_adds_up_to_the_busy_time(tmp_path: Path) -> None:
    result = gap_analysis(DATA / "traces" / "h100", GapAnalysisConfig(top_k=3), tmp_path)
    (device,) = result.ranks[0].devices
    t = device.timeline
    busy = sum(t["busy_pct"]) * t["bin_us"] / 100.0
    assert len(t["busy_pct"]) == 240 and abs(busy - device.busy_us) <= 0.01 * device.busy_us
