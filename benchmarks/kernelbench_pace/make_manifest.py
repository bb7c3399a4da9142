"""Pick the pace set from the KernelBench v0 leaderboard and write manifest.json (deterministic).

    python benchmarks/kernelbench_pace/make_manifest.py \\
        --git-dir LEADERBOARD_GIT_DIR --kernelbench-git-dir KERNELBENCH_GIT_DIR [--max 500]

Without --git-dir / --kernelbench-git-dir the files are read from GitHub at the pinned commits.

Selection: every solution that the leaderboard's docs/assets/data.json lists for a level 1 or level 2 problem
(data.json has no correctness field: the leaderboard lists only solutions KernelBench v0 judged correct), whose
source uses `load_inline` (inline CUDA) and defines `class ModelNew`, and whose problem's KernelBench file (at the
pinned commit) defines `class Model` and `def get_inputs`; sorted by (level, problem number, leaderboard file),
the first --max kept. Solutions that fail a check are listed under "excluded" with the reason.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEADERBOARD_REPO = "https://github.com/anneouyang/KernelBenchLeaderboard"
LEADERBOARD_COMMIT = "170ca7965f53bba599d1078b6fcaa5dd2658ec50"
KERNELBENCH_REPO = "https://github.com/ScalingIntelligence/KernelBench"
KERNELBENCH_COMMIT = "91bfc2cd4598d5824aa89e29e64969eb69432caa"
DATA_JSON = "docs/assets/data.json"
LEVELS = (1, 2)
_KEY = re.compile(r"^Level (\d+): ((\d+)_.+)$")


def read(git_dir: Path | None, repo: str, commit: str, path: str) -> bytes:
    """One file at `commit`: from a local clone/mirror when given, else from GitHub."""
    if git_dir is not None:
        return subprocess.run(
            ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, check=True
        ).stdout
    owner_name = repo.removeprefix("https://github.com/")
    with urllib.request.urlopen(f"https://raw.githubusercontent.com/{owner_name}/{commit}/{path}", timeout=30) as r:
        return r.read()


def model_slug(display_name: str) -> str:
    """claude-3.5-sonnet -> claude_3_5_sonnet (the naming of benchmarks/kernelbench_leaderboard/solutions)."""
    return re.sub(r"[^0-9A-Za-z]+", "_", display_name).strip("_")


def _defines(source: str, pattern: str) -> bool:
    return re.search(pattern, source, flags=re.MULTILINE) is not None


def problem_problems(source: str) -> list[str]:
    """Why a file is not a KernelBench reference (empty: it is one)."""
    why = []
    if not _defines(source, r"^class Model\b"):
        why.append("no `class Model`")
    if not _defines(source, r"^def get_inputs\b"):
        why.append("no `def get_inputs`")
    return why


def solution_problems(source: str) -> list[str]:
    """Why a file is not an inline-CUDA KernelBench solution (empty: it is one)."""
    why = []
    if not _defines(source, r"^class ModelNew\b"):
        why.append("no `class ModelNew`")
    if "load_inline" not in source:
        why.append("no `load_inline` (not inline CUDA)")
    try:
        ast.parse(source)
    except SyntaxError as e:
        why.append(f"not valid Python ({e.msg}, line {e.lineno})")
    return why


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--git-dir", type=Path, help="a clone's .git (or a bare mirror) of the leaderboard repository")
    parser.add_argument("--kernelbench-git-dir", type=Path, help="a clone's .git (or a bare mirror) of KernelBench")
    parser.add_argument("--max", type=int, default=500, help="keep the first N eligible solutions (default 500)")
    parser.add_argument("-o", "--output", type=Path, default=HERE / "manifest.json")
    args = parser.parse_args()

    def leaderboard(path: str) -> bytes:
        return read(args.git_dir, LEADERBOARD_REPO, LEADERBOARD_COMMIT, path)

    def kernelbench(path: str) -> bytes:
        return read(args.kernelbench_git_dir, KERNELBENCH_REPO, KERNELBENCH_COMMIT, path)

    data = json.loads(leaderboard(DATA_JSON))
    candidates = []  # (level, number, file, problem, kernelbench path, entry)
    for key, entries in data.items():
        m = _KEY.match(key)
        if m is None:
            raise SystemExit(f"{DATA_JSON}: unexpected problem key {key!r}")
        level, name, number = int(m[1]), m[2], int(m[3])
        if level not in LEVELS:
            continue
        for entry in entries:
            candidates.append(
                (level, number, entry["file"], f"level{level}_{name}", f"KernelBench/level{level}/{name}.py", entry)
            )
    candidates.sort(key=lambda c: c[:3])

    problems: dict[str, dict] = {}
    problem_why: dict[str, list[str]] = {}
    solutions, excluded = [], []
    for level, number, md5, problem, kb_path, entry in candidates:
        if problem not in problem_why:
            try:
                text = kernelbench(kb_path)
            except subprocess.CalledProcessError:
                problem_why[problem] = [f"{kb_path} not in KernelBench at {KERNELBENCH_COMMIT[:7]}"]
            else:
                problem_why[problem] = problem_problems(text.decode())
                try:
                    copy = leaderboard(f"docs/assets/problems/l{level}_p{number}.py")
                except subprocess.CalledProcessError:
                    copy = None
                problems[problem] = {
                    "problem": problem,
                    "level": level,
                    "number": number,
                    "path": f"problems/{problem}.py",
                    "kernelbench_file": kb_path,
                    "sha256": hashlib.sha256(text).hexdigest(),
                    "same_as_leaderboard_copy": copy == text,
                }
        lb_file = f"docs/assets/solutions/{md5}.py"
        source = leaderboard(lb_file)
        why = [f"problem: {w}" for w in problem_why[problem]] + solution_problems(source.decode())
        row = {
            "problem": problem,
            "solution": f"solutions/{problem}/{model_slug(entry['display_name'])}_{md5[:8]}.py",
            "model": entry["display_name"],
            "leaderboard_file": lb_file,
            "leaderboard_speedup_L40S": entry["torch_speedup"],
            "kernelbench_file": kb_path,
            "sha256": hashlib.sha256(source).hexdigest(),
        }
        if why:
            excluded.append({**row, "reason": "; ".join(why)})
        else:
            solutions.append(row)

    eligible = len(solutions)
    solutions = solutions[: args.max]
    kept = {s["problem"] for s in solutions}
    chosen_problems = [p for p in problems.values() if p["problem"] in kept]
    counts = {
        f"level{lv}": {
            "solutions": sum(s["problem"].startswith(f"level{lv}_") for s in solutions),
            "problems": sum(p["level"] == lv for p in chosen_problems),
        }
        for lv in LEVELS
    }
    manifest = {
        "leaderboard": {"repo": LEADERBOARD_REPO, "commit": LEADERBOARD_COMMIT, "data": DATA_JSON},
        "kernelbench": {"repo": KERNELBENCH_REPO, "commit": KERNELBENCH_COMMIT},
        "selection": {
            "rule": "every data.json solution of a level 1 or 2 problem using load_inline with class ModelNew, "
            "sorted by (level, problem number, leaderboard file), first max kept",
            "max": args.max,
            "listed": len(candidates),
            "eligible": eligible,
            "kept": len(solutions),
            "excluded": len(excluded),
            "per_level": counts,
        },
        "problems": chosen_problems,
        "solutions": solutions,
        "excluded": excluded,
    }
    args.output.write_text(json.dumps(manifest, indent=1) + "\n")
    print(
        f"{len(candidates)} listed (levels {', '.join(map(str, LEVELS))}), {eligible} eligible, "
        f"{len(excluded)} excluded; wrote {len(solutions)} solutions of {len(chosen_problems)} problems "
        f"to {args.output}"
    )
    for lv, c in counts.items():
        print(f"  {lv}: {c['solutions']} solutions, {c['problems']} problems")
    for e in excluded:
        print(f"  excluded {e['leaderboard_file']} ({e['problem']}, {e['model']}): {e['reason']}")
    differs = [p["problem"] for p in chosen_problems if not p["same_as_leaderboard_copy"]]
    if differs:
        print(f"  {len(differs)} problems differ from the leaderboard's docs/assets/problems copy: {differs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
