"""docs/notebooks/trace_to_verdict.ipynb runs from top to bottom in a real Jupyter kernel (nbclient + ipykernel) on
the bundled H200 trace, CPU only, and shows the figures and tables it promises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "docs" / "notebooks" / "trace_to_verdict.ipynb"


def test_the_example_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -e './magpie_api[notebook]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (magpie-api's notebook extra)")
    import nbformat

    monkeypatch.setenv("MAGPIE_NOTEBOOK_OUT", str(tmp_path))  # the kernel inherits this process's environment
    monkeypatch.delenv("MAGPIE_TRACE", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute(env=dict(os.environ))
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    titles = [f["data"]["application/vnd.plotly.v1+json"]["layout"]["title"]["text"] for f in figures]
    assert titles == ["top 10 kernels by total time", "roofline: decode_only on H200", "speedup"]
    tables = [o for o in outputs if "text/html" in o.get("data", {}) and "<table" in o["data"]["text/html"]]
    assert len(tables) >= 4  # top kernels, stages, bottlenecks, candidates
    assert len(list(tmp_path.glob("gap_*/gap_analysis.json"))) == 1
    assert (tmp_path / "inference.xlsx").is_file()
