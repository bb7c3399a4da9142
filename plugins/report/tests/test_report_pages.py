"""report.html of every mode, built by the real CLI from bundled data and small real runs, opened in
headless Chromium (Debian's, driven by Playwright): no console errors, every figure drawn with the traces and
the point marks its spec says, screenshots in the test's temp folder; one page opened with the network cut.

Data: gap over the bundled H100 trace (as two ranks), inference over the H200 recording, a benchmark of the
local fake streaming server (a two-point sweep with per-request records and SLOs), a compare and an analyze
of small PyTorch softmax kernels on the CPU (one deliberately wrong). ``magpie report A B`` draws two gap
runs side by side.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, ROOT

H100 = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
H200 = DATA / "traces_gpu" / "llama_h200.json.gz"
SOFTMAX = ROOT / "examples" / "softmax" / "softmax.py"
DOC_IMAGES = ROOT / "docs" / "images"
#: ``MAGPIE_UPDATE_SCREENSHOTS=1 pytest plugins/report/tests/test_report_pages.py`` refreshes the docs' pictures
UPDATE_DOCS = bool(os.environ.get("MAGPIE_UPDATE_SCREENSHOTS"))


def start(*args: str) -> subprocess.Popen[str]:
    """The real CLI, started (stdout to a pipe, as in a log)."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    argv = [sys.executable, "-m", "magpie_core", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def finish(proc: subprocess.Popen[str], ok: tuple[int, ...] = (0,)) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode in ok, out + err
    return out


def magpie(*args: str, ok: tuple[int, ...] = (0,)) -> str:
    return finish(start(*args), ok)


def _kernel_file(folder: Path, mode: str) -> Path:
    """Softmax variants with a small timing budget: compare two correct ones and a wrong one; analyze one
    correct kernel and one whose testcase command fails (no second PyTorch worker: the run stays short)."""
    shutil.copy(SOFTMAX, folder / "softmax.py")
    text = (
        "baseline: eager\ncorrectness:\n  trials: 2\nperformance:\n  warmup_ms: 10\n  budget_seconds: 1\n"
        "  min_samples: 10\nkernels:\n"
    )
    kernels = [("eager", "softmax_eager"), ("eager_manual", "softmax_manual")]
    kernels.append(("partial_write", "softmax_partial_write"))
    for kid, entry in kernels if mode == "compare" else kernels[:1]:
        text += (
            f"  - id: {kid}\n    type: pytorch\n    entry: softmax.py:{entry}\n    reference: softmax.py:reference\n"
        )
    if mode == "analyze":
        fail = "python3 -c 'raise SystemExit(\"mismatch at index 3\")'"
        text += f"  - id: testcase_fails\n    type: pytorch\n    testcase_command: {json.dumps(fail)}\n"
    path = folder / f"{mode}.yaml"
    path.write_text(text)
    return path


def _benchmark_file(folder: Path, url: str) -> Path:
    path = folder / "bench.yaml"
    path.write_text(
        "benchmark:\n  framework: fake\n  model: fake-model\n  run_mode: external\n  run_kind: measurement\n"
        f"  base_url: {url}\n  precision: bf16\n"
        "  envs: {CONC: 4, ISL: 16, OSL: 8, NUM_PROMPTS: 12, RANDOM_RANGE_RATIO: 0}\n"
        "  load: {concurrencies: [1, 4], warmup_requests: 1, progress: false, save_requests: true}\n"
        "  slo: {ttft_ms: 50, tpot_ms: 10}\n"
    )
    return path


def _workspace(out: Path, mode: str) -> Path:
    (ws,) = [p for p in out.iterdir() if p.name.startswith(mode)]
    return ws


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Workspaces of every mode, each with the report.html the CLI wrote by default."""
    from magpie_benchmark.loadgen.fake_server import running

    base = tmp_path_factory.mktemp("report_runs")
    ranks = base / "traces"
    ranks.mkdir()
    for r in (0, 1):
        shutil.copy(H100, ranks / f"rank{r}_trace.json.gz")
    out: dict[str, Path] = {}
    # the compare (PyTorch workers, the longest run) goes on beside the others: one extra process, not a pool
    compare = start("-o", str(base / "cmp"), "compare", "-k", str(_kernel_file(base, "compare")))
    magpie("gap", str(ranks), "-o", str(base / "gap"), "--top-k", "12")
    magpie("gap", str(H100), "-o", str(base / "gap_one"), "--top-k", "12")
    out["gap"], out["gap_one"] = _workspace(base / "gap", "gap"), _workspace(base / "gap_one", "gap")
    magpie("inference", str(H200), "-o", str(base / "inference"))
    out["inference"] = _workspace(base / "inference", "inference")
    with running(ttft_ms=5, itl_ms=1) as url:
        magpie("-o", str(base / "bench"), "benchmark", "-b", str(_benchmark_file(base, url)))
    out["benchmark"] = _workspace(base / "bench", "benchmark")
    magpie("-o", str(base / "an"), "analyze", "-k", str(_kernel_file(base, "analyze")), ok=(1,))
    out["analyze"] = _workspace(base / "an", "analyze")
    finish(compare, ok=(1,))  # 1: the wrong variant is rejected, by design
    out["compare"] = _workspace(base / "cmp", "compare")
    return out


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return str(shutil.which(name))
    pytest.skip("no chromium on PATH: run scripts/setup_chromium.sh (make test does)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


FIGURES_JS = """() => Array.from(document.querySelectorAll('div.fig')).map(d => ({
  id: d.id, title: d.dataset.title, traces: Number(d.dataset.traces),
  marks: d.dataset.marks === undefined ? null : Number(d.dataset.marks),
  drawnTraces: (d.data || []).length,
  points: d.querySelectorAll('.point').length,
  heatmaps: d.querySelectorAll('g.hm image, .heatmaplayer image').length,
}))"""


def open_report(
    browser: Any, path: Path, shot: Path, *, offline: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    """Open a page, wait for every figure, return the figures' facts and the requests that left the file."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=offline)
    page = context.new_page()
    errors: list[str] = []
    outside: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.magpieReport && window.magpieReport.done", timeout=60_000)
    state = page.evaluate("() => window.magpieReport")
    figures = page.evaluate(FIGURES_JS)
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    assert not errors, errors
    assert state["failed"] == [] and state["drawn"] == state["figures"] == len(figures) > 0, state
    for f in figures:
        assert f["drawnTraces"] == f["traces"], f
        if f["marks"] is not None:
            assert f["points"] == f["marks"], f
    return figures, outside


def doc_shot(browser: Any, path: Path, dest: Path, figure: str | None = None) -> None:
    """A picture for the docs: the top of the page, or one figure (by its title)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_function("() => window.magpieReport && window.magpieReport.done", timeout=60_000)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if figure is None:
        page.screenshot(path=str(dest))
    else:
        page.locator(f"div.fig[data-title^='{figure}']").first.screenshot(path=str(dest))
    context.close()


def by_title(figures: list[dict[str, Any]], start: str) -> dict[str, Any]:
    return next(f for f in figures if f["title"].startswith(start))


def test_gap_report(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    summary = json.loads((runs["gap"] / "gap_analysis.json").read_text())
    figures, _ = open_report(browser, runs["gap"] / "report.html", tmp_path / "gap.png")
    assert by_title(figures, "top 12 kernels")["points"] == 12 == len(summary["top_kernels"])
    gaps = sum(len(d["largest_gaps"]) for r in summary["ranks"] for d in r["devices"])
    timeline = by_title(figures, "GPU busy / idle timeline")
    assert timeline["points"] == gaps > 0 and timeline["traces"] == 2  # busy heatmap + gap markers
    devices = sum(len(r["devices"]) for r in summary["ranks"])
    assert by_title(figures, "per-rank busy and idle")["points"] == 2 * devices


def test_gap_report_offline(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    """With the network cut the page draws the same, and asks for nothing outside the file."""
    figures, outside = open_report(browser, runs["gap_one"] / "report.html", tmp_path / "offline.png", offline=True)
    assert outside == [] and len(figures) >= 3
    if UPDATE_DOCS:
        doc_shot(browser, runs["gap_one"] / "report.html", DOC_IMAGES / "report-gap.png")
    html = (runs["gap_one"] / "report.html").read_text()
    assert "cdn." not in html.split("<script>", 1)[0] and html.count("Plotly=") <= 2  # one embedded plotly.js


def test_inference_report(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    summary = json.loads((runs["inference"] / "inference_summary.json").read_text())
    figures, _ = open_report(browser, runs["inference"] / "report.html", tmp_path / "inference.png")
    (trace,) = summary["traces"]
    assert trace["spec"]["name"] == "H200"
    for stage in trace["stages"]:
        roof = by_title(figures, f"roofline: {stage} on H200")
        assert roof["points"] > 0 and roof["traces"] >= 3  # points by bound + HBM roof + a compute roof
    assert by_title(figures, "iteration time")["points"] == trace["iterations"]
    if UPDATE_DOCS:
        doc_shot(browser, runs["inference"] / "report.html", DOC_IMAGES / "report-roofline.png", "roofline: decode")


def test_benchmark_report(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    report = json.loads((runs["benchmark"] / "benchmark_report.json").read_text())
    figures, _ = open_report(browser, runs["benchmark"] / "report.html", tmp_path / "benchmark.png")
    assert by_title(figures, "latency distributions")["traces"] == 4 * len(report["points"]) == 8
    assert by_title(figures, "throughput vs load")["points"] == 3 * 2  # tok/s, req/s, goodput at 2 points
    assert by_title(figures, "latency vs throughput")["traces"] == 4
    assert by_title(figures, "request timeline")["points"] == report["points"][-1]["metrics"]["completed"]


def test_compare_report(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    report = json.loads((runs["compare"] / "compare_report.json").read_text())
    figures, _ = open_report(browser, runs["compare"] / "report.html", tmp_path / "compare.png")
    assert by_title(figures, "median per candidate")["points"] == len(report["ranking"]) == 2
    html = (runs["compare"] / "report.html").read_text()
    assert report["verdict"].split(":")[0] in html and "partial_write" in html and "Not ranked" in html


def test_analyze_report(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    figures, _ = open_report(browser, runs["analyze"] / "report.html", tmp_path / "analyze.png")
    assert by_title(figures, "median per kernel")["points"] == 1  # the wrong kernel is not timed
    html = (runs["analyze"] / "report.html").read_text()
    assert "1 of 2 kernel(s) passed correctness" in html and "testcase_fails" in html


def test_report_command_side_by_side(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    """``magpie report A B``: one page, both runs, the kernel deltas of B against A."""
    out = tmp_path / "both.html"
    magpie("report", str(runs["gap_one"]), str(runs["gap"] / "gap_analysis.json"), "-o", str(out))
    figures, _ = open_report(browser, out, tmp_path / "both.png")
    delta = by_title(figures, "kernel time before → after")
    assert delta["traces"] == 2 and delta["points"] > 0
    assert "Before → after: kernels" in out.read_text()


def test_report_output_is_a_folder_as_for_every_command(runs: dict[str, Path], tmp_path: Path) -> None:
    """Issue 46: ``-o`` is a folder everywhere (``report -o`` was the page itself); a ``.html`` path still names
    the page."""
    magpie("report", str(runs["gap_one"]), "-o", str(tmp_path / "pages"))
    assert (tmp_path / "pages" / "report.html").is_file()


def test_report_command_two_inference_runs(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    """``magpie report A B`` of two inference runs: per-stage numbers and per-op kernel time of B against A.
    B is A's workspace moved (file names only in its summary) with the decode stage's largest op halved."""
    after = tmp_path / "after"
    shutil.copytree(runs["inference"], after)
    summary = json.loads((after / "inference_summary.json").read_text())
    decode = summary["traces"][0]["stages"]["decode_only"]
    for stage in summary["traces"][0]["stages"].values():
        stage["roofline_csv"] = Path(stage["roofline_csv"]).name
    decode["timeline"]["mean_step_time_us"] *= 0.8
    (after / "inference_summary.json").write_text(json.dumps(summary))
    roof = after / decode["roofline_csv"]
    with roof.open(newline="") as f:
        rows = list(csv.DictReader(f))
    top = max(rows, key=lambda r: float(r["kernel_time_ms_sum"] or 0))
    top["kernel_time_ms_sum"] = str(float(top["kernel_time_ms_sum"]) / 2)
    with roof.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "inference_both.html"
    magpie("report", str(runs["inference"]), str(after), "-o", str(out))
    figures, _ = open_report(browser, out, tmp_path / "inference_both.png")
    for stage in summary["traces"][0]["stages"]:
        delta = by_title(figures, f"op kernel time before → after: {stage}")
        assert delta["traces"] == 2 and delta["points"] > 0
    ops = len({r["op_name"] for r in rows})
    assert by_title(figures, "op kernel time before → after: decode_only")["points"] == 2 * min(ops, 20)
    text = out.read_text()
    assert "Before → after: inference stages" in text and "steady-state step time" in text
    assert f"1. {top['op_name']}"[:40] in text  # the halved op is the largest change: the first bar


HOSTILE = "<img src=x onerror=alert(1)>scale<int>&co"


def test_hostile_kernel_names_stay_text(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    """A trace is untrusted: a kernel name with markup is shown as text, never run (no dialog, no error)."""
    data = json.loads((runs["gap_one"] / "gap_analysis.json").read_text())
    data["top_kernels"][0]["name"] = data["top_kernels"][0]["function"] = HOSTILE
    data["ranks"][0]["devices"][0]["largest_gaps"][0]["after"] = HOSTILE
    src = tmp_path / "gap_analysis.json"
    src.write_text(json.dumps(data))
    out = tmp_path / "hostile.html"
    magpie("report", str(src), "-o", str(out))
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(out.as_uri())
    page.wait_for_function("() => window.magpieReport && window.magpieReport.done", timeout=60_000)
    ticks = page.evaluate("() => Array.from(document.querySelectorAll('.ytick text')).map(t => t.textContent)")
    cells = page.evaluate("() => Array.from(document.querySelectorAll('td')).map(t => t.textContent)")
    context.close()
    assert dialogs == [] and "<img" not in out.read_text().split("<script>", 1)[0]
    assert any("scale<int>&co" in t for t in ticks), ticks
    assert any(HOSTILE in c for c in cells)


def test_benchmark_with_trace_analysis(runs: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    """A diagnostic benchmark's report carries its gap analysis: the page has both plugins' sections."""
    report = json.loads((runs["benchmark"] / "benchmark_report.json").read_text())
    report["gap_analysis"] = json.loads((runs["gap_one"] / "gap_analysis.json").read_text())
    src = tmp_path / "benchmark_report.json"
    src.write_text(json.dumps(report))
    magpie("report", str(src))
    figures, _ = open_report(browser, tmp_path / "report.html", tmp_path / "bench_gap.png")
    assert by_title(figures, "latency distributions") and by_title(figures, "top 12 kernels")


def test_kernelbench_report(browser: Any, tmp_path: Path) -> None:
    """``magpie kernelbench run``'s page: the pytorch plugin's sections, drawn with this plugin's kit."""
    from magpie_core.report_pages import write_report_html

    kernelbench_run = pytest.importorskip("magpie_kernels_pytorch.kernelbench_run")

    def row(problem: str, solution: str, correct: bool, speedup: float | None, verdict: str | None) -> dict[str, Any]:
        ci = [speedup * 0.9, speedup * 1.1] if speedup else None
        return {
            "problem": problem,
            "solution": f"sols/{problem}/{solution}",
            "compiled": solution != "broken.py",
            "correct": correct,
            "build_s": 12.5 if solution == "broken.py" else None,
            "runtime_us": 5.0,
            "ref_runtime_us": 10.0,
            "speedup": speedup,
            "speedup_ci95": ci,
            "verdict": verdict,
            "message": "",
        }

    rows = [
        row("relu", "fast.py", True, 2.5, "FASTER"),
        row("relu", "broken.py", False, None, None),
        row("gelu", "<img src=x>noisy.py", True, 1.2, "UNSTABLE"),
    ]
    page = write_report_html("kernelbench", kernelbench_run.summary(rows), tmp_path)
    assert page is not None
    figures, _ = open_report(browser, page, tmp_path / "kernelbench.png")
    assert by_title(figures, "fast_p")["traces"] == 2  # KernelBench's and verified
    html = page.read_text()
    assert "fast_p per problem" in html and "Problem x solution" in html and "&lt;img src=x&gt;noisy.py" in html
