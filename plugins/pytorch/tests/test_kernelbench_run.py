"""``magpie kernelbench run`` for real: inline C++ extensions built per solution, report.html, problems on GPUs.

The inline solutions use ``load_inline`` with ``cpp_sources`` only: a real build (g++, ninja, torch's headers)
that runs on CPU and takes the same path as KernelBench's CUDA solutions (``cuda_sources`` add nvcc).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "kernelbench"


def _problem_set(root: Path, problems: dict[str, list[Path]]) -> tuple[Path, Path]:
    """``root/problems/<name>.py`` (the ReLU reference) and ``root/solutions/<name>/`` with the given files."""
    for name, files in problems.items():
        (root / "problems").mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / "relu_reference.py", root / "problems" / f"{name}.py")
        (root / "solutions" / name).mkdir(parents=True)
        for file in files:
            shutil.copy(file, root / "solutions" / name / file.name)
    return root / "problems", root / "solutions"


def _rows(results: Path) -> dict[str, dict]:
    return {Path(r["solution"]).stem: r for r in map(json.loads, results.read_text().splitlines())}


@pytest.mark.slow
def test_inline_extensions_build_once_per_solution_and_a_broken_build_is_a_compile_failure(
    run_magpie, tmp_path: Path
) -> None:
    """Two real builds (about half a minute of CPU each: torch's headers), side by side, both named relu."""
    inline = DATA / "inline"
    problems, solutions = _problem_set(
        tmp_path, {"relu": [inline / "relu_inline.py", inline / "relu_inline_broken.py"]}
    )
    shared = tmp_path / "shared_extensions"  # where torch would put every build named relu, were it left alone
    out, results = tmp_path / "out", tmp_path / "r.jsonl"
    argv = ["kernelbench", "run", str(problems), "--solutions", str(solutions), "--results", str(results)]
    done = run_magpie(
        [*argv, "-o", str(out), "--no-perf", "--build-jobs", "2"], env={"TORCH_EXTENSIONS_DIR": str(shared)}
    )
    assert done.returncode == 1, done.stderr  # a solution did not compile
    rows = _rows(results)
    good, broken = rows["relu_inline"], rows["relu_inline_broken"]
    assert (good["compiled"], good["correct"]) == (True, True), good["message"]
    # KernelBench's compiled: false, with the compiler's first error (the generated source, not the folder)
    assert (broken["compiled"], broken["correct"]) == (False, False)
    assert "relu/main.cpp" in broken["message"] and "zero_value" in broken["message"], broken["message"]
    assert str(out) not in broken["message"]
    # build time is its own field, apart from the run time
    assert good["build_s"] > 0 and broken["build_s"] > 0 and good["runtime_us"] is None  # --no-perf
    # both built first, side by side, each extension named relu in its own solution's folder of the run's cache
    # (none in the shared one), once: the check's worker found it built
    assert "inline extensions of 2 solution(s): 2 built (2 at a time" in done.stderr and "1 failed" in done.stderr
    (built,) = (out / "torch_extensions").glob("relu_inline-*/torch_extensions/relu")
    assert [p.name for p in built.glob("*.so")] == ["relu.so"]
    (broken_dir,) = (out / "torch_extensions").glob("relu_inline_broken-*/torch_extensions/relu")
    assert (broken_dir / "main.cpp").is_file()
    assert not shared.exists()
    report = (out / "report.html").read_text()
    assert "fast_p per problem" in report and "relu_inline_broken.py" in report
    # a second run (new results file, same output folder) builds nothing: both outcomes come from the cache
    library = (built / "relu.so").stat().st_mtime_ns
    again = run_magpie([*argv[:-1], str(tmp_path / "again.jsonl"), "-o", str(out), "--no-perf"])
    assert again.returncode == 1, again.stderr
    assert "inline extensions of 2 solution(s): 0 built" in again.stderr and "1 failed" in again.stderr
    assert (built / "relu.so").stat().st_mtime_ns == library
    rows_again = _rows(tmp_path / "again.jsonl")
    assert rows_again["relu_inline"]["build_s"] == good["build_s"] and rows_again["relu_inline"]["correct"]
    assert rows_again["relu_inline_broken"]["message"] == broken["message"]


@pytest.mark.slow
def test_a_problem_runs_while_later_problems_build(run_magpie, tmp_path: Path) -> None:
    """Issue 45: builds ran first, all of them, and the GPU waited. Now problem ``relu_a`` (plain PyTorch) is checked
    while ``relu_b``'s solution builds: that build ends only once ``relu_a``'s row is written."""
    inline = DATA / "inline"
    problems, solutions = _problem_set(
        tmp_path, {"relu_a": [DATA / "relu_clamp.py"], "relu_b": [inline / "relu_inline_after_a.py"]}
    )
    out, results = tmp_path / "out", tmp_path / "r.jsonl"
    argv = ["kernelbench", "run", str(problems), "--solutions", str(solutions), "--results", str(results)]
    done = run_magpie([*argv, "-o", str(out), "--no-perf"], env={"MAGPIE_TEST_RESULTS": str(results)})
    assert done.returncode == 0, done.stderr
    assert (solutions / "relu_b" / "waited_for_a.txt").read_text() == "seen"
    assert [r["problem"] for r in map(json.loads, results.read_text().splitlines())] == ["relu_a", "relu_b"]
    assert all(r["correct"] for r in _rows(results).values())
    assert "inline extensions of 1 solution(s): 1 built" in done.stderr and "problems waited" in done.stderr


def test_problems_are_spread_over_local_gpus_one_problem_per_gpu(run_magpie, tmp_path: Path) -> None:
    problems, solutions = _problem_set(
        tmp_path, {"relu_a": [DATA / "relu_clamp.py"], "relu_b": [DATA / "relu_wrong.py"]}
    )
    results = tmp_path / "r.jsonl"
    argv = ["kernelbench", "run", str(problems), "--solutions", str(solutions), "--results", str(results)]
    done = run_magpie([*argv, "-o", str(tmp_path / "out"), "--no-perf", "--gpus", "2", "--json"])
    assert done.returncode == 1, done.stderr  # relu_wrong: documented exit status 1
    rows = _rows(results)
    assert sorted(r["devices"] for r in rows.values()) == ["0", "1"]  # both problems at once, each on its own GPU
    assert (rows["relu_clamp"]["correct"], rows["relu_wrong"]["correct"]) == (True, False)
    summary = json.loads(done.stdout)
    saved = json.loads((tmp_path / "out" / "kernelbench_summary.json").read_text())
    assert saved["mode"] == "kernelbench" and saved["fast_p"] == summary["fast_p"] and len(saved["rows"]) == 2
    assert summary["fast_p"]["fast_0"] == 0.5 and summary["per_problem"]["relu_a"]["fast_p"]["fast_0"] == 1.0
    # every kernel of a problem ran with only its GPU visible
    for workspace in (tmp_path / "out").glob("compare_*"):
        # a compare's kernels run in session workers (timing_task.json), checks and all (--no-perf too)
        tasks = [
            json.loads(t.read_text()) for t in [*workspace.glob("*/task.json"), *workspace.glob("*/timing_task.json")]
        ]
        assert len({t["kernel"]["env"]["CUDA_VISIBLE_DEVICES"] for t in tasks}) == 1
    # --format csv: the rows (every field of the results file) and nothing else, as on every command
    again = run_magpie([*argv, "-o", str(tmp_path / "out"), "--no-perf", "--format", "csv"])
    lines = again.stdout.splitlines()
    assert again.returncode == 1 and len(lines) == 3 and lines[0].startswith("problem,solution,compiled,correct")


def test_the_tolerance_preset_is_chosen_on_the_command_line(run_magpie, tmp_path: Path) -> None:
    problems, solutions = _problem_set(tmp_path, {"relu": [DATA / "relu_off_1e3.py"]})
    correct = {}
    for preset in ("kernelbench", "kernelbench-v0"):
        results = tmp_path / f"{preset}.jsonl"
        argv = ["kernelbench", "run", str(problems), "--solutions", str(solutions), "--results", str(results)]
        done = run_magpie([*argv, "-o", str(tmp_path / preset), "--no-perf", "--tolerance", preset])
        correct[preset] = _rows(results)["relu_off_1e3"]["correct"]
        assert done.returncode == (0 if correct[preset] else 1), done.stderr
    assert correct == {"kernelbench": False, "kernelbench-v0": True}
    bad = run_magpie(["kernelbench", "run", str(problems), "--solutions", str(solutions), "--tolerance", "1e-3"])
    assert bad.returncode == 2 and "--tolerance" in bad.stderr


def test_a_correct_solution_without_a_time_says_why_and_launch_bound_kernels_are_flagged() -> None:
    """A row read from a compare report: correct but unranked (its timing failed) names the reason; a kernel whose
    host needs longer per launch than its device carries the timer's launch-bound note (KernelBench's per-call
    times include the launches, magpie's device times do not)."""
    from magpie_kernels_pytorch.kernelbench_run import row

    launch_note = "launch-bound: the host needs 140.0 us per launch, the device 20.3 us; device time is reported"

    def result(kernel_id: str, notes: list[str]) -> dict:
        return {
            "kernel_id": kernel_id,
            "compile": {"status": "passed", "duration_s": 57.0},
            "correctness": {"status": "passed", "message": "5 input sets matched"},
            "performance": {"status": "passed", "notes": notes},
        }

    report = {
        "baseline_id": "reference",
        "results": {"kernel_results": [result("reference", [launch_note]), result("a", []), result("b", [])]},
        "ranking": [
            {"kernel_id": "reference", "median_us": 20.3, "speedup": 1.0, "verdict": "BASELINE"},
            {"kernel_id": "a", "median_us": 16.9, "speedup": 1.2, "speedup_ci95": [1.18, 1.25], "verdict": "FASTER"},
        ],
        "unranked": [{"index": 2, "kernel_id": "b", "reason": "performance failed: illegal memory access"}],
    }
    timed, untimed = row("p", Path("a.py"), "a", report), row("p", Path("b.py"), "b", report)
    assert (timed["speedup"], timed["launch_bound"], timed["message"]) == (1.2, None, "5 input sets matched")
    assert untimed["correct"] and untimed["speedup"] is None and untimed["build_s"] == 57.0
    assert untimed["message"] == "5 input sets matched; not timed: performance failed: illegal memory access"
    reference = row("p", Path("r.py"), "reference", report)
    assert reference["launch_bound"] == launch_note
    # KernelBench's clock beside magpie's: its single synchronized calls (launches included) point the other way
    report["results"]["kernel_results"][0]["performance"]["per_call_us"] = 150.0  # launch-bound reference
    report["results"]["kernel_results"][1]["performance"]["per_call_us"] = 200.0  # a: more launches per call
    clocks = row("p", Path("a.py"), "a", report)
    assert clocks["kb_speedup"] == 0.75 and clocks["speedup"] == 1.2 and clocks["clocks_disagree"]


def test_a_build_outcome_is_kept_unless_the_build_was_stopped(tmp_path: Path) -> None:
    """The cache keeps what a build answered about the file (a failure too), never a build cut short."""
    from magpie_kernels_pytorch.extensions import RECORD, build_cached, cached_folder

    failing, hanging, cache = tmp_path / "failing.py", tmp_path / "hanging.py", tmp_path / "cache"
    failing.write_text("# uses torch.utils.cpp_extension\nraise RuntimeError('no compiler here')\n")
    hanging.write_text("# uses torch.utils.cpp_extension\nimport time\n\ntime.sleep(60)\n")
    first = build_cached(failing, cache, {}, timeout=120)
    assert first.status.value == "failed" and "no compiler here" in (first.message or "")
    again = build_cached(failing, cache, {}, timeout=120)  # answered from the record, no process started
    assert again.resources.get("cached") and again.message == first.message
    stopped = build_cached(hanging, cache, {}, timeout=1)
    assert stopped.status.value == "failed" and stopped.resources.get("stopped")
    assert not (cached_folder(hanging, cache, {}).parent / RECORD).exists()  # tried again next time
    # built with every GPU visible, found by a compare pinned to one (kernelbench run --gpus); other env counts
    assert cached_folder(failing, cache, {"CUDA_VISIBLE_DEVICES": "3"}) == cached_folder(failing, cache, {})
    assert cached_folder(failing, cache, {"CXXFLAGS": "-O0"}) != cached_folder(failing, cache, {})


def test_a_rerun_reuses_only_rows_whose_files_and_settings_are_unchanged(run_magpie, tmp_path: Path) -> None:
    """Issue 45: an edited solution was skipped by path and the old fast_p printed. Rows are content-addressed:
    the solution's and the reference's bytes and the run's settings."""
    problems, solutions = _problem_set(tmp_path, {"relu": [DATA / "relu_clamp.py", DATA / "relu_wrong.py"]})
    results = tmp_path / "r.jsonl"
    argv = ["kernelbench", "run", str(problems), "--solutions", str(solutions), "--results", str(results)]
    argv += ["-o", str(tmp_path / "out"), "--no-perf", "--no-html"]
    first = run_magpie(argv)
    assert first.returncode == 1, first.stderr  # relu_wrong is wrong
    assert "relu_clamp.py" in first.stdout and "fast_0 0.50" in first.stdout, first.stdout  # the table, fast_p
    assert "report:" in first.stdout
    wrong = solutions / "relu" / "relu_wrong.py"
    wrong.write_text((DATA / "relu_clamp.py").read_text())  # fixed since
    second = run_magpie([*argv, "--json"])
    assert second.returncode == 0, second.stderr
    rows = {Path(r["solution"]).name: r for r in json.loads(second.stdout)["rows"]}
    assert rows["relu_wrong.py"]["correct"] and not rows["relu_wrong.py"]["reused"]  # run again
    assert rows["relu_clamp.py"]["reused"]  # unchanged: reused
    third = run_magpie([*argv, "--json", "--trials", "3"])  # other settings: nothing reused
    assert not any(r["reused"] for r in json.loads(third.stdout)["rows"])
