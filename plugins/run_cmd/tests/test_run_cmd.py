"""``framework: xdit`` + ``run_cmd``: a real command (a Python script standing in for xDiT) runs through the
real CLI; its ``timings.json`` becomes the report's metrics. Nothing is mocked: the script is the workload
(xDiT itself needs a GPU), and it honours xDiT's contract (``--output_directory``, ``--profile``,
``timings.json``, ``profile_trace_rank_<N>.json.gz``)."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from magpie_run_cmd.plugin import CommandError, build_argv
from magpie_run_cmd.timings import ResultError, Shape, metrics, read_timings, shape_of

from tests.conftest import DATA

TRACE = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"

#: the workload: writes timings.json (or a profile trace with --profile), as xDiT does; its behaviour is
#: chosen by environment variables so one script covers every case
WORKLOAD = r"""
import json, os, shutil, sys, time
argv = sys.argv[1:]
out = argv[argv.index("--output_directory") + 1]
print("workload argv:", json.dumps(argv), flush=True)
with open(os.path.join(out, "pid"), "w") as fh:
    fh.write(str(os.getpid()))
if os.environ.get("WORKLOAD_SLEEP"):
    time.sleep(float(os.environ["WORKLOAD_SLEEP"]))
if "--profile" in argv:
    shutil.copy(os.environ["WORKLOAD_TRACE"], os.path.join(out, "profile_trace_rank_0.json.gz"))
elif os.environ.get("WORKLOAD_RESULT") != "none":
    with open(os.path.join(out, "timings.json"), "w") as fh:
        fh.write(os.environ.get("WORKLOAD_RESULT") or json.dumps([0.5, 0.25, 0.25, 1.0]))
print("secret env seen:", "HF_TOKEN" in os.environ, flush=True)
sys.exit(int(os.environ.get("WORKLOAD_EXIT", "0")))
"""


def _config(tmp_path: Path, *, envs: dict[str, str] | None = None, extra: str = "", **block: object) -> Path:
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    bench = {
        "framework": "xdit",
        "run_cmd": f"{sys.executable} {script} --batch_size 2 --num_inference_steps 20 "
        f"--output_directory /elsewhere --profile{extra}",
        "envs": {"WORKLOAD_TRACE": str(TRACE), **(envs or {})},
        "profiler": {"torch_profiler": {"enabled": False}},
        **block,
    }
    path = tmp_path / "xdit.yaml"
    path.write_text(yaml.safe_dump({"benchmark": bench}))
    return path


def _report(out: Path) -> dict:
    (report,) = out.glob("*/benchmark_report.json")
    return json.loads(report.read_text())


def test_argv_is_magpies_contract(tmp_path: Path) -> None:
    argv = build_argv(
        "xdit-run --model M --output-directory=/x --profile --output_directory /y --prompt 'a cat'",
        "--use_fbcache --seed 3",
        tmp_path,
        profile=True,
    )
    assert argv == [
        "xdit-run",
        "--model",
        "M",
        "--prompt",
        "a cat",
        "--use_fbcache",
        "--seed",
        "3",
        "--output_directory",
        str(tmp_path),
        "--profile",
    ]
    with pytest.raises(CommandError, match=r"benchmark\.run_cmd: No closing quotation"):
        build_argv("run 'open", "", tmp_path, profile=False)
    # EXTRA_XDIT_ARGS is split as AMD Magpie's scripts split an unquoted $VAR: on whitespace, quotes kept
    assert build_argv("run", "--x 'open", tmp_path, profile=False)[:3] == ["run", "--x", "'open"]
    with pytest.raises(CommandError, match="empty"):
        build_argv("  ", "", tmp_path, profile=False)


def test_metrics_are_magpies_definitions() -> None:
    timings = [0.5, 0.25, 0.25, 1.0]
    raw = metrics(timings, Shape(batch_size=2, num_inference_steps=20))
    mean = 0.5
    assert raw["mean_iteration_s"] == mean and raw["median_iteration_s"] == 0.375
    assert raw["p99_iteration_s"] == 1.0 and raw["std_iteration_s"] == pytest.approx(statistics.pstdev(timings))
    assert raw["images_per_sec"] == 2 / mean and raw["latency_per_image_s"] == mean / 2
    assert raw["steps_per_sec"] == 20 / mean
    assert shape_of(["x", "--batch-size=4", "--num_inference_steps", "8"]) == Shape(4, 8)
    with pytest.raises(ResultError, match="--batch_size 'two' is not an integer"):
        shape_of(["x", "--batch_size", "two"])


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (None, "timings.json: not found"),
        ("[0.1, 0.2", "timings.json: line 1, column 10: not JSON"),
        ('{"timings": [0.1]}', "expected a JSON list of per-iteration seconds, found a dict"),
        ("[]", "the list is empty"),
        ('[0.1, "fast", 0.2]', "timings.json: [1]: 'fast' is not a positive number of seconds"),
        ("[0.1, -2]", "[1]: -2 is not a positive"),
    ],
)
def test_bad_result_files_name_file_and_entry(tmp_path: Path, content: str | None, named: str) -> None:
    path = tmp_path / "timings.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultError) as info:
        read_timings(path)
    assert named in str(info.value) and str(path) in str(info.value)


def test_run_cmd_metrics_reach_the_report(tmp_path: Path, run_magpie) -> None:
    config = _config(tmp_path, envs={"HF_TOKEN": "hf_dontshow"}, extra=" --hf-token hf_visible_in_ps")
    done = run_magpie(["benchmark", "-b", str(config), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 iteration(s) of batch 2, 4.000 images/s" in done.stdout
    report = _report(tmp_path / "out")
    assert report["success"] and report["framework"] == "xdit" and not report["errors"]
    raw = report["raw_result"]
    assert raw["timings_s"] == [0.5, 0.25, 0.25, 1.0] and raw["images_per_sec"] == 4.0 and raw["steps_per_sec"] == 40.0
    assert report["throughput"]["output_throughput"] == 4.0 and report["throughput"]["completed_requests"] == 8
    assert report["latency"]["e2el"]["median_ms"] == 375.0
    run = report["offline"]["measurement"]
    ws = Path(report["workspace_dir"])
    assert run["exit_code"] == 0 and run["result_file"] == str(ws / "timings.json")
    # magpie owns the output directory and profiling: the command's own values were dropped
    assert run["command"].count("--output_directory") == 1 and "/elsewhere" not in run["command"]
    assert "--profile" not in run["command"]
    # the secret flag's value is hidden in the report and the log; the secret env var reached the command
    assert "hf_visible_in_ps" not in json.dumps(report) and run["command"][-3:-2] == ["***"]
    log = (ws / "run_cmd.log").read_text()
    assert "workload argv:" in log and "secret env seen: True" in log
    assert log.splitlines()[0].startswith("$ ") and "hf_visible_in_ps" not in log.splitlines()[0]
    assert "hf_dontshow" not in (ws / "config.yaml").read_text()


def test_failing_command_keeps_its_numbers_and_fails_the_run(tmp_path: Path, run_magpie) -> None:
    config = _config(tmp_path, envs={"WORKLOAD_EXIT": "3"})
    done = run_magpie(["benchmark", "-b", str(config), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 1
    report = _report(tmp_path / "out")
    assert not report["success"] and report["raw_result"]["iterations"] == 4  # measured, not lost
    assert any("run_cmd exited with status 3" in e and "run_cmd.log" in e for e in report["errors"])
    assert "exited with status 3" in done.stdout


@pytest.mark.parametrize(
    ("result", "named"),
    [("none", "timings.json: not found"), ("[0.2, null]", "timings.json: [1]: None is not a positive number")],
)
def test_missing_or_malformed_result_is_named(tmp_path: Path, run_magpie, result: str, named: str) -> None:
    config = _config(tmp_path, envs={"WORKLOAD_RESULT": result})
    done = run_magpie(["benchmark", "-b", str(config), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 1
    report = _report(tmp_path / "out")
    assert not report["success"] and report["raw_result"] is None
    (error,) = report["errors"]
    assert named in error and str(Path(report["workspace_dir"]) / "timings.json") in error
    assert named in done.stdout


def test_profiled_run_traces_are_analyzed_apart_from_the_measurement(tmp_path: Path, run_magpie) -> None:
    config = _config(tmp_path, profiler={"torch_profiler": {"enabled": True}}, gap_analysis={"enabled": True})
    done = run_magpie(["benchmark", "-b", str(config), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(tmp_path / "out")
    ws = Path(report["workspace_dir"])
    assert report["raw_result"]["images_per_sec"] == 4.0  # the measurement ran without --profile
    diag = report["diagnostic"]
    assert diag["command"][-1] == "--profile" and diag["traces"] == [str(ws / "torch_trace" / "rank_0.trace.json.gz")]
    assert (ws / "run_cmd_profile.log").is_file() and not (ws / "diagnostic" / "timings.json").exists()
    top = report["gap_analysis"]["top_kernels"]
    assert any("gemm" in k["name"] for k in top)  # the H100 trace's kernels, analyzed by the gap plugin


def test_a_command_that_cannot_start_is_named(tmp_path: Path, run_magpie) -> None:
    path = tmp_path / "missing.yaml"
    path.write_text(
        yaml.safe_dump(
            {"benchmark": {"framework": "xdit", "run_cmd": "/nonexistent/xdit-run --x 1", "run_kind": "measurement"}}
        )
    )
    done = run_magpie(["benchmark", "-b", str(path), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 1
    started, result = _report(tmp_path / "out")["errors"]
    assert "exited with status 127" in started and "cannot start '/nonexistent/xdit-run'" in started
    assert "timings.json: not found" in result


def test_timeout_stops_the_command_group(tmp_path: Path, run_magpie) -> None:
    config = _config(tmp_path, envs={"WORKLOAD_SLEEP": "120"}, timeout_seconds=2)
    started = time.monotonic()
    done = run_magpie(["benchmark", "-b", str(config), "-o", str(tmp_path / "out"), "--no-html"], timeout=120)
    assert done.returncode == 1 and time.monotonic() - started < 100
    report = _report(tmp_path / "out")
    assert any("timed out after" in e and "benchmark.timeout_seconds" in e for e in report["errors"])
    pid = int((Path(report["workspace_dir"]) / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_ctrl_c_stops_the_command_and_writes_the_report(tmp_path: Path) -> None:
    config = _config(tmp_path, envs={"WORKLOAD_SLEEP": "120"})
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "magpie_core", "benchmark", "-b", str(config), "-o", str(out), "--no-html"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(out.glob("*/pid")) and time.monotonic() < deadline:
        time.sleep(0.2)
    (pid_file,) = out.glob("*/pid")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    report = _report(out)
    assert report["interrupted"] and not report["success"]
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_an_unclosed_quote_in_run_cmd_is_bad_input(tmp_path: Path, run_magpie) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"benchmark": {"framework": "xdit", "run_cmd": "python 'x.py"}}))
    done = run_magpie(["benchmark", "-b", str(path), "-o", str(tmp_path / "out"), "--no-html"])
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr and "run_cmd" in done.stderr and "No closing quotation" in done.stderr
    assert not (tmp_path / "out").exists()
