"""Sections of ``report.html`` for gap analysis: top kernels, time by category, per-device busy/idle timeline
with the largest gaps and their CPU op, per-rank comparison, kernel sources; kernel deltas between two runs.

Drawn with the report plugin's kit (``page.kit``), handed over by the section hook: this plugin neither
imports the report plugin nor a plotting library.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

TOP_BARS = 20


def gap_data(page: Any) -> dict[str, Any] | None:
    """The gap summary of a ``gap`` run, or the ``gap_analysis`` block of a benchmark's diagnostic run."""
    if page.kind == "gap":
        return page.report
    if page.kind == "benchmark" and isinstance(page.report.get("gap_analysis"), dict):
        return page.report["gap_analysis"]
    return None


def _label(k: dict[str, Any]) -> str:
    return k.get("function") or k["name"]


def top_kernels_figure(kit: Any, kernels: list[dict[str, Any]]) -> Any:
    """Horizontal bars, longest first, one trace per kernel category; hover shows the full name."""
    rows = kernels[:TOP_BARS]
    order = [f"{i + 1}. {kit.short(_label(k), 48)}" for i, k in enumerate(rows)]
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(rows):
        groups.setdefault(k.get("category") or "other", []).append(i)
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": cat,
            "y": [order[i] for i in idx],
            "x": [rows[i]["self_cuda_total_us"] / 1000.0 for i in idx],
            "marker": {"color": kit.color(cat)},
            "customdata": [
                [rows[i]["name"], rows[i]["calls"], rows[i]["avg_time_us"], rows[i]["pct_total"]] for i in idx
            ],
            "hovertemplate": "%{customdata[0]}<br>%{x:.3f} ms total, %{customdata[1]} calls, "
            "%{customdata[2]:.2f} µs avg, %{customdata[3]:.1f}% of kernel time<extra>%{fullData.name}</extra>",
        }
        for cat, idx in groups.items()
    ]
    layout = {
        "xaxis": {"title": {"text": "total kernel time (ms)"}},
        "yaxis": {"categoryorder": "array", "categoryarray": order[::-1], "automargin": True, "tickfont": {"size": 11}},
        "barmode": "overlay",
        "legend": {"title": {"text": "category"}},
    }
    title = f"top {len(rows)} kernels by total time"
    return kit.figure(data, layout, title=title, height=140 + 24 * len(rows))


def _all_kernel_rows(gap: dict[str, Any], workspace: Path | None, kit: Any) -> list[tuple[str, float]]:
    """(category, total µs) of every kernel: the all-kernels CSV when it is there, else the top-k rows."""
    path = kit.resolve(gap.get("full_csv_path"), workspace)
    if path is not None:
        with path.open(newline="") as f:
            lines = (line for line in f if not line.startswith("#"))
            return [
                (r.get("Kernel category") or "other", float(r["Self CUDA total (us)"])) for r in csv.DictReader(lines)
            ]
    return [(k.get("category") or "other", k["self_cuda_total_us"]) for k in gap.get("top_kernels", [])]


def category_figure(kit: Any, rows: list[tuple[str, float]]) -> Any:
    totals: dict[str, float] = {}
    for cat, us in rows:
        totals[cat] = totals.get(cat, 0.0) + us
    cats = sorted(totals, key=lambda c: -totals[c])
    data = [
        {
            "type": "bar",
            "x": cats,
            "y": [totals[c] / 1000.0 for c in cats],
            "marker": {"color": [kit.color(c) for c in cats]},
            "hovertemplate": "%{x}: %{y:.3f} ms<extra></extra>",
        }
    ]
    layout = {"yaxis": {"title": {"text": "kernel time (ms)"}}, "xaxis": {"title": {"text": "category"}}}
    return kit.figure(data, layout, title="kernel time by category", height=340)


def _devices(gap: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"rank {r['rank']} · {d['device']}", d) for r in gap.get("ranks", []) if r.get("ok") for d in r["devices"]]


def timeline_figure(kit: Any, gap: dict[str, Any]) -> Any | None:
    """A heatmap of busy share per time bin (one row per device) with the largest gaps marked on top."""
    devices = _devices(gap)
    with_bins = [(label, d) for label, d in devices if d.get("timeline", {}).get("busy_pct")]
    if not devices:
        return None
    data: list[dict[str, Any]] = []
    if with_bins:
        t0 = min(d["timeline"]["start_us"] for _, d in with_bins)
        n = max(len(d["timeline"]["busy_pct"]) for _, d in with_bins)
        width = max(d["timeline"]["bin_us"] for _, d in with_bins)
        data.append(
            {
                "type": "heatmap",
                "name": "GPU busy",
                "x": [(t0 + width * (i + 0.5)) / 1000.0 for i in range(n)],
                "y": [label for label, _ in with_bins],
                "z": [_rebin(d["timeline"], t0, width, n) for _, d in with_bins],
                "zmin": 0,
                "zmax": 100,
                "colorscale": [[0, "#d73027"], [0.5, "#fee08b"], [1, "#1a9850"]],
                "colorbar": {"title": {"text": "busy %"}, "len": 0.8},
                "hovertemplate": "%{y}<br>%{x:.3f} ms: %{z:.0f}% busy<extra></extra>",
            }
        )
    gx, gy, text, size = [], [], [], []
    for label, d in devices:
        for g in d.get("largest_gaps", []):
            gx.append((g["start_us"] + g["duration_us"] / 2) / 1000.0)
            gy.append(label)
            size.append(g["duration_us"])
            text.append(
                f"gap {g['duration_us']:.1f} µs at +{g['start_us'] / 1000:.3f} ms<br>CPU op: {g.get('cpu_op') or '-'}"
                f"<br>host bound: {g.get('host_bound')}<br>after: {kit.short(g.get('after') or '', 80)}"
            )
    biggest = max(size, default=1.0) or 1.0
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "largest gaps",
            "x": gx,
            "y": gy,
            "text": text,
            "hovertemplate": "%{text}<extra></extra>",
            "marker": {"symbol": "diamond", "color": "#000", "size": [8 + 14 * s / biggest for s in size]},
        }
    )
    layout = {"xaxis": {"title": {"text": "time since trace start (ms)"}}, "yaxis": {"automargin": True}}
    note = "colour: share of each time bin the device was busy; diamonds: the largest idle gaps (hover: CPU op)"
    return kit.figure(data, layout, title="GPU busy / idle timeline", note=note, height=180 + 60 * len(devices))


def _rebin(timeline: dict[str, Any], t0: float, width: float, n: int) -> list[float | None]:
    """A device's bins placed on the shared time grid (devices start at different times)."""
    out: list[float | None] = [None] * n
    for i, v in enumerate(timeline["busy_pct"]):
        j = int((timeline["start_us"] + timeline["bin_us"] * (i + 0.5) - t0) // width)
        if 0 <= j < n:
            out[j] = v if out[j] is None else max(out[j] or 0.0, v)
    return out


def gaps_table(kit: Any, gap: dict[str, Any]) -> Any:
    rows = [
        [
            label,
            g["start_us"] / 1000.0,
            g["duration_us"],
            g.get("host_bound"),
            g.get("cpu_op") or "",
            kit.short(g.get("before") or "", 90),
            kit.short(g.get("after") or "", 90),
        ]
        for label, d in _devices(gap)
        for g in d.get("largest_gaps", [])[:5]
    ]
    columns = ["device", "at (ms)", "gap (µs)", "host bound", "CPU op", "kernel before", "kernel after"]
    note = "five largest per device; full kernel names in gpu_gaps.csv and on the timeline's hover"
    return kit.table(columns, rows, title="largest gaps", note=note)


def ranks_figure(kit: Any, gap: dict[str, Any]) -> Any | None:
    devices = _devices(gap)
    if len({label.split(" · ")[0] for label, _ in devices}) < 2:
        return None
    labels = [label for label, _ in devices]
    data = [
        {
            "type": "bar",
            "name": "busy",
            "x": labels,
            "y": [d["busy_us"] / 1000.0 for _, d in devices],
            "marker": {"color": "#1a9850"},
        },
        {
            "type": "bar",
            "name": "idle",
            "x": labels,
            "y": [d["idle_us"] / 1000.0 for _, d in devices],
            "marker": {"color": "#d73027"},
        },
    ]
    layout = {"barmode": "stack", "yaxis": {"title": {"text": "ms in the active span"}}}
    return kit.figure(data, layout, title="per-rank busy and idle time", height=340)


def sources_table(kit: Any, kernels: list[dict[str, Any]]) -> Any | None:
    rows = [
        [
            kit.short(_label(k), 60),
            (k["source"] or {}).get("source_file") or "",
            (k["source"] or {}).get("line") or "",
            (k["source"] or {}).get("source_resolution") or "",
        ]
        for k in kernels
        if k.get("source")
    ]
    return kit.table(["kernel", "source file", "line", "resolution"], rows, title="kernel sources") if rows else None


def sections(page: Any) -> list[Any]:
    gap = gap_data(page)
    if gap is None or page.kit is None:
        return []
    kit = page.kit
    kernels = gap.get("top_kernels") or []
    head = kit.metrics(
        [
            ("ranks", gap.get("num_ranks")),
            ("kernel names", gap.get("num_kernel_names")),
            ("GPU busy", f"{gap.get('gpu_busy_us', 0) / 1000:.3f} ms"),
            ("GPU idle", f"{gap.get('gpu_idle_pct', 0):.1f}% of active span"),
            ("launch-bound", "yes" if gap.get("launch_bound") else "no"),
        ]
    )
    out = [
        kit.section(
            "Where the GPU time went",
            head,
            kit.bullets(gap.get("errors") or [], "bad"),
            top_kernels_figure(kit, kernels) if kernels else None,
            category_figure(kit, _all_kernel_rows(gap, page.workspace, kit)) if kernels else None,
        ),
        kit.section("GPU busy and idle", timeline_figure(kit, gap), ranks_figure(kit, gap), gaps_table(kit, gap)),
    ]
    src = sources_table(kit, kernels)
    if src is not None:
        out.append(kit.section("Kernel sources", src))
    before = gap_data(page.before) if page.before is not None else None
    if before is not None:
        out.append(delta_section(kit, before, gap))
    return out


def delta_section(kit: Any, before: dict[str, Any], after: dict[str, Any]) -> Any:
    """Kernel time before and after, largest changes first (kernels outside either top-k count as 0)."""
    a = {k["name"]: k for k in before.get("top_kernels") or []}
    b = {k["name"]: k for k in after.get("top_kernels") or []}
    fig, table = kit.before_after(
        {n: k["self_cuda_total_us"] / 1000.0 for n, k in a.items()},
        {n: k["self_cuda_total_us"] / 1000.0 for n, k in b.items()},
        title="kernel time before → after",
        top=TOP_BARS,
        labels={n: _label(k) for n, k in {**a, **b}.items()},
    )
    busy = (
        f"GPU busy {before.get('gpu_busy_us', 0) / 1000:.3f} → {after.get('gpu_busy_us', 0) / 1000:.3f} ms, "
        f"idle {before.get('gpu_idle_pct', 0):.1f}% → {after.get('gpu_idle_pct', 0):.1f}% of the active span"
    )
    return kit.section(
        "Before → after: kernels",
        kit.text(busy),
        fig,
        table,
        summary="one trace per run: no verdict, a trace has no repeated samples",
    )
