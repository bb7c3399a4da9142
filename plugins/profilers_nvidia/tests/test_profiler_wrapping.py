"""A profiler wrapping the harness: the worker runs again in profile-only mode under the profiler.

ncu cannot run here (no NVIDIA GPU), so a stand-in ``ncu`` script on PATH plays its part: it runs
the wrapped command for real (the isolated worker in profile-only mode) and answers ``--import``
with the synthetic raw CSV. Everything else (the pipeline, the worker, the harness) is real.
"""

from __future__ import annotations

import json
import os
import stat
import sys

from tests.conftest import DATA

FAKE_NCU = f"""#!{sys.executable}
import subprocess, sys
from pathlib import Path
args = sys.argv[1:]
if "--import" in args:
    print(Path({str(DATA / "profilers" / "ncu_raw_synthetic.csv")!r}).read_text())
    sys.exit(0)
report = args[args.index("--export") + 1]
start = next(i for i, a in enumerate(args) if a.endswith("python") or "python3" in a)
Path(report + ".args").write_text(" ".join(args))
code = subprocess.call(args[start:])
Path(report + ".ncu-rep").write_text("fake")
sys.exit(code)
"""


def test_ncu_wraps_a_profile_only_harness_run(run_magpie, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU)
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    config = tmp_path / "k.yaml"
    config.write_text(
        f"kernel:\n  id: saxpy\n  type: pytorch\n  entry: {DATA}/kernels/faulty.py:good\n"
        f"  reference: {DATA}/kernels/faulty.py:reference\n"
        "performance:\n  backend: ncu\n  budget_seconds: 1\n  min_samples: 3\n  ncu: {clock_control: none}\n"
    )
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = run_magpie(["-o", str(tmp_path / "runs"), "analyze", "-k", str(config), "--json"], env=env)
    (r,) = json.loads(result.stdout)["results"]
    perf = r["performance"]
    assert r["correctness"]["status"] == "passed" and perf["status"] == "passed" and perf["timing"]
    assert {c["kernel_name"].split("(")[0] for c in perf["counters"]} == {"matmul_naive_kernel", "matmul_tiled_kernel"}
    notes = " ".join(perf["notes"])
    assert "caches" in notes and "locked" not in notes and "separate run of 5 launches" in notes
    workdir = tmp_path / "runs"
    args = next(workdir.rglob("report.args")).read_text()
    assert (
        "--profile-from-start off" in args
        and "--clock-control none" in args
        and "magpie_core.measurement.worker" in args
    )
    outcome = json.loads(next(workdir.rglob("outcome_profile_ncu.json")).read_text())
    assert outcome["correctness"]["message"] == "profiling run: 5 launches, not checked"
