"""``inference`` options and trace facts (issue 17): the engine read from the trace, the phase not fooled by
Inductor ops named after attention, the steady-state window set or disabled by hand, kernels without a
launch record in the TraceLens tables on request."""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from magpie_inference_analysis.analyzer import AnalysisError, InferenceAnalyzer
from magpie_inference_analysis.annotations import DECODE, PREFILL
from magpie_inference_analysis.engine import detect_engine

from tests.conftest import DATA

TRACES = DATA / "traces"
CPU = TRACES / "cpu_recorded" / "tiny_llama_cpu.json.gz"


def _summary(trace: Path, tmp_path: Path, **options: object) -> dict:
    return InferenceAnalyzer().analyze(trace, {"workers": 1, **options}, tmp_path)["traces"][0]


def test_engine_is_read_from_the_trace(tmp_path: Path) -> None:
    # the SGLang trace carries vLLM-format step annotations: the format must not name the engine
    sg = _summary(TRACES / "inference" / "sglang_decode", tmp_path / "s")
    assert (sg["engine"], sg["annotation_format"]) == ("sglang", "vllm"), sg["engine_source"]
    caps = DATA / "capture_traces" / "sglang_decode"
    assert _summary(TRACES / "inference" / "sglang_decode", tmp_path / "s2", capture_traces=str(caps))["engine"] == (
        "sglang"
    )
    assert _summary(TRACES / "inference" / "vllm_decode_full", tmp_path / "v")["engine"] == "vllm"
    h100 = _summary(TRACES / "h100", tmp_path / "h")
    assert h100["engine"] is None and "no engine op names" in h100["engine_source"]
    assert detect_engine(["aten::mm"], "atom")[0] == "atom"  # only the annotation format: said so
    assert "annotation format" in detect_engine(["aten::mm"], "atom")[1]


def _plain_cpu_trace(tmp_path: Path, triton_attention: bool) -> Path:
    """The CPU trace without its step annotations; optionally an Inductor op named after attention with a
    prefill-shaped first input beside every decode-shaped SDPA call (as torch.compile'd traces have)."""
    with gzip.open(CPU, "rt") as f:
        data = json.load(f)
    events = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("execute_")]
    if triton_attention:
        for e in list(events):
            if e.get("name") == "aten::scaled_dot_product_attention" and e["args"]["Input Dims"][0][2] == 1:
                events.append({
                    "ph": "X", "cat": "cpu_op", "name": "triton_poi_fused__scaled_dot_product_flash_attention_0",
                    "pid": e["pid"], "tid": 999_999, "ts": e["ts"], "dur": 1.0,
                    "args": {"Input Dims": [[4, 8, 32, 32]], "Input type": ["float"], "Concrete Inputs": [""]},
                })  # fmt: skip
    data["traceEvents"] = events
    path = tmp_path / ("compiled.json" if triton_attention else "plain.json")
    path.write_text(json.dumps(data))
    return path


def test_inductor_ops_named_after_attention_do_not_make_decode_prefill(tmp_path: Path) -> None:
    t = _summary(_plain_cpu_trace(tmp_path, True), tmp_path / "o")
    assert t["phases"] == {PREFILL: 1, DECODE: 8}, t["phases"]  # not prefilldecode


def test_window_set_or_disabled_by_hand(tmp_path: Path) -> None:
    auto = _summary(CPU, tmp_path / "a")["stages"][DECODE]
    assert len(auto["window_iterations"]) == 5  # the steady state (see the CLI test)
    every = _summary(CPU, tmp_path / "b", window="all")["stages"][DECODE]
    assert len(every["window_iterations"]) == 8 and "disabled" in every["window_choice"]
    hand = _summary(CPU, tmp_path / "c", window="3:5")["stages"][DECODE]
    assert hand["window_iterations"] == [3, 4, 5] and "set by hand" in hand["window_choice"]
    assert _summary(CPU, tmp_path / "d", window="7:")["stages"][DECODE]["window_iterations"] == [7, 8]
    for bad in ("5:x", "6:2", ":", "steady"):
        with pytest.raises(AnalysisError, match="window"):
            InferenceAnalyzer().analyze(CPU, {"window": bad}, tmp_path / "e")


def test_cli_window_and_unlinked_kernels(tmp_path: Path) -> None:
    magpie = str(Path(sys.executable).with_name("magpie"))
    bad = subprocess.run([magpie, "inference", str(CPU), "--window", "9:1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "FIRST is after LAST" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
    trace = _unlinked_trace(tmp_path)
    runs = {}
    for flag in ([], ["--include-unlinked-kernels"]):
        out = tmp_path / str(len(flag))
        ok = subprocess.run([magpie, "inference", str(trace), "-o", str(out), *flag], capture_output=True, timeout=120)
        assert ok.returncode == 0, ok.stderr
        (run,) = out.iterdir()  # each run writes into a new folder under -o
        with (run / "unified_perf_summary.csv").open(newline="") as f:
            runs[len(flag)] = [r["name"] for r in csv.DictReader(f)]
    unlinked = [n for n in runs[1] if n.startswith("(no launch record)->")]
    assert unlinked and not [n for n in runs[0] if n.startswith("(no launch record)->")]
    assert len(runs[1]) == len(runs[0]) + len(unlinked)


def _unlinked_trace(tmp_path: Path) -> Path:
    """The H100 trace with the launch records of its first 20 kernels dropped (as a profiler under load
    drops events)."""
    with gzip.open(TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "rt") as f:
        data = json.load(f)
    kernels = sorted((e for e in data["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    gone = {k["args"]["correlation"] for k in kernels[:20]}
    data["traceEvents"] = [
        e for e in data["traceEvents"]
        if not (e.get("cat") == "cuda_runtime" and e.get("args", {}).get("correlation") in gone)
    ]  # fmt: skip
    path = tmp_path / "unlinked.json"
    path.write_text(json.dumps(data))
    return path


def test_tracelens_tables_can_be_skipped(tmp_path: Path) -> None:
    t = _summary(CPU, tmp_path / "off", tracelens_tables=False)
    assert t["tracelens_tables"] == {} and not (tmp_path / "off" / "unified_perf_summary.csv").exists()
    on = _summary(CPU, tmp_path / "on")
    assert Path(on["tracelens_tables"]["unified_perf_summary"]).is_file()
