"""analyze and compare: verdict banner, medians with 95% CI whiskers by verdict, sample distributions,
correctness with the first failure, unranked candidates and why; before/after deltas for ``magpie report A B``."""

from __future__ import annotations

from typing import Any

from magpie_report.kit import Figure, Kit, Section, Table

STATUS_TONE = {"passed": "good", "failed": "bad", "error": "bad", "not_run": "warn"}


def _results(report: dict[str, Any]) -> list[dict[str, Any]]:
    res = report.get("results")
    return res.get("kernel_results", []) if isinstance(res, dict) else list(res or [])


def _timing(r: dict[str, Any]) -> dict[str, Any] | None:
    return (r.get("performance") or {}).get("timing")


def median_figure(kit: Kit, rows: list[tuple[str, dict[str, Any], str]], title: str) -> Figure:
    """Horizontal bars of medians with 95% CI whiskers; ``rows``: (kernel, timing, colour key), one trace per key."""
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name, t, key in rows:
        groups.setdefault(key, []).append((name, t))
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": key,
            "y": [n for n, _ in items],
            "x": [t["median"] for _, t in items],
            "error_x": {
                "type": "data",
                "symmetric": False,
                "array": [t["ci95_high"] - t["median"] for _, t in items],
                "arrayminus": [t["median"] - t["ci95_low"] for _, t in items],
            },
            "marker": {"color": kit.tone(key)},
            "customdata": [[t["ci95_low"], t["ci95_high"], t.get("samples")] for _, t in items],
            "hovertemplate": "%{y}<br>median %{x:.3f} µs<br>95% CI %{customdata[0]:.3f}–%{customdata[1]:.3f} µs"
            "<br>n=%{customdata[2]}<extra>%{fullData.name}</extra>",
        }
        for key, items in groups.items()
    ]
    order = [name for name, _, _ in rows]
    layout = {
        "xaxis": {"title": {"text": "median time (µs), whiskers: 95% CI"}, "rangemode": "tozero"},
        "yaxis": {"categoryorder": "array", "categoryarray": order[::-1], "automargin": True},
        "barmode": "overlay",
    }
    return kit.figure(data, layout, title=title, height=120 + 34 * len(rows))


def samples_figure(kit: Kit, results: list[dict[str, Any]]) -> Figure | None:
    """One box (with points) per kernel that kept its timing samples."""
    data = []
    for i, r in enumerate(results):
        samples = (r.get("performance") or {}).get("samples_us")
        if samples:
            data.append(
                {
                    "type": "box",
                    "name": r["kernel_id"],
                    "x": samples,
                    "boxpoints": "all" if len(samples) <= 400 else "outliers",
                    "jitter": 0.4,
                    "pointpos": 0,
                    "marker": {"size": 3, "color": kit.palette[i % len(kit.palette)]},
                    "hovertemplate": "%{x:.3f} µs<extra>%{fullData.name}</extra>",
                }
            )
    if not data:
        return None
    layout = {"xaxis": {"title": {"text": "time per launch (µs)"}}, "yaxis": {"automargin": True}, "showlegend": False}
    return kit.figure(data, layout, title="timing samples", height=120 + 40 * len(data))


def correctness_table(kit: Kit, results: list[dict[str, Any]]) -> Table:
    rows, tones = [], []
    for r in results:
        c = r.get("correctness") or {}
        status = c.get("status", "")
        first = c.get("message") or ""
        failed_trials = [d for d in c.get("details") or [] if not d.get("ok", True)]
        if failed_trials and failed_trials[0].get("problems"):
            first = f"trial {failed_trials[0].get('trial')}: {failed_trials[0]['problems'][0]}"
        rows.append(
            [
                r["kernel_id"],
                r.get("kernel_type", ""),
                (r.get("compile") or {}).get("status", ""),
                status,
                c.get("method") or "",
                c.get("trials", 0),
                first if status != "passed" else (c.get("message") or ""),
            ]
        )
        tones.append(STATUS_TONE.get(status))
    columns = ["kernel", "type", "compile", "correctness", "method", "trials", "first failure (index) / note"]
    return kit.table(columns, rows, title="correctness", tones=tones)


def _verdict_tone(report: dict[str, Any]) -> str:
    verdicts = {e.get("verdict") for e in report.get("ranking", [])}
    if "UNSTABLE" in verdicts:
        return "warn"
    if report.get("winner_id") and report.get("winner_id") != report.get("baseline_id") and "FASTER" in verdicts:
        return "good"
    return "bad" if report.get("unranked") and not report.get("ranking") else "neutral"


def speedup_figure(kit: Kit, ranking: list[dict[str, Any]], min_effect: float) -> Figure | None:
    rows = [e for e in ranking if e.get("speedup") is not None and e.get("verdict") != "BASELINE"]
    if not rows:
        return None
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": e.get("verdict") or "",
            "x": [e["speedup"]],
            "y": [e["kernel_id"]],
            "error_x": {
                "type": "data",
                "symmetric": False,
                "array": [(e.get("speedup_ci95") or [e["speedup"]] * 2)[1] - e["speedup"]],
                "arrayminus": [e["speedup"] - (e.get("speedup_ci95") or [e["speedup"]] * 2)[0]],
            },
            "marker": {"size": 11, "color": kit.tone(e.get("verdict"))},
            "showlegend": False,
            "hovertemplate": "%{y}: %{x:.3f}x<extra>" + (e.get("verdict") or "") + "</extra>",
        }
        for e in rows
    ]
    band = {"type": "rect", "xref": "x", "yref": "paper", "x0": 1 - min_effect, "x1": 1 + min_effect, "y0": 0, "y1": 1}
    band.update({"fillcolor": "#7f7f7f", "opacity": 0.15, "line": {"width": 0}})
    layout = {
        "xaxis": {"title": {"text": "speedup vs baseline (>1 faster), whiskers: 95% CI"}},
        "yaxis": {"automargin": True},
        "shapes": [band, {"type": "line", "xref": "x", "yref": "paper", "x0": 1, "x1": 1, "y0": 0, "y1": 1}],
    }
    note = f"grey band: ±{min_effect:.0%}, the smallest effect called FASTER/SLOWER"
    return kit.figure(data, layout, title="speedup", note=note, height=120 + 40 * len(rows))


def compare_sections(page: Any) -> list[Section]:
    kit, report = page.kit, page.report
    results = _results(report)
    ranking = report.get("ranking", [])
    stability = (report.get("stability") or {}).get("message", "")
    banner = kit.banner(report.get("verdict", ""), _verdict_tone(report), stability)
    facts = kit.metrics(
        [
            ("baseline", report.get("baseline_id")),
            ("winner", report.get("winner_id") or "none"),
            ("ranked", len(ranking)),
            ("not ranked", len(report.get("unranked", []))),
            ("timing", (report.get("settings") or {}).get("timing")),
        ]
    )
    by_id = {r["kernel_id"]: r for r in results}
    rows = [(e["kernel_id"], _timing(by_id.get(e["kernel_id"], {})), e.get("verdict") or "") for e in ranking]
    rows = [(n, t, k) for n, t, k in rows if t]
    min_effect = float((report.get("settings") or {}).get("min_effect") or 0.02)
    out = [
        kit.section("Verdict", banner, facts),
        kit.section(
            "Medians and confidence",
            median_figure(kit, rows, "median per candidate, coloured by verdict") if rows else None,
            speedup_figure(kit, ranking, min_effect),
            samples_figure(kit, results),
        ),
        kit.section("Correctness", correctness_table(kit, results)),
    ]
    unranked = report.get("unranked") or []
    if unranked:
        table = kit.table(["kernel", "why not ranked"], [[u.get("kernel_id"), u.get("reason")] for u in unranked])
        out.append(kit.section("Not ranked", table, summary="candidates left out of the ranking, and why"))
    return out


def analyze_sections(page: Any) -> list[Section]:
    kit, report = page.kit, page.report
    results = report.get("results") or []
    passed = sum(1 for r in results if (r.get("correctness") or {}).get("status") == "passed")
    tone = "good" if results and passed == len(results) else ("bad" if passed < len(results) else "neutral")
    banner = kit.banner(f"{passed} of {len(results)} kernel(s) passed correctness", tone)
    rows = [(r["kernel_id"], _timing(r), (r.get("correctness") or {}).get("status", "")) for r in results]
    rows = [(n, t, k) for n, t, k in rows if t]
    notes = [f"{r['kernel_id']}: {n}" for r in results for n in (r.get("performance") or {}).get("notes", [])]
    errors = [f"{r['kernel_id']}: {e}" for r in results for e in (r.get("errors") or [])[:2]]
    return [
        kit.section("Summary", banner, kit.bullets(errors, "bad"), kit.bullets(notes)),
        kit.section(
            "Timing",
            median_figure(kit, rows, "median per kernel, coloured by correctness") if rows else None,
            samples_figure(kit, results),
        ),
        kit.section("Correctness", correctness_table(kit, results)),
    ]


def delta_sections(page: Any) -> list[Section]:
    """Kernels in both runs: before/after medians, speedup with CI and the verdict magpie's statistics give."""
    from magpie_core.measurement.stats import speedup

    kit = page.kit
    before = {r["kernel_id"]: r for r in _results(page.before.report)}
    rows, tones, points = [], [], []
    for r in _results(page.report):
        old = before.get(r["kernel_id"])
        a, b = _timing(old or {}), _timing(r)
        if not a or not b:
            continue
        sa, sb = (old or {}).get("performance", {}).get("samples_us"), r["performance"].get("samples_us")
        if sa and sb and len(sa) >= 3 and len(sb) >= 3:
            s = speedup(sa, sb)
            verdict, ci = s.verdict.value, f"{s.ci_low:.3f}–{s.ci_high:.3f}"
            points.append((r["kernel_id"], s.value, s.ci_low, s.ci_high, verdict))
        else:
            verdict, ci = "no samples: no verdict", ""
        rows.append(
            [r["kernel_id"], a["median"], b["median"], a["median"] / b["median"] if b["median"] else None, ci, verdict]
        )
        tones.append({"FASTER": "good", "SLOWER": "bad", "UNSTABLE": "warn"}.get(verdict))
    if not rows:
        return []
    table = kit.table(
        ["kernel", "before median µs", "after median µs", "speedup", "95% CI", "verdict"], rows, tones=tones
    )
    ranking = [
        {"kernel_id": k, "speedup": v, "speedup_ci95": [lo, hi], "verdict": verdict} for k, v, lo, hi, verdict in points
    ]
    summary = "before = the first run given; runs timed separately, so the verdict uses independent samples"
    return [kit.section("Before → after", speedup_figure(kit, ranking, 0.02), table, summary=summary)]
