"""Put the pace set of manifest.json in place, byte for byte: problems/ and solutions/ (both generated, git-ignored).

    python benchmarks/kernelbench_pace/fetch.py                       # all, from GitHub
    python benchmarks/kernelbench_pace/fetch.py --first 50 \\
        --git-dir LEADERBOARD_GIT_DIR --kernelbench-git-dir KERNELBENCH_GIT_DIR

--first N takes the first N solutions in manifest order and only their problems. Each file's SHA-256 is checked
against manifest.json (a file that differs is not written). Any other .py file already under problems/ or
solutions/ (from an earlier, larger fetch) is removed, so the two folders hold exactly the chosen set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_manifest import read  # noqa: E402  (one reader of the two repositories, beside this script)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--git-dir", type=Path, help="a clone's .git (or a bare mirror) of the leaderboard repository")
    parser.add_argument("--kernelbench-git-dir", type=Path, help="a clone's .git (or a bare mirror) of KernelBench")
    parser.add_argument("--first", type=int, help="only the first N solutions (manifest order) and their problems")
    args = parser.parse_args()
    manifest = json.loads((HERE / "manifest.json").read_text())
    lb, kb = manifest["leaderboard"], manifest["kernelbench"]
    solutions = manifest["solutions"][: args.first] if args.first is not None else manifest["solutions"]
    wanted = {s["problem"] for s in solutions}
    problems = [p for p in manifest["problems"] if p["problem"] in wanted]

    jobs = [(args.kernelbench_git_dir, kb, p["kernelbench_file"], p["path"], p["sha256"]) for p in problems]
    jobs += [(args.git_dir, lb, s["leaderboard_file"], s["solution"], s["sha256"]) for s in solutions]
    bad = 0
    for git_dir, source, path, target, sha256 in jobs:
        data = read(git_dir, source["repo"], source["commit"], path)
        if hashlib.sha256(data).hexdigest() != sha256:
            print(f"{path}: SHA-256 differs from manifest.json; not written", file=sys.stderr)
            (HERE / target).unlink(missing_ok=True)
            bad += 1
            continue
        (HERE / target).parent.mkdir(parents=True, exist_ok=True)
        (HERE / target).write_bytes(data)

    keep = {HERE / target for *_, target, _ in jobs}
    stale = [f for d in ("problems", "solutions") for f in sorted((HERE / d).rglob("*.py")) if f not in keep]
    for f in stale:
        f.unlink()
    for d in sorted((HERE / "solutions").glob("*"), reverse=True):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()

    print(
        f"{len(problems)} problems in {HERE / 'problems'}, {len(solutions)} solutions in {HERE / 'solutions'}: "
        f"{len(jobs) - bad} written, {bad} failed the SHA-256 check, {len(stale)} stale files removed"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
