"""Run workspaces: ``<output-dir>/<mode>_<label>_<timestamp>/``.

Each run keeps its config snapshot, its report and its logs together, so a
result can always be traced back to what produced it.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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


def create_workspace(output_dir: str | Path, mode: str, label: str | None = None) -> Workspace:
    """Make a fresh workspace folder; never reuses one that exists."""
    stamp = dt.datetime.now().strftime("%Y%m%d_%H%M%S")
    parts = [mode, safe_label(label), stamp]
    base = Path(output_dir) / "_".join(p for p in parts if p)
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}_{n}")
    (path / "logs").mkdir(parents=True)
    return Workspace(path=path.resolve(), mode=mode)
