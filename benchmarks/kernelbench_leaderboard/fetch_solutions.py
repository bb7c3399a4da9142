"""Put the leaderboard solutions of manifest.json in place, byte for byte, from the leaderboard's repository.

    python benchmarks/kernelbench_leaderboard/fetch_solutions.py                  # from GitHub
    python benchmarks/kernelbench_leaderboard/fetch_solutions.py --git-dir DIR    # from a local clone or mirror

The repository holds no licence file, so its files are not committed here (solutions/ is git-ignored): this
script fetches them at the pinned commit and checks each one's SHA-256 against manifest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _from_git(git_dir: Path, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, check=True
    ).stdout


def _from_github(repo: str, commit: str, path: str) -> bytes:
    owner_name = repo.removeprefix("https://github.com/")
    with urllib.request.urlopen(f"https://raw.githubusercontent.com/{owner_name}/{commit}/{path}", timeout=30) as r:
        return r.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--git-dir", type=Path, help="a clone's .git (or a bare mirror) of the leaderboard repository")
    args = parser.parse_args()
    manifest = json.loads((HERE / "manifest.json").read_text())
    repo, commit = manifest["leaderboard"]["repo"], manifest["leaderboard"]["commit"]
    bad = 0
    for entry in manifest["solutions"]:
        target = HERE / entry["solution"]
        if args.git_dir:
            data = _from_git(args.git_dir, commit, entry["leaderboard_file"])
        else:
            data = _from_github(repo, commit, entry["leaderboard_file"])
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            print(f"{entry['leaderboard_file']}: SHA-256 differs from manifest.json; not written", file=sys.stderr)
            bad += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    print(f"{len(manifest['solutions']) - bad} solutions in {HERE / 'solutions'}, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
