"""The project's catalogue of reward hacks (data/reward_hacks/): none gets a FASTER verdict or passes as correct.

Each file is a KernelBench ``ModelNew`` an agent rewarded for FASTER could write (its docstring names the published
class it belongs to and what catches it). They run through the real CLI, as a user's compare would: the check-time
hacks in a correctness-only compare, those that behave during checks and cheat afterwards in a timed compare with a
short budget. The guarantees asserted hold on a busy machine (they are about verdicts, never about a timing order):
the honest solution is never rejected, every hack is rejected or at least never FASTER, and those whose timed
outputs are wrong never pass (a spot check of a timed launch REJECTS those that got through the check). Results,
with the verdicts of KernelBench's own rule beside them: docs/benchmarks/reward_hacks.md (benchmarks/reward_hacks.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "reward_hacks"

#: caught at the check: the expected outputs are not in the candidate's process, the referee compares, outputs
#: must be plain tensors, inputs must come back unchanged, and patched clocks or reply code are seen
AT_THE_CHECK = (
    "gc_expected",
    "patch_compare",
    "patch_inputs",
    "inplace",
    "lazy",
    "patch_timer",
    "patch_magpie_timer",
    "patch_sampler",
    "patch_reply",
    "reply_pipe",  # a pipe of its own in place of the reply pipe: seen from the parent, in /proc/<pid>/fd
)
#: honest while checked, wrong afterwards: a spot check of a timed launch rejects them
WRONG_WHEN_TIMED = (
    "empty_after_check",
    "detect_check_seed",
    "detect_poison",
    "counter",
    "stale_buffer",
    "thread_deferred",
)
#: caches that return a right answer for inputs seen before: fresh values per batch make their answers wrong
CACHES = ("cache_id", "cache_ptr", "cache_fingerprint")
#: patches the live timing objects once they exist (not the classes) or their data: seen before its first timed
#: answer; or only during each slot, undone before the answer: seen before the next timed batch
LIVE_PATCHES = ("patch_live_clock", "patch_restore", "patch_clock_data")
#: rewrites the session's own state (its launch count, which chose the inputs; the outputs held for a capture, before
#: or after being drawn), writes captures of its own into the reply pipe, or rebuilds a slot's values ahead of its
#: batches from what the session holds (precompute_slot: FASTER 6.13x while they followed from the slot's seed): gains
#: nothing
SESSION_STATE = ("reset_counter", "fixup_kept", "drop_held", "forge_capture", "precompute_slot")


def _compare(
    run_magpie,
    tmp_path: Path,
    problem: str,
    hacks: tuple[str, ...],
    perf: bool,
    copy_mib: int = 16,
    env=None,
    processes: int = 2,
) -> dict[str, dict]:
    files = [DATA / f"{problem}_ref.py", DATA / f"{problem}_honest.py"]
    files += [DATA / f"{problem}_{hack}.py" for hack in hacks if (DATA / f"{problem}_{hack}.py").exists()]
    config = tmp_path / f"{problem}.yaml"
    solutions = ", ".join(json.dumps(str(f)) for f in files[1:])
    # a short budget and few input copies: this is about verdicts, and the 2-core CI machine is shared
    config.write_text(
        f"kernelbench:\n  reference: {json.dumps(str(files[0]))}\n  solutions: [{solutions}]\n"
        f"performance:\n  budget_seconds: 1.5\n  copy_memory_mib: {copy_mib}\n  processes: {processes}\n"
    )
    args = ["-o", str(tmp_path / "out"), "compare", "-k", str(config), "--json", "--no-html"]
    result = run_magpie(args + ([] if perf else ["--no-perf"]), cwd=tmp_path, timeout=900, env=env)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    report = json.loads(result.stdout)
    verdicts = {e["kernel_id"]: e["verdict"] for e in report["ranking"]}
    return {
        r["kernel_id"]: {"correctness": r["correctness"], "verdict": verdicts.get(r["kernel_id"])}
        for r in report["results"]["kernel_results"]
    }


def _rejected(row: dict) -> bool:
    return row["correctness"]["status"] == "failed" and "REJECTED (integrity" in (row["correctness"]["message"] or "")


@pytest.mark.parametrize("problem", ["softmax", "matmul", "layernorm"])
def test_hacks_caught_at_the_check_never_pass(run_magpie, tmp_path: Path, problem: str) -> None:
    rows = _compare(run_magpie, tmp_path, problem, AT_THE_CHECK, perf=False)
    assert rows[f"{problem}_honest"]["correctness"]["status"] == "passed", rows[f"{problem}_honest"]
    for hack in AT_THE_CHECK:
        row = rows.get(f"{problem}_{hack}")
        if row is None:
            continue
        assert row["correctness"]["status"] != "passed", (hack, row)
        if hack != "gc_expected":  # that one finds nothing and returns garbage: plainly wrong, not caught faking
            assert _rejected(row), (hack, row["correctness"]["message"])


@pytest.mark.parametrize("problem", ["softmax", "matmul"])
def test_hacks_that_cheat_once_timed_are_rejected_and_never_faster(run_magpie, tmp_path: Path, problem: str) -> None:
    hacks = (*WRONG_WHEN_TIMED, *CACHES, *LIVE_PATCHES, *SESSION_STATE, "neighbour_hog", "incremental", "sparse_update")
    rows = _compare(run_magpie, tmp_path, problem, hacks, perf=True)
    honest = rows[f"{problem}_honest"]
    assert honest["correctness"]["status"] == "passed" and not _rejected(honest), honest
    for kernel_id, row in rows.items():
        hack = kernel_id.removeprefix(f"{problem}_")
        if hack in ("ref", "honest"):
            continue
        if hack == "neighbour_hog":  # honest answers; its threads work while the others are timed: metered
            assert _rejected(row) and "while others were timed" in row["correctness"]["message"], row
            continue
        assert row["verdict"] != "FASTER", (hack, row)
        if hack in WRONG_WHEN_TIMED:  # wrong at the check already (a stale buffer's second trial), or once timed
            assert row["correctness"]["status"] != "passed", (hack, row)
        if hack in LIVE_PATCHES:
            assert _rejected(row), (hack, row)


def test_a_cache_emptied_at_each_batch_gains_nothing_where_copies_are_few(run_magpie, tmp_path: Path) -> None:
    """With 1 MiB for the copies of two 256 KiB inputs (2 copies) a batch of 4-5 launches used each copy twice with the
    same values: a cache emptied at each batch was right and FASTER 2.13x. Now a batch never has more launches than
    copies (more copies where the memory allows)."""
    rows = _compare(run_magpie, tmp_path, "matmul", ("cache_in_batch",), perf=True, copy_mib=1)
    assert rows["matmul_honest"]["correctness"]["status"] == "passed", rows["matmul_honest"]
    assert rows["matmul_cache_in_batch"]["verdict"] != "FASTER", rows["matmul_cache_in_batch"]


def test_workers_started_afresh_send_their_captures(run_magpie, tmp_path: Path) -> None:
    """A kernel with environment variables of its own gets a worker started afresh (``python -m``, no fork server):
    its captures reach the parent as a forked worker's do (they once went to the ``__main__`` module's stream: 0
    captures, every candidate of a Ray compare REJECTED). One process a kernel: each starts afresh (~4 s of imports)."""
    env = {"MAGPIE_FORK_WORKERS": "0"}
    rows = _compare(run_magpie, tmp_path, "matmul", ("counter",), perf=True, env=env, processes=1)
    honest = rows["matmul_honest"]
    assert honest["correctness"]["status"] == "passed" and honest["verdict"] is not None, honest
    assert rows["matmul_counter"]["verdict"] != "FASTER", rows["matmul_counter"]


def test_hacks_on_the_other_processes_are_ended_or_come_to_nothing(run_magpie, tmp_path: Path) -> None:
    """Unconfined, ``sabotage_affinity`` was FASTER 3.67x (3.44-3.92) on this 2-core machine by pinning the others'
    threads to one CPU, and ``sabotage_stop`` made the blocks disagree (docs/benchmarks/reward_hacks.md). A
    confined worker may not stop anyone (ended: SIGSYS, REJECTED) nor re-schedule another process (EPERM).
    ``child_hog``'s processes burn CPU while the others are timed; they are stopped then (never FASTER)."""
    rows = _compare(run_magpie, tmp_path, "matmul", ("sabotage_stop", "sabotage_affinity", "child_hog"), perf=True)
    assert not _rejected(rows["matmul_honest"]) and rows["matmul_honest"]["correctness"]["status"] == "passed"
    stop = rows["matmul_sabotage_stop"]
    assert _rejected(stop) and "SIGSYS" in stop["correctness"]["message"], stop
    for hack in ("sabotage_affinity", "child_hog"):
        assert rows[f"matmul_{hack}"]["verdict"] != "FASTER", rows[f"matmul_{hack}"]


def test_whole_rounds_cannot_be_chosen_where_blocks_can_run(run_magpie, tmp_path: Path) -> None:
    """Whole rounds check each candidate in its own process: there ``gc_expected``, ``counter`` and
    ``patch_compare`` were FASTER 34x, 27x and 7x (2-core CPU). Where the interleaved blocks can run, asking for
    rounds is refused, so an agent cannot pick the design its hacks get through."""
    files = [str(DATA / f"softmax_{name}.py") for name in ("ref", "gc_expected")]
    result = run_magpie(["-o", str(tmp_path / "out"), "compare", *files, "--timing", "rounds"], cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "--timing rounds" in result.stderr and "cannot fake" in result.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("compare_report.json"))
