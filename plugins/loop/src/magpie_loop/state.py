"""``loop.json``: the record of one optimization loop, and the steps that add to it.

Every step reads the file it is given and keeps only what the final report needs (paths, verdicts,
correctness, source mappings); the files themselves stay where they are. The record is rewritten
atomically after each step, so an interrupted step never leaves a half-written record.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from magpie_core import __version__
from magpie_core.reports import read_report_json
from magpie_loop.basics import STEPS, LoopError  # noqa: F401  (STEPS: one of this module's names)

STATE_NAME = "loop.json"
STATE_KIND = "magpie-loop"
Step = Literal["baseline", "profile", "analysis", "kernel", "compare", "final"]
#: a source mapping the loop can rely on (the source finder's strongest resolution)
CERTAIN_RESOLUTION = "exact"


class Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class Artifact(Record):
    """A file the loop refers to, and what was read from it."""

    path: str
    added: str
    summary: dict[str, Any] = Field(default_factory=dict)


class SelectedKernel(Record):
    name: str
    source_resolution: str  # exact | probable | ambiguous | unresolved | asserted
    source_file: str | None = None
    candidates: list[dict[str, Any]] = Field(default_factory=list)
    analysis: str | None = None  # the analysis it was found in
    pct_total: float | None = None
    note: str | None = None


class CompareRecord(Record):
    path: str
    added: str
    kernel: str | None
    baseline_id: str
    candidate_id: str | None  # the winner (or best candidate) this loop carries forward
    speedup: float | None = None
    speedup_ci95: list[float] | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    correctness: dict[str, str] = Field(default_factory=dict)  # kernel id -> passed | failed | ...
    stability: dict[str, Any] | None = None


class LoopState(Record):
    kind: str = STATE_KIND
    schema_version: str = "1.0"
    magpie_version: str = __version__
    name: str
    created: str
    updated: str
    baseline: Artifact | None = None
    profile: Artifact | None = None
    analyses: list[Artifact] = Field(default_factory=list)
    kernels: list[SelectedKernel] = Field(default_factory=list)
    compares: list[CompareRecord] = Field(default_factory=list)
    final: Artifact | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def state_path(loop_dir: Path) -> Path:
    return loop_dir / STATE_NAME


def load_state(loop_dir: Path) -> LoopState:
    path = state_path(loop_dir)
    if not path.is_file():
        raise LoopError(f"{path}: no loop here (start one with: magpie loop start {loop_dir})")
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise LoopError(f"{path}: cannot read the loop record: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != STATE_KIND:
        raise LoopError(f"{path}: not a magpie loop record")
    try:
        return LoopState.model_validate(data)
    except ValueError as exc:
        raise LoopError(f"{path}: invalid loop record: {exc}") from exc


def save_state(loop_dir: Path, state: LoopState) -> Path:
    """Write ``loop.json`` atomically (a temp file renamed over it)."""
    state.updated = now()
    path = state_path(loop_dir)
    fd, tmp = tempfile.mkstemp(dir=loop_dir, prefix=".loop.", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        fh.write(state.model_dump_json(indent=2) + "\n")
    os.replace(tmp, path)
    return path


def start_loop(loop_dir: Path, name: str | None = None) -> LoopState:
    """A new loop folder with an empty record; an existing record is never overwritten."""
    if state_path(loop_dir).exists():
        raise LoopError(f"{state_path(loop_dir)} exists: this loop is already started")
    loop_dir.mkdir(parents=True, exist_ok=True)
    stamp = now()
    state = LoopState(name=name or loop_dir.resolve().name, created=stamp, updated=stamp)
    state.history.append({"time": stamp, "step": "start"})
    save_state(loop_dir, state)
    return state


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON report (a folder: the report inside it) as a dict, with ``_path``."""
    if path.is_dir():
        names = ("benchmark_report.json", "compare_report.json", "gap_analysis.json", "analyze_report.json")
        found = next((path / n for n in names if (path / n).is_file()), None)
        if found is None:
            raise LoopError(f"{what}: no report in folder {path}")
        path = found
    try:
        data = read_report_json(path)
    except ValueError as exc:
        raise LoopError(f"{what}: {exc}") from exc
    data["_path"] = str(path.resolve())
    return data
