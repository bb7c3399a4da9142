"""How the ``magpie`` executable ends: every output written, the documented exit status.

A fresh interpreter runs, as the executable does; the check is what an observer of the process sees.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TRACE = Path(__file__).parent / "data" / "traces" / "inference" / "vllm_decode_full" / "graph_execution.json.gz"


def test_executable_writes_every_output_and_status(tmp_path: Path) -> None:
    """``python -m magpie_core`` (the executable's :func:`~magpie_core.cli.main`): a gap run's printed table and files
    are complete; a usage error still exits 2."""
    done = subprocess.run(
        [sys.executable, "-m", "magpie_core", "gap", str(TRACE), "-o", str(tmp_path), "--format", "csv"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#,kernel,category,calls,") and done.stdout.endswith("\n")
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "gap_analysis.json").read_text().endswith("}\n")
    assert (run_dir / "report.html").read_bytes().rstrip().endswith(b"</html>")
    bad = subprocess.run(
        [sys.executable, "-m", "magpie_core", "gap", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2
    assert "missing.json" in bad.stderr
