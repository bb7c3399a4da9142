"""Run workspaces: ``<output-dir>/<mode>_<label>_<timestamp>/``.

Each run keeps its config snapshot, its report and its logs together, so a result can always be traced back to what
produced it. Every run of every mode (``analyze``, ``compare``, ``benchmark``, ``gap``, ``inference``) gets a new
folder: running the same command twice into the same ``-o`` never overwrites or mixes an earlier run
(:func:`create_run_folder`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: where every command, the Python API and the MCP server put their run folders unless told (``-o``)
DEFAULT_OUTPUT_ROOT = "magpie_runs"


def safe_label(label: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", label or "").strip("_")[:64]


@dataclass
class Workspace:
    path: Path
    mode: str

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def report_path(self) -> Path:
        return self.path / f"{self.mode}_report.json"

    def sub(self, name: str) -> Path:
        """A subfolder for one stage or one kernel, created on first use."""
        folder = self.path / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def snapshot_config(self, data: dict[str, Any], name: str = "config.yaml") -> Path:
        import yaml  # here: runs that write no config snapshot (``magpie gap``) start without it

        target = self.path / name
        target.write_text(yaml.safe_dump(data, sort_keys=False))
        return target

    def attach_log(self, level: int = logging.INFO) -> logging.Handler:
        """Copy magpie's log records into ``logs/magpie.log`` for this run."""
        handler = logging.FileHandler(self.logs / "magpie.log")
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        logging.getLogger("magpie").addHandler(handler)
        return handler


def create_run_folder(output_dir: str | Path, mode: str, label: str | None = None) -> Path:
    """A new, empty ``<output_dir>/<mode>_<label>_<timestamp>[_<n>]/``; never one that exists.

    Creating the folder is the claim on its name, so two runs started in the same second (even by two
    processes) get two folders."""
    stamp = dt.datetime.now().strftime("%Y%m%d_%H%M%S")
    parts = [mode, safe_label(label), stamp]
    parent = Path(output_dir)
    parent.mkdir(parents=True, exist_ok=True)
    base = parent / "_".join(p for p in parts if p)
    for n in range(1, 10_000):
        path = base if n == 1 else base.with_name(f"{base.name}_{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path.resolve()
    raise FileExistsError(f"no free run folder name like {base} (10,000 taken)")


@contextlib.contextmanager
def run_folder(output_dir: str | Path, mode: str, label: str | None = None) -> Iterator[Path]:
    """:func:`create_run_folder` for a ``with`` block; removed again if the block fails before writing to it."""
    path = create_run_folder(output_dir, mode, label)
    try:
        yield path
    except BaseException:
        with contextlib.suppress(OSError):
            path.rmdir()  # only succeeds while it is empty
        raise


def create_workspace(output_dir: str | Path, mode: str, label: str | None = None) -> Workspace:
    """Make a fresh workspace folder; never reuses one that exists."""
    path = create_run_folder(output_dir, mode, label)
    (path / "logs").mkdir()
    return Workspace(path=path, mode=mode)
