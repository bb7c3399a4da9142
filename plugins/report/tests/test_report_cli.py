"""The terminal side: tables that survive a pipe, ``--format table|csv|json``, ``--no-html``, and
``magpie report``'s errors; and that without the report plugin a run simply writes no page."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT

H100 = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def piped(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI with stdout going to a pipe, as in ``magpie ... | cat`` (no COLUMNS set)."""
    full = {**os.environ, "NO_COLOR": "1", **(env or {})}
    full.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "magpie_core", *args], capture_output=True, text=True, env=full, cwd=ROOT, timeout=300
    )


def run_dir(out: Path) -> Path:
    """The run folder a trace command made under ``-o`` (a new one each run)."""
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def test_plugins_table_is_not_cut_in_a_pipe() -> None:
    rows = json.loads(piped("plugins", "--format", "json").stdout)
    out = piped("plugins").stdout
    assert "…" not in out
    for row in rows:  # every plugin on one line, with its distribution and status
        assert any(
            row["name"] in line and row["distribution"] in line and row["status"] in line for line in out.splitlines()
        ), row
    parsed = list(csv.reader(io.StringIO(piped("plugins", "--format", "csv").stdout)))
    assert (
        parsed[0] == ["plugin", "kinds", "distribution", "version", "status", "provides"]
        and len(parsed) == len(rows) + 1
    )


def test_gap_formats_and_no_html(tmp_path: Path) -> None:
    table = piped("gap", str(H100), "-o", str(tmp_path / "t"), "--top-k", "8")
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if "kernel" in line and "calls" in line)
    assert (
        all(col in header for col in ("category", "total (us)", "avg (us)", "% total", "% busy"))
        and "…" not in table.stdout
    )
    assert (run_dir(tmp_path / "t") / "report.html").is_file() and "report page:" in table.stdout
    got = piped("gap", str(H100), "-o", str(tmp_path / "c"), "--top-k", "8", "--format", "csv", "--no-html")
    rows = list(csv.DictReader(io.StringIO(got.stdout)))
    names = [k["name"] for k in json.loads((run_dir(tmp_path / "c") / "gap_analysis.json").read_text())["top_kernels"]]
    assert [r["kernel"] for r in rows] == names  # full kernel names, nothing else on stdout
    assert not (run_dir(tmp_path / "c") / "report.html").exists()
    as_json = json.loads(piped("gap", str(H100), "-o", str(tmp_path / "j"), "--top-k", "3", "--format", "json").stdout)
    assert [r["kernel"] for r in as_json] == names[:3]
    bad = piped("gap", str(H100), "--format", "xml")
    assert bad.returncode == 2 and "--format 'xml'" in bad.stderr and "Traceback" not in bad.stderr


def test_without_the_report_plugin_no_page(tmp_path: Path) -> None:
    got = piped("gap", str(H100), "-o", str(tmp_path / "g"), env={"MAGPIE_PLUGINS": "gap,kernel-sources"})
    assert got.returncode == 0, got.stderr
    folder = run_dir(tmp_path / "g")
    assert (folder / "gap_analysis.json").is_file() and not (folder / "report.html").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "no such file or folder"),
        (lambda d: d, "no magpie report in this folder"),
        (lambda d: (d / "x.json").write_text('{"a": ') and d / "x.json", "line 1"),
        (lambda d: (d / "y.json").write_text("[1]") and d / "y.json", "not a magpie report"),
    ],
)
def test_report_command_bad_input(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    got = piped("report", str(make(tmp_path)))
    assert got.returncode == 2 and message in got.stderr and "Traceback" not in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_report_command_redraws_a_workspace(tmp_path: Path) -> None:
    assert piped("gap", str(H100), "-o", str(tmp_path / "g"), "--no-html").returncode == 0
    folder = run_dir(tmp_path / "g")
    got = piped("report", str(folder))
    assert got.returncode == 0 and (folder / "report.html").is_file(), got.stderr
    page = (folder / "report.html").read_text()
    assert page.count("<script>") == 2 and "top 20 kernels by total time" in page  # plotly.js once, then the figures


def test_a_broken_section_plugin_is_left_out(tmp_path: Path) -> None:
    """A third-party plugin whose sections raise is warned about; the page is written with everyone else's."""
    import types

    import magpie_report.plugin as report_plugin

    from magpie_core import hookimpl
    from magpie_core.plugins import PluginManager, PluginWarning, use_plugin_manager
    from magpie_core.report_pages import write_report_html

    broken = types.ModuleType("broken_sections")

    @hookimpl
    def magpie_report_sections(page):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    broken.magpie_report_sections = magpie_report_sections  # type: ignore[attr-defined]
    manager = PluginManager(entry_points=[], plugins=[("report", report_plugin), ("broken", broken)])
    report = {"mode": "analyze", "results": []}
    with use_plugin_manager(manager), pytest.warns(PluginWarning, match="broken.*boom"):
        path = write_report_html("analyze", report, tmp_path)
    assert path == tmp_path / "report.html" and "0 of 0 kernel(s) passed" in path.read_text()
    with use_plugin_manager(PluginManager(entry_points=[], plugins=[("broken", broken)])):
        assert write_report_html("analyze", report, tmp_path / "none") is None  # no renderer: nothing, no error


def test_gpu_info_formats() -> None:
    info = json.loads(piped("gpu-info", "--format", "json").stdout)
    rows = list(csv.DictReader(io.StringIO(piped("gpu-info", "--format", "csv").stdout)))
    assert [r["name"] for r in rows if r["kind"] == "tool"] == [t["name"] for t in info["tools"]]
    assert sum(r["kind"] == "gpu" for r in rows) == len(info["gpus"])


def test_a_third_party_mode_gets_its_page(tmp_path: Path) -> None:
    """The hook as docs/reports.md shows it: a plugin's own mode, drawn with the kit."""
    import types

    import magpie_report.plugin as report_plugin

    from magpie_core import hookimpl
    from magpie_core.plugins import PluginManager, use_plugin_manager
    from magpie_core.report_pages import write_report_html

    mine = types.ModuleType("kernel_count_sections")

    @hookimpl
    def magpie_report_sections(page):  # type: ignore[no-untyped-def]
        if page.kit is None or page.kind != "kernel-count":
            return None
        counts = page.report["kernels"]
        bars = {"type": "bar", "x": list(counts), "y": list(counts.values())}
        return [page.kit.section("Kernel launches", page.kit.figure([bars], title="launches per kernel"))]

    mine.magpie_report_sections = magpie_report_sections  # type: ignore[attr-defined]
    manager = PluginManager(entry_points=[], plugins=[("report", report_plugin), ("mine", mine)])
    with use_plugin_manager(manager):
        path = write_report_html("kernel-count", {"kernels": {"gemm": 3, "relu": 5}}, tmp_path)
    page = path.read_text() if path else ""
    assert "Kernel launches" in page and "data-marks='2'" in page
