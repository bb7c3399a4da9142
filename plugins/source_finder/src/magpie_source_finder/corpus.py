"""Measure the finder against a checked corpus: precision (no wrong ``exact``) and recall per family.

A corpus file (``tests/data/kernel_source_corpus/corpus.json``) lists checkouts (folders next to it under
``checkouts/``) and entries: a kernel name, where it came from, its family, the expected resolution(s) and,
when its definition is in the checkouts (``in_checkout``), the expected repo, file and symbol. An entry may
restrict the checkouts (``checkouts``) to replay a case such as "only an aiter checkout".

``python -m magpie_source_finder.corpus CORPUS.json`` prints the figures as a Markdown table.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magpie_source_finder.finder import find_sources


@dataclass
class Outcome:
    entry: dict[str, Any]
    row: dict[str, Any]

    @property
    def expected_file(self) -> str | None:
        exp = self.entry["expect"]
        return f"{exp['repo']}:{exp['file']}" if exp.get("repo") else None

    @property
    def got_file(self) -> str | None:
        row = self.row
        return f"{row['source_repo']}:{row['source_file'].split('/', 1)[1]}" if row.get("source_file") else None

    @property
    def found(self) -> bool:
        return self.row["source_resolution"] in ("exact", "probable") and self.got_file == self.expected_file

    @property
    def wrong_exact(self) -> bool:
        return self.row["source_resolution"] == "exact" and (
            not self.entry["in_checkout"] or self.got_file != self.expected_file
        )


@dataclass
class Figures:
    outcomes: list[Outcome] = field(default_factory=list)

    def by_family(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for o in self.outcomes:
            f = out[o.entry["family"]]
            f["kernels"] += 1
            f["exact"] += o.row["source_resolution"] == "exact"
            f["wrong_exact"] += o.wrong_exact
            f["in_checkout"] += o.entry["in_checkout"]
            f["found"] += o.entry["in_checkout"] and o.found
        return {k: dict(v) for k, v in sorted(out.items())}

    def recall(self, family: str) -> float | None:
        f = self.by_family()[family]
        return f["found"] / f["in_checkout"] if f["in_checkout"] else None


def _parsed(name: str, platform: str) -> dict[str, Any]:
    from magpie_core.kernel_names import parse_kernel_name

    return parse_kernel_name(name, {"platform": platform}).model_dump()


def evaluate(corpus_file: Path, cache_dir: Path) -> Figures:
    """Run the finder over every corpus entry (grouped by the checkouts each entry allows)."""
    corpus = json.loads(corpus_file.read_text())
    root = corpus_file.parent / "checkouts"
    groups: dict[tuple[str, ...], list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for i, e in enumerate(corpus["entries"]):
        groups[tuple(e.get("checkouts") or corpus["checkouts"])].append((i, e))
    rows: dict[int, dict[str, Any]] = {}
    for names, items in groups.items():
        for i, e in items:  # one call per entry: two entries may share a name with different contexts
            kernel = {"name": e["name"], "parsed": _parsed(e["name"], e["platform"]), "context": e.get("context")}
            out = find_sources([kernel], [str(root / n) for n in names], str(cache_dir))
            rows[i] = out["sources"][e["name"]] | {"_repos": out["repos"]}
    return Figures([Outcome(e, rows[i]) for i, e in enumerate(corpus["entries"])])


def markdown(figures: Figures) -> str:
    lines = [
        "| family | kernels | definition in checkout | found (exact or probable, right file) | recall | exact "
        "| wrong exact |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for fam, f in figures.by_family().items():
        recall = f"{100 * f['found'] / f['in_checkout']:.0f} %" if f["in_checkout"] else "n/a"
        counts = f"{f['kernels']} | {f['in_checkout']} | {f['found']} | {recall} | {f['exact']} | {f['wrong_exact']}"
        lines.append(f"| {fam} | {counts} |")
    total = {k: sum(f[k] for f in figures.by_family().values()) for k in ("kernels", "in_checkout", "found", "exact")}
    wrong = sum(o.wrong_exact for o in figures.outcomes)
    lines.append(
        f"| **all** | {total['kernels']} | {total['in_checkout']} | {total['found']} | "
        f"{100 * total['found'] / max(total['in_checkout'], 1):.0f} % | {total['exact']} | {wrong} |"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import tempfile

    if len(argv) != 1:
        print("usage: python -m magpie_source_finder.corpus CORPUS.json", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as cache:
        print(markdown(evaluate(Path(argv[0]), Path(cache))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
