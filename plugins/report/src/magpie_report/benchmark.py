"""benchmark: headline metrics, TTFT/TPOT/ITL/E2EL distributions, sweep curves with SLO lines and goodput,
request timeline, client self-checks; before/after metric deltas for ``magpie report A B``."""

from __future__ import annotations

from typing import Any

from magpie_report.kit import Figure, Kit, Section

METRICS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2E latency"))
PCTS = (("min_ms", 0.0), ("median_ms", 50.0), ("p90_ms", 90.0), ("p95_ms", 95.0), ("p99_ms", 99.0), ("max_ms", 100.0))


def _point_label(p: dict[str, Any]) -> str:
    rate = p.get("request_rate")
    return f"conc {p.get('concurrency')}" + (f", {rate:g} req/s" if rate else "")


def _request_values(requests: list[dict[str, Any]], key: str) -> list[float]:
    ok = [r for r in requests if r.get("success")]
    if key == "ttft":
        return [r["ttft_ms"] for r in ok]
    if key == "e2el":
        return [r["e2el_ms"] for r in ok]
    if key == "itl":
        return [x for r in ok for x in r.get("itl_ms") or []]
    n = lambda r: r.get("output_tokens") or 0  # noqa: E731
    return [(r["e2el_ms"] - r["ttft_ms"]) / (n(r) - 1) for r in ok if n(r) > 1]


def distribution_figure(kit: Kit, points: list[dict[str, Any]]) -> Figure:
    """A 2x2 grid, one panel per metric, one curve per load point: the ECDF of every request when the report
    kept them (``load.save_requests``), else the percentiles the report has."""
    data = []
    for i, (key, label) in enumerate(METRICS):
        axis = "" if i == 0 else str(i + 1)
        for j, p in enumerate(points):
            if p.get("requests"):
                x, y = kit.ecdf(_request_values(p["requests"], key))
                mode = "lines"
            else:
                stats = p["metrics"][key]
                x, y, mode = [stats.get(k) for k, _ in PCTS], [q for _, q in PCTS], "lines+markers"
            data.append(
                {
                    "type": "scatter",
                    "mode": mode,
                    "line": {"shape": "hv" if mode == "lines" else "linear", "color": kit.palette[j % 10]},
                    "name": _point_label(p),
                    "legendgroup": _point_label(p),
                    "showlegend": i == 0,
                    "x": x,
                    "y": y,
                    "xaxis": f"x{axis}",
                    "yaxis": f"y{axis}",
                    "hovertemplate": f"{label} %{{x:.2f}} ms: %{{y:.1f}}th percentile<extra>%{{fullData.name}}</extra>",
                }
            )
    layout: dict[str, Any] = {"grid": {"rows": 2, "columns": 2, "pattern": "independent"}}
    for i, (_, label) in enumerate(METRICS):
        axis = "" if i == 0 else str(i + 1)
        layout[f"xaxis{axis}"] = {"title": {"text": f"{label} (ms)"}}
        layout[f"yaxis{axis}"] = {"title": {"text": "% of requests"}, "range": [0, 101]}
    exact = all(p.get("requests") for p in points)
    note = (
        "ECDF of every request"
        if exact
        else "percentiles (min, p50, p90, p95, p99, max); per-request CDFs need load.save_requests"
    )
    return kit.figure(data, layout, title="latency distributions", note=note, height=620)


def _slo_shapes(slo: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = slo.get(f"{key}_ms")
    if value is None:
        return []
    line = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": value, "y1": value}
    line["line"] = {"dash": "dash", "color": "#d73027"}
    return [line]


def _line(name: str, x: list[Any], y: list[Any], axis: str = "y", dash: str = "solid") -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": x,
        "y": y,
        "yaxis": axis,
        "line": {"dash": dash},
    }


def throughput_figure(kit: Kit, points: list[dict[str, Any]]) -> Figure:
    """Output tokens/s, requests/s and (with SLOs) goodput against the concurrency or the request rate."""
    by_rate = all(p.get("concurrency") is None for p in points)
    x = [p.get("request_rate") if by_rate else p.get("concurrency") for p in points]
    m = [p["metrics"] for p in points]
    data = [
        _line("output tok/s", x, [v["output_throughput"] for v in m]),
        _line("requests/s", x, [v["request_throughput"] for v in m], "y2"),
    ]
    if any(v.get("request_goodput") is not None for v in m):
        data.append(_line("goodput (req/s in SLO)", x, [v.get("request_goodput") for v in m], "y2", "dot"))
    layout = {
        "xaxis": {"title": {"text": "request rate (req/s)" if by_rate else "concurrency"}},
        "yaxis": {"title": {"text": "output tokens/s"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "requests/s"}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
    }
    return kit.figure(data, layout, title="throughput vs load")


def latency_figure(kit: Kit, points: list[dict[str, Any]], slo: dict[str, Any]) -> Figure:
    """TTFT and TPOT (median, p99) against output throughput: the latency–throughput curve, SLOs dashed."""
    m = [p["metrics"] for p in points]
    xs = [v["output_throughput"] for v in m]
    data = []
    for key, label in (("ttft", "TTFT"), ("tpot", "TPOT")):
        for stat, dash in (("median_ms", "solid"), ("p99_ms", "dot")):
            line = _line(
                f"{label} {stat.split('_')[0]}", xs, [v[key][stat] for v in m], "y" if key == "ttft" else "y2", dash
            )
            line["text"] = [_point_label(p) for p in points]
            line["hovertemplate"] = "%{text}<br>%{x:.1f} tok/s: %{y:.2f} ms<extra>%{fullData.name}</extra>"
            data.append(line)
    shapes = [dict(s, yref="y") for s in _slo_shapes(slo, "ttft")] + [
        dict(s, yref="y2") for s in _slo_shapes(slo, "tpot")
    ]
    layout = {
        "xaxis": {"title": {"text": "output tokens/s"}},
        "yaxis": {"title": {"text": "TTFT (ms)"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "TPOT (ms)"}, "overlaying": "y", "side": "right", "rangemode": "tozero"},
        "shapes": shapes,
    }
    note = "dashed red: SLO limits" if shapes else "no SLO set (benchmark.slo)"
    return kit.figure(data, layout, title="latency vs throughput", note=note)


def timeline_figure(kit: Kit, requests: list[dict[str, Any]]) -> Figure | None:
    """One row per request: waiting for the first token, then streaming; a marker at each arrival."""
    ok = [r for r in requests if r.get("success")]
    if not ok:
        return None
    t0 = min(r["start_time_s"] for r in ok)
    wait_x: list[float | None] = []
    wait_y: list[int | None] = []
    stream_x: list[float | None] = []
    stream_y: list[int | None] = []
    for i, r in enumerate(ok):
        s = (r["start_time_s"] - t0) * 1000.0
        wait_x += [s, s + r["ttft_ms"], None]
        wait_y += [i, i, None]
        stream_x += [s + r["ttft_ms"], s + r["e2el_ms"], None]
        stream_y += [i, i, None]
    arrivals = [(r["start_time_s"] - t0) * 1000.0 for r in ok]
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "sent",
            "x": arrivals,
            "y": list(range(len(ok))),
            "marker": {"symbol": "line-ns-open", "size": 8},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "waiting for first token",
            "x": wait_x,
            "y": wait_y,
            "line": {"width": 3, "color": "#f39c12"},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "streaming",
            "x": stream_x,
            "y": stream_y,
            "line": {"width": 3, "color": "#2c7fb8"},
        },
    ]
    layout = {
        "xaxis": {"title": {"text": "time since the first request (ms)"}},
        "yaxis": {"title": {"text": "request"}},
    }
    return kit.figure(data, layout, title="request timeline (last load point)", height=min(900, 160 + 6 * len(ok)))


def _fmt(v: Any, unit: str = "") -> str:
    return "" if v is None else f"{v:,.2f}{unit}"


def sections(page: Any) -> list[Section]:
    kit, report = page.kit, page.report
    points = [p for p in report.get("points") or [] if (p.get("metrics") or {}).get("completed")]
    errors = report.get("errors") or []
    ok = report.get("success")
    banner = kit.banner(
        "benchmark succeeded" if ok else "benchmark failed", "good" if ok else "bad", "; ".join(errors[:3])
    )
    t, lat = report.get("throughput") or {}, report.get("latency") or {}
    head = kit.metrics(
        [
            ("framework", report.get("framework")),
            ("model", report.get("model")),
            ("requests", t.get("completed_requests")),
            ("requests/s", _fmt(t.get("request_throughput"))),
            ("output tok/s", _fmt(t.get("output_throughput"))),
            ("mean TTFT", _fmt((lat.get("ttft") or {}).get("mean_ms"), " ms")),
            ("mean TPOT", _fmt((lat.get("tpot") or {}).get("mean_ms"), " ms")),
            ("p99 E2E", _fmt((lat.get("e2el") or {}).get("p99_ms"), " ms")),
            ("goodput", _fmt(t.get("request_goodput"), " req/s")),
        ]
    )
    out = [kit.section("Headline", banner, head, kit.bullets(errors[3:], "bad"))]
    if not points:
        return out
    out.append(kit.section("Latency distributions", distribution_figure(kit, points)))
    if len(points) > 1:
        slo = (report.get("config") or {}).get("slo") or {}
        out.append(kit.section("Sweep", throughput_figure(kit, points), latency_figure(kit, points, slo)))
    if points[-1].get("requests"):
        out.append(kit.section("Requests", timeline_figure(kit, points[-1]["requests"])))
    out.append(kit.section("Load points and client self-checks", _points_table(kit, points)))
    return out


def _points_table(kit: Kit, points: list[dict[str, Any]]) -> Any:
    rows, tones = [], []
    for p in points:
        m, c = p["metrics"], p.get("client_checks") or {}
        rows.append(
            [
                _point_label(p),
                m["completed"],
                m["failed"],
                m["request_throughput"],
                m["output_throughput"],
                m["ttft"]["median_ms"],
                m["ttft"]["p99_ms"],
                m["tpot"]["median_ms"],
                m["tpot"]["p99_ms"],
                (c.get("schedule_lag") or {}).get("p99_ms"),
                "; ".join(c.get("warnings") or []) or "ok",
            ]
        )
        tones.append("warn" if c.get("warnings") else None)
    columns = [
        "load",
        "done",
        "failed",
        "req/s",
        "out tok/s",
        "TTFT p50 ms",
        "TTFT p99 ms",
        "TPOT p50 ms",
        "TPOT p99 ms",
        "client lag p99 ms",
        "client checks",
    ]
    return kit.table(columns, rows, tones=tones)


#: headline metrics compared before/after: (label, path, higher is better)
DELTAS = (
    ("requests/s", ("throughput", "request_throughput"), True),
    ("output tok/s", ("throughput", "output_throughput"), True),
    ("mean TTFT ms", ("latency", "ttft", "mean_ms"), False),
    ("p99 TTFT ms", ("latency", "ttft", "p99_ms"), False),
    ("mean TPOT ms", ("latency", "tpot", "mean_ms"), False),
    ("p99 TPOT ms", ("latency", "tpot", "p99_ms"), False),
    ("p99 E2E ms", ("latency", "e2el", "p99_ms"), False),
)


def _get(report: dict[str, Any], path: tuple[str, ...]) -> float | None:
    cur: Any = report
    for k in path:
        cur = cur.get(k) if isinstance(cur, dict) else None
    return cur if isinstance(cur, (int, float)) else None


def _latency_verdict(before: dict[str, Any], after: dict[str, Any], key: str) -> str:
    """magpie's speedup verdict on per-request samples when both runs kept them, else none."""
    from magpie_core.measurement.stats import speedup

    pa = [p for p in before.get("points") or [] if p.get("requests")]
    pb = [p for p in after.get("points") or [] if p.get("requests")]
    if not pa or not pb:
        return "no per-request samples: no verdict"
    a, b = _request_values(pa[-1]["requests"], key), _request_values(pb[-1]["requests"], key)
    if len(a) < 3 or len(b) < 3:
        return "too few requests: no verdict"
    s = speedup(a, b)
    return f"{s.verdict.value} ({s.value:.3f}x, 95% CI {s.ci_low:.3f}–{s.ci_high:.3f})"


def delta_sections(page: Any) -> list[Section]:
    kit, a, b = page.kit, page.before.report, page.report
    rows, tones = [], []
    for label, path, higher in DELTAS:
        va, vb = _get(a, path), _get(b, path)
        if va is None or vb is None:
            continue
        change = (vb - va) / va * 100.0 if va else None
        verdict = ""
        if path[0] == "latency" and path[-1] == "mean_ms":
            verdict = _latency_verdict(a, b, path[1])
        better = change is not None and ((change > 0) == higher) and abs(change) > 0.5
        rows.append([label, va, vb, None if change is None else round(change, 2), verdict])
        tones.append("good" if better else ("bad" if change and abs(change) > 0.5 else None))
    table = kit.table(["metric", "before", "after", "change %", "verdict (per-request samples)"], rows, tones=tones)
    return [kit.section("Before → after", table, summary="before = the first run given")]
