"""Gap analysis on real traces, checked against independent plain-json computations."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from magpie_gap_analysis.cli import run_gap_analysis
from magpie_gap_analysis.config import GapAnalysisConfig
from magpie_gap_analysis.output import AMD_COLUMNS
from magpie_gap_analysis.pipeline import gap_analysis

from tests.conftest import DATA

TRACES = DATA / "traces"
RunMagpie = Callable[..., subprocess.CompletedProcess[str]]
ALL = sorted(TRACES.rglob("*.json.gz"))


def plain_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def independent_kernel_sums(events: list[dict]) -> dict[str, tuple[int, float]]:
    """AMD Magpie's rule, written out plainly: cat contains kernel/gpu, not an annotation."""
    sums: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for e in events:
        cat = (e.get("cat") or "").lower()
        if "annotation" in cat or not ("kernel" in cat or "gpu" in cat):
            continue
        sums[e["name"]][0] += 1
        sums[e["name"]][1] += e.get("dur", 0.0)
    return {k: (v[0], v[1]) for k, v in sums.items()}


def independent_busy(events: list[dict]) -> dict[str, float]:
    """Union of GPU activity intervals per device, by a plain sort-and-sweep."""
    per_dev: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            dev = str(e.get("args", {}).get("device", e.get("pid")))
            per_dev[dev].append((e["ts"], e["ts"] + e["dur"]))
    out = {}
    for dev, ivs in per_dev.items():
        ivs.sort()
        total, cur_s, cur_e = 0.0, ivs[0][0], ivs[0][1]
        for s, e in ivs[1:]:
            if s > cur_e:
                total += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        out[dev] = total + cur_e - cur_s
    return out


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_totals_match_independent_computation(path: Path, tmp_path: Path) -> None:
    events = plain_events(path)
    expected = independent_kernel_sums(events)
    result = gap_analysis(path, GapAnalysisConfig(top_k=10_000), tmp_path)
    assert not result.errors and result.num_ranks == 1
    assert result.total_duration_us == pytest.approx(sum(t for _, t in expected.values()), rel=1e-9)
    got = {k.name: (k.calls, k.self_cuda_total_us) for k in result.top_kernels}
    assert set(got) == set(expected)
    for name, (calls, total) in expected.items():
        assert got[name][0] == calls and got[name][1] == pytest.approx(total, rel=1e-9)
    busy = independent_busy(events)
    devices = {d.device: d for d in result.ranks[0].devices}
    assert set(devices) == set(busy)
    for dev, b in busy.items():
        # absolute timestamps near 1e12 us resolve to ~1e-4 us, over thousands of intervals
        assert devices[dev].busy_us == pytest.approx(b, abs=0.05)
        assert devices[dev].idle_us == pytest.approx(devices[dev].active_span_us - devices[dev].busy_us, abs=1e-6)


def test_csv_columns_and_json_keys(tmp_path: Path) -> None:
    path = TRACES / "h100"
    result = gap_analysis(path, GapAnalysisConfig(top_k=5), tmp_path)
    with open(tmp_path / "gap_analysis.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0][:6] == AMD_COLUMNS and len(rows) == 6
    top = rows[1]
    assert top[0] == result.top_kernels[0].name and top[2] == f"{result.top_kernels[0].self_cuda_total_us:.2f}"
    assert "[" in top[5]  # input shapes from the launching cpu_op's Input Dims
    data = json.loads((tmp_path / "gap_analysis.json").read_text())
    for key in ("config", "total_duration_us", "num_ranks", "top_kernels", "errors", "csv_path", "output_dir"):
        assert key in data
    assert set(data["top_kernels"][0]) >= {
        "name",
        "calls",
        "self_cuda_total_us",
        "avg_time_us",
        "pct_total",
        "input_shapes",
    }
    assert (tmp_path / "gap_analysis_rank0.csv").is_file() and (tmp_path / "gpu_gaps.csv").is_file()
    dev = data["ranks"][0]["devices"][0]
    assert dev["largest_gaps"] and dev["largest_gaps"][0]["duration_us"] >= dev["largest_gaps"][-1]["duration_us"]


def test_kernel_stats_extras_are_consistent(tmp_path: Path) -> None:
    result = gap_analysis(TRACES / "mi300", GapAnalysisConfig(top_k=3), tmp_path)
    for k in result.top_kernels:
        assert k.min_us <= k.avg_time_us <= k.max_us and k.std_us >= 0
        assert 0 < k.pct_gpu_busy <= 100 and k.pct_wall < k.pct_gpu_busy
    assert result.top_kernels[0].category == "reduce"  # cunn_SoftMaxForward


def test_percent_window_matches_amd_overlap_rule(tmp_path: Path) -> None:
    path = TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    events = plain_events(path)
    timed = [e for e in events if e.get("ts") is not None]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + e.get("dur", 0) for e in timed)
    a, b = t0 + (t1 - t0) * 0.25, t0 + (t1 - t0) * 0.5
    inside = [e for e in timed if e["ts"] + e.get("dur", 0) >= a and e["ts"] <= b]
    expected = sum(t for _, t in independent_kernel_sums(inside).values())
    result = gap_analysis(path, GapAnalysisConfig(trace_start_pct=25, trace_end_pct=50), tmp_path)
    assert result.total_duration_us == pytest.approx(expected, rel=1e-9)
    # absolute window in microseconds from the trace start selects the same events
    result_us = gap_analysis(path, GapAnalysisConfig(), tmp_path / "us", window_us=(a - t0, b - t0))
    assert result_us.total_duration_us == pytest.approx(expected, rel=1e-9)


def test_annotation_window_on_gpu_side_ranges(tmp_path: Path) -> None:
    path = TRACES / "h100"
    full = gap_analysis(path, GapAnalysisConfig(), tmp_path / "a")
    step = gap_analysis(path, GapAnalysisConfig(), tmp_path / "b", window_annotation="ProfilerStep*")
    assert 0 < step.total_duration_us < full.total_duration_us
    assert "GPU-side" in (step.ranks[0].window_note or "")
    missing = gap_analysis(path, GapAnalysisConfig(), tmp_path / "c", window_annotation="no_such_range")
    assert missing.total_duration_us == 0 and any("not found" in e for e in missing.errors)


def test_annotation_window_by_launch_time_for_cpu_ranges(tmp_path: Path) -> None:
    path = TRACES / "inference" / "sglang_decode"
    events = plain_events(next(path.glob("*.gz")))
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("step")]
    launches = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    expected = 0.0
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            t = launches.get(e["args"]["correlation"], e["ts"])
            if any(s["ts"] <= t <= s["ts"] + s["dur"] for s in steps):
                expected += e["dur"]
    result = gap_analysis(path, GapAnalysisConfig(), tmp_path, window_annotation="step*")
    assert "CPU-side" in (result.ranks[0].window_note or "")
    assert result.total_duration_us == pytest.approx(expected, rel=1e-9)


def test_host_stalls_are_told_apart_from_launch_overhead(tmp_path: Path) -> None:
    """The eager MI300 trace waits on the host for 99.96 % of its idle time, but 4 gaps of ~140 ms after
    aten::copy_ are 98 % of it: host stalls, not launch overhead (issue 46: it was called LAUNCH-BOUND)."""
    result = gap_analysis(TRACES / "mi300", GapAnalysisConfig(), tmp_path)
    dev = result.ranks[0].devices[0]
    assert dev.idle_pct > 50 and dev.host_bound_idle_pct > 90 and not dev.launch_bound
    assert len(dev.host_stalls) == 4 and min(dev.host_stalls) > 100_000 and dev.host_stalls_after == "aten::copy_"
    assert dev.largest_gaps[0].cpu_op == "aten::copy_"
    graph = gap_analysis(TRACES / "inference" / "vllm_decode_full", GapAnalysisConfig(), tmp_path / "g")
    assert not graph.ranks[0].devices[0].launch_bound  # CUDA-graph replay keeps the GPU fed


def test_many_short_waits_for_the_host_are_launch_bound() -> None:
    from magpie_gap_analysis.analysis import DeviceStats, Gap

    gaps = [Gap("0", 100.0 * i, 10.0, "k", "k", True, None, None, "launch") for i in range(100)]
    stats = DeviceStats("0", 200, 1000.0, 2000.0, 1000.0, 2000.0, 100, 1000.0, 200, None, None, None, None, gaps)
    assert stats.launch_bound and not stats.host_stalls()


def test_multi_rank_with_broken_ranks(tmp_path: Path) -> None:
    runs = tmp_path / "torch_trace"
    runs.mkdir()
    src = TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    shutil.copy(src, runs / "w-rank-0.pt.trace.json.gz")
    shutil.copy(src, runs / "w-rank-1.pt.trace.json.gz")
    data = src.read_bytes()
    (runs / "w-rank-2.pt.trace.json.gz").write_bytes(data[: len(data) // 3])
    (runs / "w-rank-3.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "name": }]}')
    config = GapAnalysisConfig()
    result = gap_analysis(tmp_path, config, None, workers=2)
    assert result.output_dir == str(tmp_path / "gap_analysis")
    assert result.num_ranks == 2 and result.workers == 2
    assert any("w-rank-2" in e and "truncated gzip" in e for e in result.errors)
    assert any("w-rank-3" in e and "broken JSON" in e for e in result.errors)
    single = gap_analysis(src, GapAnalysisConfig(), tmp_path / "one")
    assert result.total_duration_us == pytest.approx(2 * single.total_duration_us, rel=1e-9)
    assert result.top_kernels[0].calls == 2 * single.top_kernels[0].calls
    assert run_gap_analysis(tmp_path, config, tmp_path / "out", as_json=True) == 1


def test_cli_gap_json_with_amd_style_flags(run_magpie: RunMagpie, tmp_path: Path) -> None:
    args = ["gap", str(TRACES / "h100"), "-o", str(tmp_path), "--top-k", "4", "--categories", "kernel", "gpu_memset"]
    done = run_magpie([*args, "--json"])
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["config"]["categories"] == ["kernel", "gpu_memset"] and len(out["top_kernels"]) == 4
    done = run_magpie(["benchmark", "--trace-dir", str(TRACES / "h100"), "-o", str(tmp_path / "b"), "--no-rank-csv"])
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "b").iterdir()  # a new run folder under -o
    assert (run / "gap_analysis.json").is_file() and not (run / "gap_analysis_rank0.csv").exists()
    assert run_magpie(["gap", str(tmp_path / "nothing-here")]).returncode == 2


def test_cli_unreadable_rank_is_an_error_on_stderr(run_magpie: RunMagpie, tmp_path: Path) -> None:
    """A trace that cannot be read: with no rank read at all, a usage error (exit 2) naming the file and why, and no
    run folder left behind; with another rank read, exit 1 and that rank's table is still printed."""
    good = tmp_path / "traces" / "rank0.json"
    good.parent.mkdir()
    good.write_bytes(gzip.decompress((TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").read_bytes()))
    cut = tmp_path / "cut" / "rank1.json"
    cut.parent.mkdir()
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    alone = run_magpie(["gap", str(cut), "-o", str(tmp_path / "out"), "--no-html"])
    assert alone.returncode == 2
    err = alone.stderr.replace("\n", "")
    assert "rank1.json: truncated JSON" in err
    assert "top " not in alone.stdout and "wrote " not in alone.stdout
    assert not list((tmp_path / "out").iterdir())  # no run folder left behind
    shutil.copy(cut, good.parent / "rank1.json")
    both = run_magpie(["gap", str(good.parent), "-o", str(tmp_path / "out"), "--no-html"])
    assert both.returncode == 1
    assert "kernels (1 rank(s))" in both.stdout and "rank1.json: truncated JSON" in both.stderr.replace("\n", "")


def test_gap_command_has_help(run_magpie: RunMagpie) -> None:
    result = run_magpie(["gap", "--help"])
    assert result.returncode == 0, result.stderr


def test_source_columns_present_when_finder_requested(tmp_path: Path) -> None:
    finder = pytest.importorskip("magpie_source_finder.finder", reason="the kernel source finder plugin is absent")
    source_columns = finder.SOURCE_COLUMNS
    repos = DATA / "kernel_sources"
    config = GapAnalysisConfig(
        find_kernel_sources=True,
        kernel_source_repos=[str(repos / "vllm")],
        repos_base_dir=str(tmp_path / "cache"),
        top_k=50,
    )
    result = gap_analysis(TRACES / "inference" / "vllm_decode_full", config, tmp_path / "o")
    text = (tmp_path / "o" / "gap_analysis.csv").read_text()
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
    header = next(csv.reader(lines))
    assert header[6:21] == source_columns
    rows = {r[0]: dict(zip(header, r, strict=True)) for r in csv.reader(lines[1:])}
    rotary = next(v for k, v in rows.items() if "vllm::rotary_embedding_kernel" in k)
    assert rotary["source_resolution"] == "exact" and rotary["source_file"] == "$VLLM_DIR/csrc/pos_encoding_kernels.cu"
    assert all(v["source_resolution"] in ("exact", "probable", "ambiguous", "unresolved") for v in rows.values())
    assert any(r["var"] == "$VLLM_DIR" for r in result.source_repos)


def test_traces_of_different_platforms_are_said_to_be_a_mix(tmp_path: Path) -> None:
    """Issue 46: a CUDA run and a ROCm run in one folder became "2 ranks" of one job with no warning."""
    folder = tmp_path / "mix"
    folder.mkdir()
    shutil.copy(TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", folder)
    shutil.copy(next((TRACES / "mi300").glob("*.json*")), folder)
    result = gap_analysis(folder, GapAnalysisConfig(), tmp_path / "out")
    assert result.num_ranks == 2
    assert any("not the ranks of one job" in w and "cuda:" in w and "rocm:" in w for w in result.warnings)
    one = gap_analysis(TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", GapAnalysisConfig(), tmp_path / "o")
    assert not any("not the ranks of one job" in w for w in one.warnings)


def test_traces_whose_own_ranks_clash_are_said_not_to_be_one_job(tmp_path: Path) -> None:
    """Issue 46: a vLLM and an SGLang recording (both ROCm, both rank 0 of a world of 1) were merged as ranks 0 and
    1 of one job without a word; the ranks the traces record say otherwise."""
    folder = tmp_path / "two_jobs"
    folder.mkdir()
    shutil.copy(TRACES / "inference" / "vllm_decode_full" / "graph_execution.json.gz", folder / "a.json.gz")
    shutil.copy(next((TRACES / "inference" / "sglang_decode").glob("*.json.gz")), folder / "b.json.gz")
    result = gap_analysis(folder, GapAnalysisConfig(), tmp_path / "out")
    (warning,) = [w for w in result.warnings if "distributedInfo" in w]
    assert "rank 0 in a.json.gz, b.json.gz" in warning and "2 traces of a world of 1" in warning


def test_piped_kernel_table_tells_same_named_kernels_apart(run_magpie: RunMagpie, tmp_path: Path) -> None:
    """Issue 46: four rows read `elementwise_kernel` and numbers were cut at 80 columns in piped output. Kernels
    that share a function name show their full names; piped, no column is cut."""
    trace = TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    done = run_magpie(["gap", str(trace), "-o", str(tmp_path), "--no-html", "--top-k", "8"])
    assert done.returncode == 0, done.stderr
    rows = [line.split(maxsplit=7) for line in done.stdout.splitlines() if line.strip()[:1].isdigit()]
    kernels = [row[7] for row in rows if len(row) == 8]  # #, category, 5 numbers, then the kernel's full name
    assert len(kernels) == 8 and len(set(kernels)) == 8, done.stdout  # no two rows alike
    assert all(float(row[6]) >= 0 for row in rows)  # every number there, uncut
