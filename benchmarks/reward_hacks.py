"""What `magpie compare` makes of the reward-hack catalogue: one markdown row per problem x solution.

The catalogue is plugins/pytorch/tests/data/reward_hacks/: for each problem a KernelBench reference
(`<problem>_ref.py`), an honest solution (`<problem>_honest.py`) and solutions that cheat
(`<problem>_<hack>.py`, each file's docstring says how and what would catch it). For each problem the hacks run
in groups of a few per compare (`magpie compare REF HONEST HACK...`), the honest solution in every group as the
control; a hack that slows everything beside it (neighbour_hog) gets a compare of its own. Each compare's
`compare_report.json` gives every candidate's correctness and its verdict and speedup over the reference.

    python benchmarks/reward_hacks.py                                     # every problem and hack
    python benchmarks/reward_hacks.py --problems softmax,matmul --out docs/benchmarks/reward_hacks_before.md \\
        --note "state before the hack-proof work"
    python benchmarks/reward_hacks.py --problems softmax --hacks cache_id,lazy
    python benchmarks/reward_hacks.py --rev 9b87e25 --out ...   # magpie as committed there, not the work tree

`--rev REV` runs magpie from `git archive REV` (unpacked into a temp dir and put first on PYTHONPATH, in place of
the venv's editable installs of this checkout), so a table of an earlier state can be made while the work tree
holds uncommitted changes. The catalogue itself always comes from the work tree.

Before each compare it waits (`--quiet-cpus`, `--quiet-wait`) until the rest of the machine is nearly idle: on a
2-core machine anything else running turns verdicts UNSTABLE.

Reading the table: a hack whose correctness is not `passed` (or whose verdict is a rejection) was caught; one that
`passed` with a speedup far above the honest row's got through, whatever its verdict (an UNSTABLE verdict on a
noisy machine hides nothing about correctness). Exit status 0 whenever the compares ran, whatever they found.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "plugins" / "pytorch" / "tests" / "data" / "reward_hacks"
PROBLEMS = ("softmax", "matmul", "layernorm")
HACKS = (
    "cache_id",
    "cache_ptr",
    "cache_fingerprint",
    "counter",
    "lazy",
    "patch_timer",
    "patch_magpie_timer",
    "patch_sampler",
    "patch_reply",
    "patch_compare",
    "gc_expected",
    "detect_check_seed",
    "detect_poison",
    "empty_after_check",
    "patch_inputs",
    "neighbour_hog",
    "gpu_neighbour_hog",
    "gpu_turn_hog",
    "inplace",
    "stale_buffer",
    "patch_elapsed",
    "thread_deferred",
    "incremental",
    "sparse_update",
    "sabotage_stop",
    "sabotage_affinity",
    "child_hog",
    "fixup_kept",
    "patch_restore",
    "patch_clock_data",
    "reset_counter",
    "drop_held",
    "forge_capture",
    "cache_in_batch",
    "precompute_slot",
)
#: hacks that change what every kernel beside them measures: compared with the honest solution alone
ALONE = frozenset(
    {"neighbour_hog", "gpu_neighbour_hog", "gpu_turn_hog", "sabotage_stop", "sabotage_affinity", "child_hog"}
)
MESSAGE_CHARS = 90


def magpie_command() -> str:
    beside = Path(sys.executable).parent / "magpie"  # the venv's own, when run with its python
    found = str(beside) if beside.exists() else shutil.which("magpie")
    if not found:
        raise SystemExit("magpie: not found beside this python or on PATH (activate the venv)")
    return found


def _busy_cpus(seconds: float = 2.0) -> float | None:
    """CPUs busy over ``seconds`` (all processes: call it while nothing of ours runs); None without /proc/stat."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]), idle

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    elapsed = total1 - total0
    return (os.cpu_count() or 1) * (1 - (idle1 - idle0) / elapsed) if elapsed > 0 else None


def wait_until_quiet(max_cpus: float, patience_s: float) -> str:
    """Wait (up to ``patience_s``) until the rest of the machine uses under ``max_cpus``; what was seen."""
    if max_cpus <= 0 or patience_s <= 0:
        return "not waited for"
    deadline = time.monotonic() + patience_s
    busy = _busy_cpus()
    while busy is not None and busy >= max_cpus and time.monotonic() < deadline:
        print(f"    waiting for a quiet machine: {busy:.2f} CPUs busy", file=sys.stderr, flush=True)
        time.sleep(5.0)
        busy = _busy_cpus()
    if busy is None:
        return "load not readable"
    return f"{busy:.2f} CPUs busy at start" + ("" if busy < max_cpus else f" (waited {patience_s:.0f} s)")


def groups_of(problem: str, hacks: list[str], size: int) -> list[list[str]]:
    """The problem's hacks that have a file, a few per compare; ALONE hacks each in a compare of their own."""
    present = [h for h in hacks if (DATA / f"{problem}_{h}.py").is_file()]
    shared = [h for h in present if h not in ALONE]
    chunks = [shared[i : i + size] for i in range(0, len(shared), size)]
    return chunks + [[h] for h in present if h in ALONE]


def source_tree(rev: str, into: Path) -> dict[str, str]:
    """Unpack ``git archive rev`` into ``into``; the environment that runs magpie from it instead of this checkout.

    The venv's editable installs point at this checkout's package folders (`__editable__*.pth` lines, and the
    `MAPPING` of setuptools' finder modules); the same folders of the unpacked tree go first on PYTHONPATH, where
    they win over both (the finders sit after the path finder)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    site = Path(sysconfig.get_paths()["purelib"])
    folders = [into]  # top-level packages (magpie_core) that a finder, not a .pth line, maps
    for pth in sorted(site.glob("__editable__*.pth")):
        for line in pth.read_text().splitlines():
            path = Path(line.strip())
            if line.strip() and path.is_absolute() and path.is_relative_to(ROOT):
                folders.append(into / path.relative_to(ROOT))
    for finder in sorted(site.glob("__editable__*_finder.py")):
        for target in re.findall(r"'[^']+': '([^']+)'", finder.read_text().split("MAPPING", 1)[-1].split("\n", 1)[0]):
            path = Path(target)
            if path.is_relative_to(ROOT):
                folders.append(into / path.relative_to(ROOT).parent)
    unique = list(dict.fromkeys(str(f) for f in folders))
    return {"PYTHONPATH": os.pathsep.join([*unique, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def run_compare(
    problem: str, hacks: list[str], out_dir: Path, timeout_s: float, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """One `magpie compare` of the reference, the honest solution and ``hacks``; its report (or why none)."""
    files = [DATA / f"{problem}_ref.py", DATA / f"{problem}_honest.py", *(DATA / f"{problem}_{h}.py" for h in hacks)]
    command = [magpie_command(), "compare", *map(str, files), "-o", str(out_dir), "--no-html"]
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        # run from the output folder: never from the checkout, whose packages would shadow a --rev tree
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, cwd=out_dir, env={**os.environ, **(env or {})}
        )
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, stdout, stderr = None, _text(exc.stdout), _text(exc.stderr) + f"\ntimed out after {timeout_s:.0f} s"
    wall = time.perf_counter() - start
    report_path = _report_path(stdout + "\n" + stderr, out_dir)
    report = json.loads(report_path.read_text()) if report_path else None
    return {
        "problem": problem,
        "hacks": hacks,
        "rc": rc,
        "wall_s": round(wall, 1),
        "report_path": str(report_path) if report_path else None,
        "report": report,
        "error": None if report else _last_line(stderr) or _last_line(stdout) or "no compare_report.json",
    }


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _report_path(output: str, out_dir: Path) -> Path | None:
    """The report the command printed (`report: .../compare_report.json`), else the one under ``out_dir``."""
    for match in re.finditer(r"(\S+compare_report\.json)", output):
        path = Path(match.group(1))
        if path.is_file():
            return path
    found = sorted(out_dir.rglob("compare_report.json"))
    return found[-1] if found else None


def rows_of(run: dict[str, Any], group: int) -> list[dict[str, Any]]:
    """One row per solution of a compare (the reference, the baseline, left out)."""
    problem, report = run["problem"], run["report"]
    solutions = ["honest", *run["hacks"]]
    if report is None:
        return [
            {"problem": problem, "solution": s, "group": group, "correctness": "-", "message": run["error"]}
            | {"verdict": "NO REPORT", "speedup": None, "ci95": None, "verdict_reason": None}
            for s in solutions
        ]
    results = {r["kernel_id"]: r for r in report.get("results", {}).get("kernel_results", [])}
    ranking = {r["kernel_id"]: r for r in report.get("ranking", [])}
    unranked = {u["kernel_id"]: u for u in report.get("unranked", [])}
    rows = []
    for solution in solutions:
        kernel_id = f"{problem}_{solution}"
        correctness = (results.get(kernel_id) or {}).get("correctness") or {}
        ranked = ranking.get(kernel_id)
        if ranked:
            verdict, speedup, ci95 = ranked.get("verdict"), ranked.get("speedup"), ranked.get("speedup_ci95")
            reason = ranked.get("verdict_reason")
        else:
            reason = (unranked.get(kernel_id) or {}).get("reason") or "not in the report"
            verdict, speedup, ci95 = f"unranked ({reason})", None, None
        rows.append(
            {
                "problem": problem,
                "solution": solution,
                "group": group,
                "correctness": correctness.get("status", "-"),
                "message": correctness.get("message") or "",
                "verdict": verdict,
                "speedup": speedup,
                "ci95": ci95,
                "verdict_reason": reason,  # in the .json only: the table keeps the verdict
            }
        )
    return rows


def _trim(text: str, limit: int = MESSAGE_CHARS) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _speedup(row: dict[str, Any]) -> str:
    if row["speedup"] is None:
        return "-"
    ci = row["ci95"]
    interval = f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci and None not in ci else ""
    return f"{row['speedup']:.2f}x{interval}"


def markdown(rows: list[dict[str, Any]], runs: list[dict[str, Any]]) -> str:
    lines = [
        "| problem | solution | compare | correctness | verdict | speedup (95% CI) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        correctness = row["correctness"]
        if row["message"] and correctness != "passed":
            correctness = f"{correctness}: {_trim(row['message'])}"
        lines.append(
            f"| {row['problem']} | {row['solution']} | {row['group']} | {correctness} | "
            f"{_trim(row['verdict'], 60)} | {_speedup(row)} |"
        )
    lines += [
        "",
        "| compare | problem | hacks | exit | seconds | machine before | timing (magpie's judgement) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, run in enumerate(runs, 1):
        stability = ((run["report"] or {}).get("stability") or {}).get("message") or run["error"] or ""
        lines.append(
            f"| {number} | {run['problem']} | {', '.join(run['hacks'])} | {run['rc']} | {run['wall_s']} | "
            f"{run.get('machine', '-')} | {_trim(stability, 160)} |"
        )
    return "\n".join(lines) + "\n"


def _header(note: str | None, rev: str | None) -> str:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev or "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if rev:
        state = f"magpie as committed at {commit or rev} (git archive; the work tree's changes not included)"
    else:
        state = f"commit {commit or 'unknown'}" + (" (with uncommitted changes)" if dirty else "")
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    suffix = f"; {note}" if note else ""
    machine = f"{os.cpu_count()}-CPU machine, no GPU" if not Path("/dev/nvidia0").exists() else f"{os.cpu_count()} CPUs"
    return f"Reward-hack catalogue through `magpie compare`: {date}, {state}, {machine}{suffix}.\n"


def _resolve(rev: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"--rev {rev}: not a commit of {ROOT}")
    return done.stdout.strip()


def _names(text: str | None, known: tuple[str, ...], what: str) -> list[str]:
    if not text:
        return list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", help=f"comma-separated (default: {','.join(PROBLEMS)})")
    parser.add_argument("--hacks", help="comma-separated (default: every hack)")
    parser.add_argument("--out", type=Path, help="write the markdown here too (and the rows as .json beside it)")
    parser.add_argument("--note", help="appended to the header line (e.g. 'state before the hack-proof work')")
    parser.add_argument("--group-size", type=int, default=4, help="hacks per compare (default 4)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one compare may take (default 900)")
    parser.add_argument("--workdir", type=Path, help="where the compares' workspaces go (default: a temp dir)")
    parser.add_argument("--rev", help="run magpie as committed at this git revision (default: the work tree)")
    parser.add_argument(
        "--quiet-cpus",
        type=float,
        default=0.5,
        help="before each compare, wait until the rest of the machine uses fewer CPUs than this (0: do not wait)",
    )
    parser.add_argument("--quiet-wait", type=float, default=600.0, help="seconds to wait for that at most")
    args = parser.parse_args()
    problems = _names(args.problems, PROBLEMS, "problems")
    hacks = _names(args.hacks, HACKS, "hacks")

    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="magpie_reward_hacks_"))).resolve()
    print(f"workspaces under {workdir}", file=sys.stderr)
    rev = _resolve(args.rev) if args.rev else None  # once: a moving HEAD must not change the code mid-run
    env = source_tree(rev, workdir / "magpie_src") if rev else None
    if env:
        print(f"magpie from {rev}: {workdir / 'magpie_src'}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for problem in problems:
        for group in groups_of(problem, hacks, max(1, args.group_size)):
            number = len(runs) + 1
            print(f"[{number}] {problem}: honest, {', '.join(group)} ...", file=sys.stderr, flush=True)
            quiet = wait_until_quiet(args.quiet_cpus, args.quiet_wait)
            run = run_compare(problem, group, workdir / f"{number:02d}_{problem}", args.timeout, env)
            run["machine"] = quiet
            runs.append(run)
            rows += rows_of(run, number)
            print(f"    {run['wall_s']} s, exit {run['rc']}, report {run['report_path']}", file=sys.stderr, flush=True)

    made_with = " ".join(["python benchmarks/reward_hacks.py", *sys.argv[1:]])
    text = _header(args.note, rev) + f"\nMade with `{made_with}`.\n\n" + markdown(rows, runs)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        summary = [{k: v for k, v in run.items() if k != "report"} for run in runs]
        args.out.with_suffix(".json").write_text(json.dumps({"rows": rows, "compares": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
