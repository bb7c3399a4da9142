"""Trace loading: real CUDA and ROCm traces, both container shapes, broken files, rank discovery."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from magpie_trace import TraceLoadError, discover, load_trace
from magpie_trace.demangle import demangle, leading_names

from tests.conftest import DATA

TRACES = DATA / "traces"
H100 = TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300 = TRACES / "mi300" / "google_owlv2-large-patch14-ensemble__1016001.json.gz"
SGLANG = TRACES / "inference" / "sglang_decode" / "sglang_Qwen3-8B_decode.json.gz"


def _plain(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("path,platform", [(H100, "cuda"), (MI300, "rocm"), (SGLANG, "rocm")])
def test_real_traces_load_with_all_events(path: Path, platform: str) -> None:
    trace = load_trace(path)
    plain = _plain(path)["traceEvents"]
    assert len(trace.events) == len(plain)
    assert trace.platform == platform
    kernels = [e for e in trace.events if e.cat == "kernel"]
    assert kernels and all(e.args is not None and e.args.correlation is not None for e in kernels)


def test_distributed_info_rank_is_read() -> None:
    trace = load_trace(SGLANG)
    assert (trace.rank, trace.world_size) == (0, 1)


def test_bare_list_and_plain_json(tmp_path: Path) -> None:
    events = [e for e in _plain(H100)["traceEvents"] if e.get("cat") in ("kernel", "cuda_runtime")][:500]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(events))
    trace = load_trace(bare)
    assert len(trace.events) == 500 and trace.platform == "cuda"


def test_hex_stream_ids_and_string_pids(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": "GPU 0",
            "tid": "stream 0x7f00",
            "ts": 10.0,
            "dur": 2.0,
            "args": {"stream": "0x7f00", "device": 0, "correlation": 5},
        },
    ]
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": events}))
    e = load_trace(p).events[0]
    assert e.args.stream == "0x7f00" and e.pid == "GPU 0"


def test_truncated_gzip_names_file_and_offset(tmp_path: Path) -> None:
    data = H100.read_bytes()
    broken = tmp_path / "rank-1.json.gz"
    broken.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceLoadError) as info:
        load_trace(broken)
    msg = str(info.value)
    assert str(broken) in msg and "truncated gzip" in msg and "decompressed bytes" in msg
    assert info.value.offset and info.value.offset > 0


def test_broken_json_names_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [\n {"ph": "X", "name": "a", "ts": 1, "dur": 2},\n {"ph": "X", "name": oops}\n]}')
    with pytest.raises(TraceLoadError) as info:
        load_trace(p)
    assert "line 3" in str(info.value) and str(p) in str(info.value)


def test_json_cut_short_says_truncated(tmp_path: Path) -> None:
    p = tmp_path / "cut.json"
    text = '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2},\n {"ph": "X", "na'
    p.write_text(text)
    with pytest.raises(TraceLoadError, match="truncated") as info:
        load_trace(p)
    message = str(info.value)
    assert f"truncated JSON: the data ends at byte {len(text)}, line 2," in message and str(p) in message


def test_wrong_field_type_names_json_path(tmp_path: Path) -> None:
    p = tmp_path / "typed.json"
    p.write_text('{"traceEvents": [{"ph": "X", "name": 5, "ts": 1, "dur": 2}]}')
    with pytest.raises(TraceLoadError, match=r"traceEvents\[0\]\.name"):
        load_trace(p)


def test_non_numeric_ts_or_dur_is_absent_not_fatal(tmp_path: Path) -> None:
    """A string or null where a number belongs: the event loads without that field (NaN), so the
    analyses count it as skipped instead of failing the whole file."""
    p = tmp_path / "typed.json"
    p.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": "soon", "dur": null}, {"ph": "X", "ts": 1}]}')
    events = load_trace(p).events
    assert [math.isnan(e.ts) for e in events] == [True, False] and all(math.isnan(e.dur) for e in events)


def test_object_without_trace_events_is_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{"model": "x", "events": []}')
    with pytest.raises(TraceLoadError, match="not a trace: a JSON object without `traceEvents`"):
        load_trace(p)


@pytest.mark.parametrize(
    "names,expected",
    [
        (["a-rank-0.pt.trace.json.gz", "a-rank-1.pt.trace.json.gz"], [0, 1]),
        (["trace_rank_3.json", "trace_rank_1.json"], [1, 3]),
        (["rank2.json", "rank0.json"], [0, 2]),
        (["dp0_tp0.json", "dp0_tp1.json", "dp1_tp0.json", "dp1_tp1.json"], [0, 1, 2, 3]),
        (["rank-1/trace.json", "rank-0/trace.json"], [0, 1]),
        (["x.json", "y.json.gz"], [0, 1]),
    ],
)
def test_rank_discovery(tmp_path: Path, names: list[str], expected: list[int]) -> None:
    for n in names:
        (tmp_path / n).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / n).write_text("[]")
    (tmp_path / "gap_analysis").mkdir()
    (tmp_path / "gap_analysis" / "gap_analysis.json").write_text("{}")  # our own output is never input
    found = discover(tmp_path)
    assert [f.rank for f in found] == expected


def test_demangling_uses_a_library() -> None:
    text = demangle(
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
    )
    assert text is not None and text.startswith("void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t")
    # a mangling no installed library reads (C++20 'Tn'): the nested name is still recovered
    odd = "_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i"
    assert leading_names(odd) == ["sgl_hip", "activation", "act_and_mul_kernel"]


def test_batch_demangling_through_a_cxxfilt_tool_or_the_library(tmp_path: Path) -> None:
    """``demangle_names``, the demangler kernel backends call for compile reports: a c++filt-style program
    when one is found (by name or path, in the given order), else the library; unreadable names stay."""
    from magpie_trace.demangle import demangle_names

    names = ["_Z6matmulPKfS0_Pfi", "plain_kernel", "_Zbroken"]
    by_library = demangle_names(names, tools=())
    assert by_library == {"_Z6matmulPKfS0_Pfi": "matmul(float const*, float const*, float*, int)",
                          "plain_kernel": "plain_kernel", "_Zbroken": "_Zbroken"}  # fmt: skip
    fake = tmp_path / "fake-filt"
    fake.write_text("#!/bin/sh\nexec sed 's/.*/<&>/'\n")
    fake.chmod(0o755)
    assert demangle_names(names, tools=("no-such-filt", fake)) == {n: f"<{n}>" for n in names}
    assert demangle_names([], tools=(fake,)) == {}


def test_invalid_utf8_names_its_byte(tmp_path: Path) -> None:
    """msgspec says only "Invalid UTF-8 encoded string": the message adds where the first bad byte is."""
    p = tmp_path / "bad_utf8.json"
    head = b'{"traceEvents": [\n{"ph": "X", "name": "k'
    p.write_bytes(head + b'\xff", "ts": 1, "dur": 2}]}')
    with pytest.raises(TraceLoadError) as info:
        load_trace(p)
    assert f"broken JSON at byte {len(head)}, line 2, column " in str(info.value)
