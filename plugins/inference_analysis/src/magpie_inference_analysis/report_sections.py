"""Sections of ``report.html`` for inference analysis: stage breakdown, iteration time series with the
steady-state window shaded, and the roofline (arithmetic intensity vs achieved TFLOP/s, log–log, with the
GPU spec's compute and memory ceilings; one point per op, sized by time, coloured by bound); for ``magpie report
A B``, per-stage and per-op kernel-time deltas and the steady-state step time of B against A.

Drawn with the report plugin's kit (``page.kit``), handed over by the section hook.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

BOUNDS = ("compute", "memory", "no spec")


def inference_data(page: Any) -> dict[str, Any] | None:
    """The summary of an ``inference`` run, or a benchmark's ``tracelens_analysis`` block when it has traces."""
    if page.kind == "inference":
        return page.report
    block = page.report.get("tracelens_analysis") if page.kind == "benchmark" else None
    return block if isinstance(block, dict) and block.get("traces") else None


def _rows(kit: Any, path: str | None, workspace: Path | None) -> list[dict[str, str]]:
    found = kit.resolve(path, workspace)
    if found is None:
        return []
    with found.open(newline="") as f:
        return list(csv.DictReader(f))


def _num(x: str | None) -> float | None:
    try:
        v = float(x) if x not in (None, "") else None
    except ValueError:
        return None
    return v if v is not None and math.isfinite(v) else None


def stage_figure(kit: Any, stages: dict[str, Any]) -> Any:
    """Kernel time per stage, split by what bounds it (compute, memory) and what has no model."""
    names = list(stages)
    comp = [stages[s]["bound_time_us"].get("compute", 0.0) / 1000.0 for s in names]
    mem = [stages[s]["bound_time_us"].get("memory", 0.0) / 1000.0 for s in names]
    rest = [max(0.0, stages[s]["kernel_time_us"] / 1000.0 - c - m) for s, c, m in zip(names, comp, mem, strict=True)]
    data = [
        {"type": "bar", "name": "compute-bound", "x": names, "y": comp, "marker": {"color": kit.tone("compute")}},
        {"type": "bar", "name": "memory-bound", "x": names, "y": mem, "marker": {"color": kit.tone("memory")}},
        {"type": "bar", "name": "no model / no spec", "x": names, "y": rest, "marker": {"color": "#bbbbbb"}},
    ]
    layout = {"barmode": "stack", "yaxis": {"title": {"text": "kernel time in the steady-state window (ms)"}}}
    return kit.figure(data, layout, title="stage breakdown", height=340)


def iterations_figure(kit: Any, rows: list[dict[str, str]]) -> Any | None:
    """Step time per iteration, one trace per phase, the steady-state window shaded."""
    if not rows:
        return None
    phases: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        phases.setdefault(r["phase"], []).append(r)
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": phase,
            "x": [int(r["iteration"]) for r in rs],
            "y": [_num(r["step_time_us"]) for r in rs],
            "customdata": [[r["gpu_busy_us"], r["kernels"], r["annotation"]] for r in rs],
            "hovertemplate": "iteration %{x}: %{y:.1f} µs<br>GPU busy %{customdata[0]} µs, %{customdata[1]} kernels"
            "<br>%{customdata[2]}<extra>%{fullData.name}</extra>",
        }
        for phase, rs in phases.items()
    ]
    shapes = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": int(r["iteration"]) - 0.5,
            "x1": int(r["iteration"]) + 0.5,
            "y0": 0,
            "y1": 1,
            "fillcolor": "#2c7fb8",
            "opacity": 0.12,
            "line": {"width": 0},
            "layer": "below",
        }
        for r in rows
        if r.get("in_window") in ("True", "true", "1")
    ]
    layout = {
        "xaxis": {"title": {"text": "iteration"}},
        "yaxis": {"title": {"text": "step time (µs)"}},
        "shapes": shapes,
    }
    note = "shaded: the steady-state window the tables average over"
    return kit.figure(data, layout, title="iteration time", note=note, height=340)


def roofline_figure(kit: Any, rows: list[dict[str, str]], spec: dict[str, Any] | None, stage: str) -> Any | None:
    """Log–log roofline: one point per modelled op, area by kernel time, colour by bound; the spec's ceilings."""
    pts = [
        r for r in rows if _num(r.get("arithmetic_intensity_flops_per_byte")) and _num(r.get("achieved_tflops_mean"))
    ]
    if not pts:
        return None
    data = _op_points(kit, pts)
    xs = [_num(r["arithmetic_intensity_flops_per_byte"]) or 1.0 for r in pts]
    lo, hi = min(xs) / 4, max(xs) * 4
    if spec:
        data += _ceilings(spec, {r.get("compute_spec") for r in pts if r.get("compute_spec")}, lo, hi)
    layout = {
        "xaxis": {"type": "log", "title": {"text": "arithmetic intensity (FLOP/byte)"}},
        "yaxis": {"type": "log", "title": {"text": "achieved TFLOP/s"}},
    }
    title = f"roofline: {stage}" + (f" on {spec['name']}" if spec else " (no GPU spec: no ceilings)")
    note = "point area ∝ kernel time; lines: memory ceiling (HBM bandwidth) and the compute peaks the ops use"
    return kit.figure(data, layout, title=title, note=note, height=460)


def _op_points(kit: Any, pts: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One marker trace per bound (compute, memory, no spec): a point per op, area by its kernel time."""
    biggest = max(_num(r["kernel_time_ms_sum"]) or 0.0 for r in pts) or 1.0
    data = []
    for bound in BOUNDS:
        sel = [r for r in pts if (r.get("roofline_bound") or "no spec") == bound]
        if not sel:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{bound}-bound" if bound != "no spec" else "no spec",
                "x": [_num(r["arithmetic_intensity_flops_per_byte"]) for r in sel],
                "y": [_num(r["achieved_tflops_mean"]) for r in sel],
                "marker": {
                    "size": [6 + 34 * math.sqrt((_num(r["kernel_time_ms_sum"]) or 0.0) / biggest) for r in sel],
                    "color": kit.tone(bound, "#888888"),
                    "opacity": 0.75,
                    "line": {"width": 1, "color": "#333"},
                },
                "customdata": [
                    [
                        r["op_name"],
                        r["source_category"],
                        r["kernel_time_ms_sum"],
                        r["time_pct"],
                        r.get("pct_roofline_mean") or "-",
                        kit.short(r.get("param_signature") or "", 90),
                    ]
                    for r in sel
                ],
                "hovertemplate": "%{customdata[0]} (%{customdata[1]})<br>AI %{x:.3g} FLOP/B, %{y:.3g} TFLOP/s<br>"
                "%{customdata[2]} ms (%{customdata[3]}% of stage), %{customdata[4]}% of roofline<br>"
                "%{customdata[5]}<extra></extra>",
            }
        )
    return data


def _ceilings(spec: dict[str, Any], keys: set[str], lo: float, hi: float) -> list[dict[str, Any]]:
    """The memory roof (TB/s × AI) and one flat compute roof per peak the ops were compared with."""
    bw = float(spec["hbm_bandwidth_tbps"])
    peaks = []
    for key in sorted(keys) or ["matrix_bf16"]:
        kind, _, dtype = key.partition("_")
        value = (spec.get(f"{kind}_tflops") or {}).get(dtype)
        if value:
            peaks.append((key, float(value)))
    knee = max((p for _, p in peaks), default=bw * hi) / bw  # where the highest compute roof meets the memory roof
    right = max(hi, 2 * knee)
    out = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"HBM {bw:g} TB/s",
            "x": [lo, knee],
            "y": [bw * lo, bw * knee],
            "line": {"color": "#444", "width": 2},
            "hoverinfo": "name",
        }
    ]
    for key, peak in peaks:
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{key} {peak:g} TFLOP/s",
                "x": [peak / bw, right],
                "y": [peak, peak],
                "line": {"dash": "dash", "width": 1.5},
                "hoverinfo": "name",
            }
        )
    return out


def top_ops_table(kit: Any, rows: list[dict[str, str]]) -> Any:
    cols = [
        "op_name",
        "source_category",
        "operation_count",
        "kernel_time_ms_sum",
        "time_pct",
        "arithmetic_intensity_flops_per_byte",
        "achieved_tflops_mean",
        "achieved_tbps_mean",
        "roofline_bound",
        "pct_roofline_mean",
    ]
    body = [[r.get(c, "") for c in cols] for r in rows[:15]]
    return kit.table(
        ["op", "category", "count", "ms", "% stage", "FLOP/B", "TFLOP/s", "TB/s", "bound", "% roofline"],
        body,
        title="top ops",
    )


def sections(page: Any) -> list[Any]:
    data = inference_data(page)
    if data is None or page.kit is None:
        return []
    kit, out = page.kit, []
    for tr in data.get("traces", []):
        iters = _rows(kit, tr.get("iterations_csv"), page.workspace)
        spec = tr.get("spec")
        head = kit.metrics(
            [
                ("trace", Path(tr["trace_file"]).name),
                ("iterations", tr.get("iterations")),
                ("phases", ", ".join(f"{k} {v}" for k, v in (tr.get("phases") or {}).items())),
                ("engine", tr.get("engine")),
                ("GPU spec", spec["name"] if spec else "none"),
            ]
        )
        items = [head, kit.bullets(tr.get("notes") or [])]
        if tr.get("stages"):
            items.append(stage_figure(kit, tr["stages"]))
        items.append(iterations_figure(kit, iters))
        out.append(kit.section(f"Inference stages: {Path(tr['trace_file']).name}", *items))
        for stage, st in (tr.get("stages") or {}).items():
            roof = _rows(kit, st.get("roofline_csv"), page.workspace)
            summary = (
                f"{len(st['window_iterations'])} of {st['iterations']} iterations ({st['window_choice']}); "
                f"modelled {st['modelled_kernel_time_pct']}% of kernel time"
            )
            out.append(
                kit.section(
                    f"Roofline: {stage}",
                    roofline_figure(kit, roof, spec, stage),
                    top_ops_table(kit, roof),
                    summary=summary,
                )
            )
    errors = data.get("errors") or []
    if errors:
        out.append(kit.section("Inference analysis errors", kit.bullets(errors, "bad")))
    before = inference_data(page.before) if page.before is not None else None
    if before is not None:
        out += delta_sections(kit, before, data, page)
    return out


#: per-stage numbers compared before → after: (label, where in the stage summary)
STAGE_DELTAS = (
    ("steady-state step time (µs)", ("timeline", "mean_step_time_us")),
    ("GPU busy per step (µs)", ("timeline", "mean_gpu_busy_us")),
    ("kernel time in the window (µs)", ("kernel_time_us",)),
    ("tokens/s", ("timeline", "tokens_per_s")),
)


def _dig(d: dict[str, Any], path: tuple[str, ...]) -> float | None:
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None  # type: ignore[assignment]
    return d if isinstance(d, (int, float)) and math.isfinite(d) else None  # type: ignore[return-value]


def _op_times(kit: Any, stage: dict[str, Any], workspace: Path | None) -> dict[str, float]:
    """Kernel time (ms) per op name in a stage's window (rows of one op with different shapes summed)."""
    out: dict[str, float] = {}
    for r in _rows(kit, stage.get("roofline_csv"), workspace):
        out[r["op_name"]] = out.get(r["op_name"], 0.0) + (_num(r.get("kernel_time_ms_sum")) or 0.0)
    return out


def stage_delta_table(kit: Any, a: dict[str, Any], b: dict[str, Any]) -> Any:
    """Each stage's steady-state numbers before and after, with the change in percent."""
    rows = []
    for stage in [s for s in b if s in a]:
        for label, path in STAGE_DELTAS:
            va, vb = _dig(a[stage], path), _dig(b[stage], path)
            if va is None or vb is None:
                continue
            rows.append([stage, label, va, vb, round((vb - va) / va * 100.0, 2) if va else None])
    return kit.table(["stage", "metric", "before", "after", "change %"], rows, title="stages")


def delta_sections(kit: Any, before: dict[str, Any], after: dict[str, Any], page: Any) -> list[Any]:
    """Before → after for each pair of traces (by position): stage numbers, then kernel time per op per stage."""
    out = []
    for ta, tb in zip(before.get("traces") or [], after.get("traces") or [], strict=False):
        a, b = ta.get("stages") or {}, tb.get("stages") or {}
        items = [stage_delta_table(kit, a, b)]
        for stage in [s for s in b if s in a]:
            fig, table = kit.before_after(
                _op_times(kit, a[stage], page.before.workspace),
                _op_times(kit, b[stage], page.workspace),
                title=f"op kernel time before → after: {stage}",
                what="op",
            )
            items += [fig, table]
        names = f"{Path(ta['trace_file']).name} → {Path(tb['trace_file']).name}"
        note = "one trace per run, steady-state window means: no verdict (a trace has no repeated samples)"
        out.append(kit.section(f"Before → after: inference stages ({names})", *items, summary=note))
    return out
