"""The ``inference`` trace analyzer (plugin magpie-inference-analysis): annotations, FLOPs models,
GPU specs, stage split and steady state on real traces, graph-capture mapping, and the
cross-check against TraceLens's own published tables for the same traces."""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path

import msgspec
import pytest
from magpie_inference_analysis.analyzer import ROOFLINE_COLUMNS, InferenceAnalyzer
from magpie_inference_analysis.annotations import DECODE, MIXED, PREFILL, parse_capture, parse_step
from magpie_inference_analysis.models import model_op
from magpie_inference_analysis.specs import SpecError, bundled, detect_spec, load_spec

from tests.conftest import DATA

TRACES = DATA / "traces"
SGLANG = TRACES / "inference" / "sglang_decode" / "sglang_Qwen3-8B_decode.json.gz"
VLLM = TRACES / "inference" / "vllm_decode_full" / "graph_execution.json.gz"
H100 = TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
CPU = TRACES / "cpu_recorded" / "tiny_llama_cpu.json.gz"
REF = DATA / "tracelens_reference"
BF16 = "c10::BFloat16"


# -- annotations ---------------------------------------------------------------------------------


def test_step_annotations_of_every_engine() -> None:
    s = parse_step("execute_context_2(14721)_generation_0(0)")
    assert s and s.phase == PREFILL and s.c_sq == 14721 and s.context_requests == 2 and not s.detailed
    s = parse_step("execute_context_0(0)_generation_64(64)")
    assert s and s.phase == DECODE and s.g_sq == 64 and s.requests == 64
    s = parse_step("execute_context_2(6144)_generation_3(3)")
    assert s and s.phase == MIXED and s.tokens == 6147
    s = parse_step("execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)")
    assert s and s.detailed and s.phase == MIXED
    assert (s.c_sq, s.c_sk, s.c_sqsq, s.c_sqsk, s.g_sq, s.g_sk, s.g_sqsq, s.g_sqsk) == (
        6144, 7144, 20971520, 23019520, 3, 6144, 3, 6144,
    )  # fmt: skip
    s = parse_step("step[DECODE bs=64]")
    assert s and s.engine == "sglang" and s.phase == DECODE and s.requests == 64 and s.g_sq == 64
    s = parse_step("step[EXTEND bs=2 toks=14721]")
    assert s and s.phase == PREFILL and s.c_sq == 14721 and s.context_requests == 2
    s = parse_step("step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]")
    assert s and s.detailed and s.phase == MIXED and (s.c_sqsk, s.g_sk) == (40, 12)
    s = parse_step("step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]")
    assert s and s.detailed and s.g_sq == 128 and s.requests == 64
    assert parse_step("step[MIXED bs=2]").phase == MIXED  # type: ignore[union-attr]
    s = parse_step("prefill[bs=2 tok=14721 ctx=[7803, 6918]]")
    assert s and s.engine == "atom" and s.phase == PREFILL and s.c_sq == 14721 and not s.detailed
    s = parse_step("decode[bs=117/128 tok=117 d=117]")
    assert s and s.phase == DECODE and s.requests == 117  # padded graph batch: the real count
    s = parse_step("decode[bs=32 tok=128 d=32 spec=3 sqsq=512 sqsk=262144 sk=65536]")
    assert s and s.detailed and (s.g_sq, s.g_sk, s.g_sqsk) == (128, 65536, 262144)
    for other in ("ProfilerStep#3", "aten::mm", "capture_32_DECODE", "step[IDLE bs=0]"):
        assert parse_step(other) is None
    assert parse_capture("capture_32_FULL") == (32, "FULL")


# -- FLOPs / bytes models, against hand-computed values --------------------------------------


def test_gemm_family_hand_computed() -> None:
    m = model_op("aten::mm", [[32, 4096], [4096, 24576]], [BF16, BF16], [])
    assert m and m.flops == 2 * 32 * 24576 * 4096 == 6_442_450_944
    assert m.bytes == (32 * 4096 + 4096 * 24576 + 32 * 24576) * 2 == 203_161_600
    m = model_op("aten::addmm", [[1024], [8944, 1024], [1024, 1024], [], []], [BF16] * 3 + ["Scalar"] * 2, [])
    assert m and m.flops == 2 * 8944 * 1024 * 1024 + 8944 * 1024  # bias add: one FLOP per output
    assert m.bytes == (8944 * 1024 + 1024 * 1024 + 8944 * 1024 + 1024) * 2
    m = model_op("aten::bmm", [[1, 32, 1], [1, 1, 559]], ["float", "float"], [])
    assert m and m.flops == 2 * 32 * 559 and m.bytes == (32 + 559 + 32 * 559) * 4
    m = model_op("aten::baddbmm", [[4, 8, 16], [4, 8, 32], [4, 32, 16], [], []], ["float"] * 3 + ["Scalar"] * 2, [])
    assert m and m.flops == 2 * 4 * 8 * 16 * 32 + 4 * 8 * 16
    m = model_op("aten::linear", [[2, 7, 64], [128, 64], [128]], [BF16] * 3, [])
    assert m and m.params["M"] == 14 and m.flops == 2 * 14 * 128 * 64 + 14 * 128
    assert m.bytes == (14 * 64 + 64 * 128 + 14 * 128 + 128) * 2
    m = model_op("aten::matmul", [[4, 32, 512], [512, 256]], ["float", "float"], [])
    assert m and m.flops == 2 * 128 * 256 * 512
    m = model_op(
        "aten::_scaled_mm",
        [[64, 256], [256, 512], [], [], [], [], []],
        ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", ""],
        [],
    )
    assert m and m.dtype == "fp8" and m.flops == 2 * 64 * 512 * 256
    assert m.bytes == 64 * 256 + 256 * 512 + 64 * 512 * 2  # fp8 in, bf16 out
    # a serving engine's own GEMM op: x [M, K], weight [N, K]
    m = model_op("aiter::gemm_a16w16", [[32, 4096], [24576, 4096], [], []], [BF16, BF16, "", "Scalar"], [])
    assert m and m.flops == 6_442_450_944 and m.bytes == 203_161_600


def test_attention_models_hand_computed() -> None:
    dims = [[16, 16, 559, 64]] * 3 + [[], [], [], []]
    types = [BF16] * 3 + ["Scalar"] * 4
    causal = model_op("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.", "True", "False", ""])
    assert causal and causal.flops == 4 * 16 * 16 * 559 * 559 * 64 / 2 == 10_239_377_408
    assert causal.bytes == 4 * 16 * 16 * 559 * 64 * 2
    full = model_op("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.", "False"])
    assert full and full.flops == 2 * causal.flops
    # decode with GQA: 1 query token against 300 keys, 32 query heads over 8 KV heads
    gqa = model_op(
        "aten::scaled_dot_product_attention",
        [[4, 32, 1, 128], [4, 8, 300, 128], [4, 8, 300, 128], [], [], [], [], []],
        [BF16] * 3 + ["", "Scalar", "Scalar", "", "Scalar"],
        ["", "", "", "", "0.", "False", "", "True"],
    )
    assert gqa and gqa.flops == 2 * 4 * 32 * 1 * 300 * (128 + 128)
    assert gqa.bytes == (4 * 32 * 128 + 2 * 4 * 8 * 300 * 128 + 4 * 32 * 128) * 2
    assert gqa.params["H_KV"] == 8
    # causal with fewer queries than keys (PyTorch's top-left mask): 8 queries see 1..8 keys
    c = model_op(
        "aten::scaled_dot_product_attention",
        [[1, 2, 8, 16], [1, 2, 20, 16], [1, 2, 20, 16]],
        [BF16] * 3,
        ["", "", "", "", "0.", "True"],
    )
    assert c and c.flops == 2 * 1 * 2 * (8 * 8 / 2) * 32
    # inference attention from the step annotation's sums (SGLang decode, Qwen3-8B)
    step = parse_step("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)")
    m = model_op(
        "sglang_profiler::attention_paged_attention_ragged",
        [[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128], [33]],
        [BF16, "unsigned char", BF16, BF16, BF16, "int"],
        [],
        step,
    )
    assert m and m.category == "InferenceAttention_fwd" and m.params["H_KV"] == 8
    assert m.flops == 2 * 32 * (128 + 128) * 32785 == 537_149_440
    assert m.bytes == ((32 * (32 * 128 * 2 + 8 * 128 * 2)) + (32785 - 32) * 8 * 128 * 2) * 2
    # prefill chunk: causal inside the chunk removes half of sq^2
    pre = parse_step("execute_100_context_1(sq100sk300sqsq10000sqsk30000)_generation_0(sq0sk0sqsq0sqsk0)")
    m = model_op("vllm::unified_attention_with_output", [[100, 8, 64], [100, 2, 64], [100, 2, 64]], [BF16] * 3, [], pre)
    assert m and m.flops == 2 * 8 * 128 * (30000 - 10000 / 2)
    # without a detailed annotation there is no model, not a made-up number
    m = model_op("vllm::unified_attention_with_output", [[100, 8, 64], [100, 2, 64]], [BF16] * 2, [], None)
    assert m is not None and m.flops != m.flops  # NaN


def test_vector_and_moe_models_hand_computed() -> None:
    m = model_op("aten::silu", [[4, 32, 512]], ["float"], [])
    assert m and m.category == "UnaryElementwise" and m.flops == 65536 and m.bytes == 2 * 65536 * 4
    m = model_op("aten::mul", [[16, 16, 559, 64], [1, 1, 559, 64]], [BF16, BF16], [])
    n = 16 * 16 * 559 * 64
    assert m and m.flops == n and m.bytes == (n + 559 * 64 + n) * 2
    m = model_op("aten::add", [[8, 64], [], []], [BF16, "Scalar", "Scalar"], [])
    assert m and m.category == "UnaryElementwise" and m.flops == 512
    m = model_op("aten::rms_norm", [[32, 4096], [], [4096], []], [BF16, "ScalarList", BF16, "Scalar"], [])
    assert m and m.category == "RMSNorm_fwd" and m.flops == 4 * 32 * 4096 and m.bytes == (2 * 32 * 4096 + 4096) * 2
    m = model_op("aiter::add_rmsnorm", [[32, 4096], [32, 4096], [32, 4096], [4096]], [BF16] * 4, [])
    assert m and m.flops == 5 * 32 * 4096 and m.bytes == (4 * 32 * 4096 + 4096) * 2
    m = model_op("aten::layer_norm", [[8, 768], [], [768], [768]], ["float", "", "float", "float"], [])
    assert m and m.category == "Normalization" and m.flops == 5 * 8 * 768 and m.bytes == (2 * 8 * 768 + 2 * 768) * 4
    m = model_op("aten::_softmax", [[2, 12, 128, 128], [], []], ["float", "Scalar", "Scalar"], [])
    assert m and m.flops == 5 * 2 * 12 * 128 * 128
    m = model_op("aten::sum", [[64, 1000], [], []], ["float", "", ""], [])
    assert m and m.category == "Reduce_fwd" and m.flops == 64000 and m.bytes == 256000
    m = model_op("aten::embedding", [[151936, 4096], [32]], [BF16, "long int"], [])
    assert m and m.flops == 0 and m.bytes == 2 * 32 * 4096 * 2 + 32 * 8
    m = model_op(
        "sgl_kernel::rotary_embedding",
        [[32], [32, 4096], [32, 1024], [], [40960, 128], []],
        ["long int", BF16, BF16, "Scalar", BF16, "Scalar"],
        [],
    )
    assert m and m.category == "RoPE_fwd" and m.flops == 3 * 32 * (4096 + 1024)
    assert m.bytes == 2 * 32 * (4096 + 1024) * 2 + 32 * 128 * 2 + 32 * 8
    m = model_op(
        "vllm::fused_experts",
        [[16, 1024], [8, 5632, 1024], [8, 1024, 2816], [16, 2], [16, 2]],
        [BF16, BF16, BF16, "float", "int"],
        [],
    )
    assert m and m.category == "MoE" and m.flops == 2 * 16 * 2 * 1024 * (5632 + 2816)
    assert m.bytes == (8 * 5632 * 1024 + 8 * 1024 * 2816) * 2 + 2 * 16 * 1024 * 2
    assert model_op("vllm::moe_forward", [[16, 1024], [16, 8]], [BF16, BF16], []) is None  # weights not recorded


# -- specs --------------------------------------------------------------------------------------------


def test_bundled_specs_and_detection(tmp_path: Path) -> None:
    specs = bundled()
    assert set(specs) == {"MI300X", "MI325X", "MI355X", "H100", "H200", "B200"}
    for s in specs.values():
        assert s.hbm_bandwidth_tbps > 0 and s.matrix_tflops["bf16"] > s.vector_tflops["fp32"] > 0
        assert s.extra["sources"], s.name
    assert specs["MI300X"].peak_tflops("matrix", "bf16") == (1307.4, "matrix_bf16")
    assert specs["MI355X"].peak_tflops("matrix", "fp4")[0] == 10066.4
    assert specs["H200"].hbm_bandwidth_tbps == 4.8 and specs["B200"].peak_tflops("matrix", "fp8")[0] == 4500.0
    assert specs["MI300X"].peak_tflops("vector", "bf16") == (163.4, "vector_fp32")
    assert detect_spec([{"name": "NVIDIA H100 80GB HBM3"}]).name == "H100"  # type: ignore[union-attr]
    assert detect_spec([{"name": "AMD Instinct MI300X VF"}]).name == "MI300X"  # type: ignore[union-attr]
    nameless = {"name": "", "computeMajor": 9, "computeMinor": 4, "warpSize": 64, "totalGlobalMem": 206141652992}
    assert detect_spec([nameless]).name == "MI300X"  # type: ignore[union-attr]
    assert detect_spec([{**nameless, "totalGlobalMem": 256 * 2**30}]).name == "MI325X"  # type: ignore[union-attr]
    assert detect_spec([{"computeMajor": 9, "warpSize": 32, "totalGlobalMem": 141 * 2**30}]).name == "H200"  # type: ignore[union-attr]
    assert detect_spec([]) is None
    assert load_spec("h200").name == "H200"
    user = tmp_path / "mine.json"
    user.write_text(json.dumps({"name": "lab", "hbm_bandwidth_tbps": 1.0, "matrix_tflops": {"bf16": 100}}))
    assert load_spec(str(user)).peak_tflops("matrix", "bf16") == (100.0, "matrix_bf16")
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x",\n "hbm_bandwidth_tbps": }')
    with pytest.raises(SpecError, match=r"bad.json: line 2"):
        load_spec(str(bad))
    missing = tmp_path / "missing.json"
    missing.write_text('{"name": "x"}')
    with pytest.raises(SpecError, match="hbm_bandwidth_tbps"):
        load_spec(str(missing))
    with pytest.raises(SpecError, match="unknown GPU spec"):
        load_spec("A100")


# -- real traces ------------------------------------------------------------------------------------


def _read(path: str | Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _norm(op: str) -> str:
    return re.sub(r"_\d+$", "", op)


def test_cpu_recorded_trace_stage_split_and_steady_state(tmp_path: Path) -> None:
    s = InferenceAnalyzer().analyze(CPU, {"spec": "H200"}, tmp_path)
    assert not s["errors"]
    t = s["traces"][0]
    assert t["phases"] == {PREFILL: 1, DECODE: 8} and t["phase_source"] == "annotation"
    dec = t["stages"][DECODE]
    # the last 3 decode steps ran with half the batch: the steady state is the 5 steps at 4 requests
    assert dec["window_iterations"] == [1, 2, 3, 4, 5] and "peak of 4 requests" in dec["window_choice"]
    rows = _read(dec["roofline_csv"])
    assert rows and list(rows[0]) == ROOFLINE_COLUMNS and len(ROOFLINE_COLUMNS) == 21
    sdpa = [r for r in rows if r["source_category"] == "SDPA_fwd"]
    assert sdpa
    for r in sdpa:  # decode: 1 query token against the cache, GQA 8 query heads over 2 KV heads
        p = json.loads(r["params_json"])
        assert p["N_Q"] == 1 and p["H_Q"] == 8 and p["H_KV"] == 2 and not p["causal"]
        flops = 2 * p["B"] * p["H_Q"] * p["N_KV"] * (p["d_h_qk"] + p["d_h_v"])
        assert float(r["gflops"]) == pytest.approx(flops / 1e9, abs=1e-6)
    pre = _read(t["stages"][PREFILL]["roofline_csv"])
    causal = [json.loads(r["params_json"]) for r in pre if r["source_category"] == "SDPA_fwd"]
    assert causal and all(p["causal"] and p["N_Q"] == p["N_KV"] == 32 for p in causal)
    kernels = _read(t["stages"][PREFILL]["kernels_csv"])
    assert kernels and sum(float(k["Total (us)"]) for k in kernels) == pytest.approx(
        t["stages"][PREFILL]["kernel_time_us"], rel=1e-6
    )
    iters = _read(t["iterations_csv"])
    assert [r["in_window"] for r in iters] == ["True"] * 6 + ["False"] * 3
    assert all(float(r["gpu_busy_us"]) <= float(r["gpu_span_us"]) + 1e-6 for r in iters)


def test_phases_inferred_without_annotations(tmp_path: Path) -> None:
    with gzip.open(CPU, "rt") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("execute_")]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(data))
    t = InferenceAnalyzer().analyze(path, {"stages": "all"}, tmp_path / "o")["traces"][0]
    assert t["phase_source"] == "inferred" and t["phases"] == {PREFILL: 1, DECODE: 8}
    assert any("repeating top-level op" in n for n in t["notes"])
    assert t["spec"] is None  # a CPU trace names no GPU: no roofline columns unless --spec


def test_graph_replays_without_capture_are_one_graph_group(tmp_path: Path) -> None:
    t = InferenceAnalyzer().analyze(VLLM, {}, tmp_path)["traces"][0]
    assert t["graph"]["kernels"] == 421 and t["graph"]["mapped"] == 0
    rows = _read(t["stages"][DECODE]["roofline_csv"])
    graph = [r for r in rows if r["source_category"] == "graph"]
    assert len(graph) == 1 and graph[0]["has_perf_model"] == "False"
    assert float(graph[0]["time_pct"]) > 90
    assert t["spec"]["name"] == "MI300X" and "without a name" in t["spec"]["chosen_by"]


def test_stage_filter_and_label_suffix(tmp_path: Path) -> None:
    s = InferenceAnalyzer().analyze(CPU, {"stages": "decode", "label_suffix": "_ISL32_OSL8_CONC4"}, tmp_path)
    assert list(s["traces"][0]["stages"]) == [DECODE]
    assert (tmp_path / "decode_only_ISL32_OSL8_CONC4_kernel_roofline_simple.csv").is_file()
    assert not list(tmp_path.glob("prefill_only*"))
    with pytest.raises(ValueError, match="stages must be one of"):
        InferenceAnalyzer().analyze(CPU, {"stages": "both"}, tmp_path)


# -- cross-check with TraceLens's published tables -------------------------------------------------


def _types(text: str) -> list[str]:
    import ast

    return list(ast.literal_eval(text))


def _crosscheck(ours: list[dict[str, str]], ref_rows: list[dict[str, str]]) -> int:
    """Every TraceLens row we model the same op for: FLOPs and bytes within 1%, kernel time within 0.1%."""
    by_key = {(_norm(r["op_name"]), r["input_dims"].replace(" ", "")): r for r in ours}
    matched = 0
    for ref in ref_rows:
        if float(ref["GFLOPS_first"] or 0) == 0:  # TraceLens files copy/cache ops here too; only matrix ops count
            continue
        dims = ref["Input Dims_first"].replace(" ", "")
        mine = by_key.get((_norm(ref["name"]), dims))
        if mine is None:
            # an outer op whose kernels we attribute to the op inside it (aiter::gemm_a16w16 -> aten::mm):
            # its model must still give TraceLens's numbers from the same recorded inputs
            m = model_op(ref["name"], json.loads(ref["Input Dims_first"]), _types(ref["Input type_first"]), [])
            assert m is not None, ref["name"]
            assert m.flops / 1e9 == pytest.approx(float(ref["GFLOPS_first"]), rel=0.01), ref["name"]
            assert m.bytes / 2**20 == pytest.approx(float(ref["Data Moved (MB)_first"]), rel=0.01), ref["name"]
            continue
        matched += 1
        calls = float(ref["name_count"])
        assert float(mine["gflops"]) == pytest.approx(float(ref["GFLOPS_first"]), rel=0.01), ref["name"]
        assert float(mine["data_moved_mb"]) == pytest.approx(float(ref["Data Moved (MB)_first"]), rel=0.01)
        if int(mine["operation_count"]) == calls:
            ms = float(mine["kernel_time_ms_sum"]) * 1000
            assert ms == pytest.approx(float(ref["Kernel Time (µs)_sum"]), rel=0.001), ref["name"]
    return matched


@pytest.mark.parametrize(
    ("trace", "ref", "attention", "captures"),
    [
        (SGLANG, "sglang_decode", "InferenceAttention_fwd", "sglang_decode"),
        (VLLM, "vllm_decode_full", "InferenceAttention_fwd", "vllm_decode_full"),
        (H100, "h100_qwen", "SDPA_fwd", None),
    ],
    ids=["sglang", "vllm", "h100"],
)
def test_crosscheck_with_tracelens(tmp_path: Path, trace: Path, ref: str, attention: str, captures: str | None) -> None:
    opts = {"capture_traces": str(DATA / "capture_traces" / captures)} if captures else {}
    s = InferenceAnalyzer().analyze(trace, opts, tmp_path)
    assert not s["errors"], s["errors"]
    t = s["traces"][0]
    (stage,) = t["stages"].values()
    ours = _read(stage["roofline_csv"])
    gemm = _crosscheck(ours, _read(REF / ref / "GEMM.csv"))
    attn = _crosscheck(ours, _read(REF / ref / f"{attention}.csv"))
    assert gemm >= 1 and attn >= 1
    if captures:
        assert t["graph"]["mapped"] == t["graph"]["kernels"] > 0
    # every kernel is in this one stage: the total equals TraceLens's sum over its op table, except that
    # TraceLens drops kernels whose launch call the profiler did not record (509 of them in the H100 trace)
    total = sum(float(r["Kernel Time (µs)_sum"] or 0) for r in _read(REF / ref / "unified_perf_summary.csv"))
    linked = stage["kernel_time_us"] - stage["kernel_time_without_launch_record_us"]
    assert linked == pytest.approx(total, rel=0.001)
    assert t["kernels_outside_iterations"] == (8 if ref == "h100_qwen" else 0)


GPU_TRACE = DATA / "traces_gpu" / "llama_h200.json.gz"


def test_gpu_recorded_trace_h200(tmp_path: Path) -> None:
    """A trace recorded on the lent H200 by benchmarks/record_inference_trace.py (defaults: batch 8,
    prompt 128, 16 decode steps, the last 3 at half the batch, bf16, 4 layers, hidden 512, GQA 8/2).
    Kept outside tests/data/traces/ so gap-analysis tests do not read it as a rank."""
    s = InferenceAnalyzer().analyze(GPU_TRACE, {}, tmp_path)
    assert not s["errors"]
    t = s["traces"][0]
    assert t["phases"] == {PREFILL: 1, DECODE: 16} and t["phase_source"] == "annotation"
    assert t["spec"]["name"] == "H200" and "deviceProperties" in t["spec"]["chosen_by"]
    dec = t["stages"][DECODE]
    assert dec["window_iterations"] == list(range(1, 14)) and "peak of 8 requests" in dec["window_choice"]
    rows = _read(dec["roofline_csv"])
    gemms = [
        json.loads(r["params_json"]) | {"gflops": float(r["gflops"])} for r in rows if r["source_category"] == "GEMM"
    ]
    assert gemms
    for g in gemms:  # decode GEMMs: M = batch 8, bf16, 2*M*N*K
        assert g["M"] == 8 and g["dtype_A_B"] == ["bf16", "bf16"]
        assert g["gflops"] == pytest.approx(2 * g["B"] * g["M"] * g["N"] * g["K"] / 1e9, rel=1e-9)
    assert all(r["compute_spec"].startswith(("matrix_", "vector_")) for r in rows if r["has_perf_model"] == "True")


@pytest.mark.parametrize("source", [SGLANG, H100], ids=["sglang", "h100"])
def test_parallel_byte_range_decode_gives_the_same_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path
) -> None:
    """A large plain-JSON trace is decoded in byte ranges by several processes (real forked workers here,
    the size threshold lowered): same events, same tables as one process. Byte ranges are the msgspec path's
    (with the compiled reader one process reads the file), so the reader is switched off here."""
    import magpie_trace.columns as core_columns
    from magpie_inference_analysis import events
    from magpie_trace import native

    monkeypatch.setenv(native.ENV, "0")

    plain = tmp_path / "trace.json"
    with gzip.open(source, "rb") as f:
        plain.write_bytes(f.read())
    monkeypatch.setattr(core_columns, "SPLIT_MIN_BYTES", 0)
    one, two = events.load(plain, workers=1), events.load(plain, workers=2)
    assert two.num_events == one.num_events > len(one.events) > 0
    assert msgspec.json.encode(two.events) == msgspec.json.encode(one.events)
    assert two.device_properties == one.device_properties and two.rocm == one.rocm
    assert one.cpu_columns is not None and two.cpu_columns is not None
    for a, b in zip(one.cpu_columns, two.cpu_columns, strict=True):
        assert a.tolist() == b.tolist()
    assert one.cpu_columns[0].tolist() == [e.ts for e in one.cpu_ops]
    assert two.cpu_op_names == one.cpu_op_names == {e.name for e in one.cpu_ops}
    a = InferenceAnalyzer().analyze(plain, {"workers": 1}, tmp_path / "w1")["traces"][0]
    b = InferenceAnalyzer().analyze(plain, {"workers": 2}, tmp_path / "w2")["traces"][0]
    for stage, s in a["stages"].items():
        assert Path(s["roofline_csv"]).read_text() == Path(b["stages"][stage]["roofline_csv"]).read_text()
