"""``magpie targeted-trace adapt-torch / postprocess`` on real PyTorch profiler traces (tests/data/traces),
checked against an independent plain-JSON decode of the same files; tampered and bad inputs."""

from __future__ import annotations

import fnmatch
import gzip
import itertools
import json
from pathlib import Path

import pytest
import yaml
from magpie_targeted_trace.contract import SCHEMA_NAME, ZERO_CHECKSUM, sha256_json

from tests.conftest import DATA

H100 = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300 = DATA / "traces" / "mi300" / "google_owlv2-large-patch14-ensemble__1016001.json.gz"
TARGETS = [
    {"target_id": "cublas.gemm", "name_patterns": ["*gemm*"], "package": "cublas"},
    {"id": "torch.copy", "names": "*direct_copy_kernel*"},  # AMD Magpie's short spellings
]


def _kernels(path: Path) -> list[dict]:
    """The device kernels of a trace, by a plain json decode (the reference the adapter must match)."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]


def _target_config(tmp_path: Path, **block: object) -> Path:
    path = tmp_path / "targets.yaml"
    path.write_text(yaml.safe_dump({"targeted_trace": {"run_seed": "seed-1", "targets": TARGETS, **block}}))
    return path


def _adapt(run_magpie, tmp_path: Path, out: Path, *extra: str, **block: object):
    args = [
        "targeted-trace",
        "adapt-torch",
        "--target-config",
        str(_target_config(tmp_path, **block)),
        "--output-dir",
        str(out),
        "--run-id",
        "diag-001",
        "--framework",
        "vllm",
        *extra,
    ]
    return run_magpie(args)


def _lines(shard: Path) -> list[dict]:
    return [json.loads(line) for line in shard.read_text().splitlines()]


def test_adapt_keeps_every_matching_kernel_with_its_evidence(tmp_path: Path, run_magpie) -> None:
    out = tmp_path / "tt"
    done = _adapt(run_magpie, tmp_path, out, "--trace", str(H100), "--framework-version", "0.11")
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)
    assert manifest == json.loads((out / "manifest.json").read_text())
    kernels = _kernels(H100)
    gemm = [k for k in kernels if fnmatch.fnmatchcase(k["name"], "*gemm*")]
    copy = [k for k in kernels if fnmatch.fnmatchcase(k["name"], "*direct_copy_kernel*")]
    assert len(gemm) > 200 and len(copy) > 50
    assert manifest["schema_name"] == SCHEMA_NAME and manifest["pass_kind"] == "diagnostic"
    assert manifest["reward_eligible"] is False and manifest["provenance"]["input_traces"] == [str(H100)]
    assert manifest["coverage"] == {
        "seen": len(gemm) + len(copy),
        "sampled": len(gemm) + len(copy),
        "written": len(gemm) + len(copy),
        "dropped": 0,
        "dropped_by_reason": {},
    }
    pids = sorted({k["pid"] for k in gemm + copy})
    assert [r["path"] for r in manifest["shards"]] == [str(out / "shards" / f"trace_pid{p}_rank0.jsonl") for p in pids]
    lines = [line for r in manifest["shards"] for line in _lines(Path(r["path"]))]
    events = [line["payload"] for line in lines if line["record_type"] == "event"]
    by_corr = {k["args"]["correlation"]: k for k in gemm}
    some = next(e for e in events if e["identity"]["target_id"] == "cublas.gemm")
    source = by_corr[int(some["runtime"]["correlation_id"])]
    assert some["runtime"]["gpu_symbol"] == source["name"] and some["runtime"]["grid"] == source["args"]["grid"]
    assert some["runtime"]["block"] == source["args"]["block"] and some["runtime"]["duration_us"] == source["dur"]
    assert some["runtime"]["stream"] == str(source["args"]["stream"]) and some["identity"]["package"] == "cublas"
    assert some["context"] == {
        "framework": "vllm",
        "framework_version": "0.11",
        "rank": 0,
        "pid": source["pid"],
        "stage": "unknown",
        "execution_mode": "unknown",
        "graph_id": None,
        "world_size": None,
    }
    assert "torch_profiler_missing_launch_source" in some["warnings"]
    # the envelope chain: sequence 0.., each checksum over the line, each line pointing at the one before
    first = _lines(Path(manifest["shards"][0]["path"]))
    assert first[0]["record_type"] == "header" and first[0]["previous_checksum"] == ZERO_CHECKSUM
    assert first[-1]["record_type"] == "end" and [e["sequence"] for e in first] == list(range(len(first)))
    for before, line in itertools.pairwise(first):
        assert line["previous_checksum"] == before["checksum"]
        assert line["checksum"] == sha256_json({k: v for k, v in line.items() if k != "checksum"})


def test_postprocess_summarizes_a_valid_folder(tmp_path: Path, run_magpie) -> None:
    out = tmp_path / "tt"
    assert _adapt(run_magpie, tmp_path, out, "--trace-dir", str(H100.parent)).returncode == 0
    done = run_magpie(["targeted-trace", "postprocess", "--trace-dir", str(out), "-o", str(out / "summary.json")])
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary == json.loads((out / "summary.json").read_text()) and summary["valid"] and not summary["issues"]
    kernels = _kernels(H100)
    gemm = [k for k in kernels if fnmatch.fnmatchcase(k["name"], "*gemm*")]
    copy = [k for k in kernels if fnmatch.fnmatchcase(k["name"], "*direct_copy_kernel*")]
    assert summary["events"]["by_target"] == {"cublas.gemm": len(gemm), "torch.copy": len(copy)}
    assert summary["events"]["by_rank"] == {"0": len(gemm) + len(copy)}
    runtime = summary["runtime_by_target"]["cublas.gemm"]
    assert runtime["total_us"] == pytest.approx(sum(k["dur"] for k in gemm))
    assert runtime["max_us"] == max(k["dur"] for k in gemm)
    quality = summary["evidence_quality"]
    n = len(gemm) + len(copy)
    # kernel events carry no source, shapes or stage: named as missing for every record, never made up
    assert quality["missing_by_field"] == {"phase": n, "source": n, "grid": 0, "shape": n, "correlation": 0}
    assert quality["resolution_status"] == "unresolved" and quality["join_eligible_records"] == n
    assert quality["lossless_record_coverage"] and quality["record_coverage_fraction"] == 1.0


def test_sampling_is_deterministic_and_accounted(tmp_path: Path, run_magpie) -> None:
    keys = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert _adapt(run_magpie, tmp_path, out, "--trace", str(MI300), sample_rate=0.5).returncode == 0
        manifest = json.loads((out / "manifest.json").read_text())
        cov = manifest["coverage"]
        assert cov["seen"] == cov["written"] + cov["dropped"] and 0 < cov["written"] < cov["seen"]
        assert cov["dropped_by_reason"] == {"sampling": cov["dropped"]}
        keys.append(
            sorted(
                e["payload"]["stable_event_key"]
                for r in manifest["shards"]
                for e in _lines(Path(r["path"]))
                if e["record_type"] == "event"
            )
        )
    assert keys[0] == keys[1]  # the same events kept in every rerun


def test_record_budget_drops_are_counted(tmp_path: Path, run_magpie) -> None:
    out = tmp_path / "tt"
    assert _adapt(run_magpie, tmp_path, out, "--trace", str(H100), max_records_per_shard=10).returncode == 0
    done = run_magpie(["targeted-trace", "postprocess", "--trace-dir", str(out)])
    summary = json.loads(done.stdout)
    assert done.returncode == 0 and summary["coverage"]["written"] == 10 * len(summary["shards"])
    assert summary["coverage"]["dropped_by_reason"]["cap"] == summary["coverage"]["dropped"] > 0
    assert "dropped:cap" in summary["evidence_quality"]["unresolved_reasons"]


def test_tampered_shards_are_found_with_file_and_line(tmp_path: Path, run_magpie) -> None:
    out = tmp_path / "tt"
    assert _adapt(run_magpie, tmp_path, out, "--trace", str(H100)).returncode == 0
    shard = next((out / "shards").glob("*.jsonl"))
    lines = shard.read_text().splitlines(keepends=True)
    edited = json.loads(lines[3])
    edited["payload"]["runtime"]["duration_us"] = 0.001  # a faster kernel than was measured
    lines[3] = json.dumps(edited) + "\n"
    shard.write_text("".join(lines[:-1]))  # and the end sentinel cut off
    done = run_magpie(["targeted-trace", "postprocess", "--trace-dir", str(out), "--strict"])
    assert done.returncode == 1
    summary = json.loads(done.stdout)
    assert not summary["valid"]
    assert f"{shard}: line 4: checksum does not match the envelope (the line was edited)" in summary["issues"]
    assert f"{shard}: missing end sentinel: the shard is truncated" in summary["issues"]
    assert any("receipt file_sha256 mismatch" in i for i in summary["issues"])
    # the edited line, and the receipt's chain checksum (AMD Magpie files both under "checksum")
    assert summary["integrity_failures_by_reason"]["checksum"] == 2 and "line 4" in done.stderr


def test_bad_target_config_is_named(tmp_path: Path, run_magpie) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text("targeted_trace:\n  sample_rate: 2\n  targets:\n    - target_id: x\n")
    done = run_magpie(
        [
            "targeted-trace",
            "adapt-torch",
            "--target-config",
            str(path),
            "--trace",
            str(H100),
            "-o",
            str(tmp_path / "tt"),
            "--run-id",
            "r",
            "--framework",
            "f",
        ]
    )
    assert done.returncode == 2
    assert "targets.yaml" in done.stderr and "sample_rate" in done.stderr and "name_patterns" in done.stderr
    assert not (tmp_path / "tt").exists()


def test_unreadable_trace_is_named_and_the_rest_is_kept(tmp_path: Path, run_magpie) -> None:
    broken = tmp_path / "traces" / "rank1.pt.trace.json.gz"
    broken.parent.mkdir()
    broken.write_bytes(H100.read_bytes()[:5000])  # a truncated gzip
    (tmp_path / "traces" / "rank0.pt.trace.json.gz").write_bytes(H100.read_bytes())
    out = tmp_path / "tt"
    done = _adapt(run_magpie, tmp_path, out, "--trace-dir", str(broken.parent))
    assert done.returncode == 2 and str(broken) in done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["coverage"]["written"] > 0 and str(broken) in manifest["provenance"]["adapter_warnings"][0]
    post = run_magpie(["targeted-trace", "postprocess", "--trace-dir", str(out)])
    assert post.returncode == 1 and json.loads(post.stdout)["integrity_failures_by_reason"] == {"acquisition": 1}


@pytest.mark.parametrize("case", ["no traces", "output not new", "not a targeted folder"])
def test_unusable_input_exits_2_naming_it(tmp_path: Path, run_magpie, case: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    if case == "no traces":
        done = _adapt(run_magpie, tmp_path, tmp_path / "tt", "--trace-dir", str(empty))
        assert "no PyTorch profiler trace files" in done.stderr and str(empty) in done.stderr
    elif case == "output not new":
        (empty / "keep.txt").write_text("x")
        done = _adapt(run_magpie, tmp_path, empty, "--trace", str(H100))
        assert f"{empty}: not empty" in done.stderr
    else:
        done = run_magpie(["targeted-trace", "postprocess", "--trace-dir", str(empty)])
        assert f"{empty}: not a targeted-trace folder" in done.stderr
    assert done.returncode == 2


def test_without_the_plugin_the_command_names_its_distribution(tmp_path: Path, run_magpie) -> None:
    done = run_magpie(["targeted-trace", "postprocess", "--trace-dir", str(tmp_path)], env={"MAGPIE_PLUGINS": "local"})
    assert done.returncode == 2 and "comes from the plugin distribution magpie-targeted-trace" in done.stderr
