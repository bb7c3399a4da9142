"""Find the trace files of a run and give each its rank.

Rank comes, in order of trust, from the trace's own ``distributedInfo.rank``
(applied after loading), from the file name (``rank-3``, ``rank_3``,
``rank3``, ``dp1_tp2``), from a parent folder named the same way, or from the
sorted file order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TRACE_SUFFIXES = (".json", ".json.gz")
#: folders magpie writes itself and never reads back as input
SKIP_DIRS = {"gap_analysis", "tracelens", ".git", "__pycache__"}

_RANK_RE = re.compile(r"(?:^|[^a-z0-9])rank[-_]?(\d+)(?![0-9])", re.IGNORECASE)
_DP_TP_RE = re.compile(r"dp[-_]?(\d+)[-_.]?tp[-_]?(\d+)", re.IGNORECASE)
_TP_RE = re.compile(r"(?:^|[^a-z0-9])tp[-_]?(\d+)(?![0-9])", re.IGNORECASE)


@dataclass
class TraceFile:
    """One trace file of a run and the rank it belongs to."""

    path: Path
    rank: int
    label: str  # how the rank was found: "rank-3", "dp0_tp1", "order"
    source: str  # "file name" | "folder" | "order" | "distributedInfo"


def is_trace_file(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and name.endswith(TRACE_SUFFIXES) and "_clamped_" not in name


def _rank_from_name(name: str) -> tuple[int, str] | None:
    m = _RANK_RE.search(name)
    if m:
        return int(m.group(1)), f"rank-{m.group(1)}"
    return None


def _dp_tp(name: str) -> tuple[int, int] | None:
    m = _DP_TP_RE.search(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def find_trace_files(root: Path, max_depth: int = 4) -> list[Path]:
    """Trace files under ``root`` (or ``root`` itself), skipping magpie's own output folders."""
    if root.is_file():
        return [root]
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.is_dir():
                if depth < max_depth and entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    walk(entry, depth + 1)
            elif is_trace_file(entry):
                found.append(entry)

    walk(root, 0)
    return found


def assign_ranks(files: list[Path], root: Path | None = None) -> list[TraceFile]:
    """Give every file a rank from its name, a parent folder, or the sorted order."""
    out: list[TraceFile] = []
    dptp: list[tuple[int, int, Path]] = []
    pending: list[Path] = []
    for path in files:
        hit = _rank_from_name(path.name)
        if hit is not None:
            out.append(TraceFile(path, hit[0], hit[1], "file name"))
            continue
        pair = _dp_tp(path.name)
        if pair is not None:
            dptp.append((*pair, path))
            continue
        parent_hit = None
        for parent in path.parents:
            if root is not None and parent == root.parent:
                break
            parent_hit = _rank_from_name(parent.name)
            if parent_hit is None and _dp_tp(parent.name) is not None:
                dp, tp = _dp_tp(parent.name)  # type: ignore[misc]
                dptp.append((dp, tp, path))
                parent_hit = (-1, "")
            if parent_hit is not None:
                break
        if parent_hit is None:
            tp_hit = _TP_RE.search(path.name)
            if tp_hit:
                out.append(TraceFile(path, int(tp_hit.group(1)), f"tp{tp_hit.group(1)}", "file name"))
            else:
                pending.append(path)
        elif parent_hit[0] >= 0:
            out.append(TraceFile(path, parent_hit[0], parent_hit[1], "folder"))
    if dptp:
        tp_size = max(tp for _, tp, _ in dptp) + 1
        for dp, tp, path in dptp:
            out.append(TraceFile(path, dp * tp_size + tp, f"dp{dp}_tp{tp}", "file name"))
    taken = {t.rank for t in out}
    next_rank = 0
    for path in pending:
        while next_rank in taken:
            next_rank += 1
        out.append(TraceFile(path, next_rank, "order", "order"))
        taken.add(next_rank)
    return sorted(out, key=lambda t: (t.rank, str(t.path)))


def discover(root: Path) -> list[TraceFile]:
    """The trace files under ``root`` (or ``root`` itself, a file) with their ranks, by rank."""
    return assign_ranks(find_trace_files(root), root if root.is_dir() else None)
