"""The steps of a loop: what each reads from its file and keeps in ``loop.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from magpie_loop.state import (
    STEPS,
    Artifact,
    CompareRecord,
    LoopError,
    LoopState,
    SelectedKernel,
    load_state,
    now,
    read_json,
    save_state,
)

E2E_NAME = "e2e_compare.json"
#: top kernels kept per analysis in the record (the analysis file has them all)
KEPT_KERNELS = 20


def add_step(
    loop_dir: Path,
    step: str,
    path: Path | None = None,
    *,
    kernel: str | None = None,
    source_file: str | None = None,
    allow_different_workload: bool = False,
) -> tuple[LoopState, str]:
    """Record one step; returns the new state and a one-line summary of what was recorded."""
    if step not in STEPS:
        raise LoopError(f"unknown step {step!r}: use one of {', '.join(STEPS)}")
    state = load_state(loop_dir)
    if step == "kernel":
        if not kernel and path is None:
            raise LoopError("kernel: give the kernel name")
        message = _add_kernel(state, kernel or str(path), source_file)
    else:
        if path is None:
            raise LoopError(f"{step}: give the file to record")
        handler = {
            "baseline": _add_baseline,
            "profile": _add_profile,
            "analysis": _add_analysis,
            "compare": lambda s, p: _add_compare(s, p, kernel),
            "final": lambda s, p: _add_final(s, p, loop_dir, allow_different_workload),
        }[step]
        message = handler(state, path)
    state.history.append({"time": now(), "step": step, "path": str(path) if path else None, "kernel": kernel})
    save_state(loop_dir, state)
    return state, message


# --- benchmarks ---------------------------------------------------------------------------------


def _benchmark(path: Path, step: str) -> dict[str, Any]:
    data = read_json(path, step)
    if data.get("mode") != "benchmark":
        raise LoopError(f"{step}: {data['_path']} is not a benchmark report (mode {data.get('mode')!r})")
    return data


def _benchmark_summary(data: dict[str, Any]) -> dict[str, Any]:
    stats = data.get("repeat_stats") or {}
    fp = data.get("fingerprint") or {}
    return {
        "success": bool(data.get("success")),
        "framework": data.get("framework"),
        "model": data.get("model"),
        "repeats": data.get("repeats", 1),
        "output_throughput": (data.get("throughput") or {}).get("output_throughput"),
        "output_throughput_cv": (stats.get("output_throughput") or {}).get("cv"),
        "fingerprint": bool(fp),
        "profiler_attached": bool((fp.get("system") or {}).get("profiler_attached")),
        "errors": list(data.get("errors") or [])[:5],
    }


def _add_baseline(state: LoopState, path: Path) -> str:
    data = _benchmark(path, "baseline")
    summary = _benchmark_summary(data)
    if not summary["success"] or not data.get("throughput"):
        raise LoopError(f"baseline: {data['_path']} has no successful measurement ({summary['errors']})")
    state.baseline = Artifact(path=data["_path"], added=now(), summary=summary)
    return f"baseline: {summary['repeats']} repeat(s), {summary['output_throughput']:.1f} output tok/s"


def _add_final(state: LoopState, path: Path, loop_dir: Path, allow_different_workload: bool) -> str:
    from magpie_benchmark.stats import compare_reports

    if state.baseline is None:
        raise LoopError("final: record the baseline first (magpie loop add DIR baseline REPORT)")
    data = _benchmark(path, "final")
    summary = _benchmark_summary(data)
    base = read_json(Path(state.baseline.path), "baseline")
    result = compare_reports(
        base,
        data,
        base_name=state.baseline.path,
        new_name=data["_path"],
        allow_different_workload=allow_different_workload,
    )
    out = loop_dir / E2E_NAME
    out.write_text(result.model_dump_json(indent=2) + "\n")
    summary["e2e_compare"] = str(out.resolve())
    summary["e2e_verdict"] = result.verdict.value
    summary["metrics"] = {m.metric: m.verdict.value for m in result.metrics}
    state.final = Artifact(path=data["_path"], added=now(), summary=summary)
    return f"final: end-to-end {result.verdict.value} against the baseline (details: {out})"


# --- profile and analyses ----------------------------------------------------------------------


def _add_profile(state: LoopState, path: Path) -> str:
    if not path.exists():
        raise LoopError(f"profile: {path} does not exist")
    if _is_trace(path):
        state.profile = Artifact(path=str(path.resolve()), added=now(), summary={"traces": str(path.resolve())})
        return f"profile: traces at {path} (add their analysis: magpie loop add DIR analysis gap_analysis.json)"
    data = _benchmark(path, "profile")
    diag = data.get("diagnostic") or {}
    if not diag.get("traces"):
        raise LoopError(f"profile: {data['_path']} has no profiled run with traces (run_kind diagnostic or auto)")
    state.profile = Artifact(
        path=data["_path"], added=now(), summary={"traces": diag["traces"], "trace_dir": diag.get("trace_dir")}
    )
    message = f"profile: {len(diag['traces'])} trace file(s)"
    if isinstance(data.get("gap_analysis"), dict) and data["gap_analysis"].get("top_kernels") is not None:
        message += "; " + _add_analysis_data(state, data, "gap_analysis")
    return message


def _is_trace(path: Path) -> bool:
    """A trace file or a folder of traces (not a run workspace holding a benchmark report)."""
    if path.is_dir():
        return not (path / "benchmark_report.json").is_file()
    return path.name.endswith((".json.gz", ".pt.trace.json", ".trace.json"))


def _add_analysis(state: LoopState, path: Path) -> str:
    data = read_json(path, "analysis")
    if data.get("mode") == "benchmark":
        return _add_analysis_data(state, data, "gap_analysis")
    if not isinstance(data.get("top_kernels"), list):
        raise LoopError(f"analysis: {data['_path']} has no top_kernels (a gap_analysis.json or a benchmark report)")
    return _add_analysis_data(state, data, None)


def _add_analysis_data(state: LoopState, data: dict[str, Any], key: str | None) -> str:
    block = data[key] if key else data
    kernels = [
        {
            "name": str(k.get("name")),
            "pct_total": k.get("pct_total"),
            "source": k.get("source") if isinstance(k.get("source"), dict) else None,
        }
        for k in (block.get("top_kernels") or [])[:KEPT_KERNELS]
        if isinstance(k, dict)
    ]
    where = f"{data['_path']}#{key}" if key else data["_path"]
    state.analyses = [a for a in state.analyses if a.path != where]
    summary = {"top_kernels": kernels, "errors": list(block.get("errors") or [])[:5]}
    state.analyses.append(Artifact(path=where, added=now(), summary=summary))
    top = ", ".join(f"{k['name']} ({_pct(k['pct_total'])})" for k in kernels[:3]) or "no kernels"
    return f"analysis: {len(kernels)} top kernel(s): {top}"


def _pct(value: Any) -> str:
    return f"{value:.1f}%" if isinstance(value, int | float) else "-"


# --- kernels and compares ---------------------------------------------------------------------


def _find_kernel(state: LoopState, name: str) -> tuple[dict[str, Any], str] | None:
    """The analysis row of ``name``: an exact name, else the one row whose name contains it."""
    rows = [(k, a.path) for a in state.analyses for k in a.summary.get("top_kernels") or []]
    exact = [r for r in rows if r[0]["name"] == name]
    if exact:
        return exact[0]
    partial = {r[0]["name"]: r for r in rows if name in r[0]["name"]}
    if len(partial) > 1:
        raise LoopError(f"kernel: {name!r} matches several analysed kernels: {', '.join(sorted(partial))[:300]}")
    return next(iter(partial.values()), None)


def _add_kernel(state: LoopState, name: str, source_file: str | None) -> str:
    found = _find_kernel(state, name)
    if found is None:
        names = [k["name"] for a in state.analyses for k in a.summary.get("top_kernels") or []]
        hint = f" (analysed: {', '.join(names[:8])})" if names else " (record the profile's analysis first)"
        raise LoopError(f"kernel: {name!r} is not among the recorded analyses' top kernels{hint}")
    row, analysis = found
    source = row.get("source") or {}
    selected = SelectedKernel(
        name=row["name"],
        source_resolution=str(source.get("source_resolution") or "unresolved"),
        source_file=source.get("source_file") or None,
        candidates=list(source.get("candidates") or []),
        analysis=analysis,
        pct_total=row.get("pct_total"),
        note=source.get("source_error") or source.get("notes") or None,
    )
    if source_file:  # the user's word, kept apart from the finder's: never "exact"
        selected.note = f"source given by hand: {source_file} (finder said {selected.source_resolution})"
        selected.source_file, selected.source_resolution = source_file, "asserted"
    state.kernels = [k for k in state.kernels if k.name != selected.name] + [selected]
    return f"kernel: {selected.name}: source mapping {selected.source_resolution} ({selected.source_file or '-'})"


def _add_compare(state: LoopState, path: Path, kernel: str | None) -> str:
    data = read_json(path, "compare")
    if data.get("mode") != "compare" or not isinstance(data.get("ranking"), list):
        raise LoopError(f"compare: {data['_path']} is not a compare report (magpie compare)")
    if kernel is None and len(state.kernels) == 1:
        kernel = state.kernels[0].name
    results = ((data.get("results") or {}).get("kernel_results")) or []
    correctness = {str(r.get("kernel_id")): str((r.get("correctness") or {}).get("status")) for r in results}
    entry = _candidate_entry(data)
    record = CompareRecord(
        path=data["_path"],
        added=now(),
        kernel=kernel,
        baseline_id=str(data.get("baseline_id")),
        candidate_id=entry.get("kernel_id") if entry else None,
        speedup=entry.get("speedup") if entry else None,
        speedup_ci95=list(entry["speedup_ci95"]) if entry and entry.get("speedup_ci95") else None,
        verdict=entry.get("verdict") if entry else None,
        verdict_reason=entry.get("verdict_reason") if entry else None,
        correctness=correctness,
        stability=data.get("stability"),
    )
    state.compares.append(record)
    if entry is None:
        return "compare: no candidate was ranked (see the report's unranked entries)"
    ci = record.speedup_ci95 or [float("nan")] * 2
    return f"compare: {record.candidate_id} {record.speedup:.3f}x (95% CI {ci[0]:.3f}-{ci[1]:.3f}) {record.verdict}"


def _candidate_entry(data: dict[str, Any]) -> dict[str, Any] | None:
    """The winner's ranking entry, else the fastest candidate that is not the baseline."""
    ranking = [e for e in data.get("ranking") or [] if isinstance(e, dict)]
    winner = data.get("winner_id")
    others = [e for e in ranking if e.get("kernel_id") != data.get("baseline_id")]
    chosen = next((e for e in ranking if winner and e.get("kernel_id") == winner), None)
    return chosen or (others[0] if others else None)


def status_lines(state: LoopState) -> list[str]:
    """What is recorded, and the next step to take."""
    lines = [f"loop {state.name} (updated {state.updated})"]
    lines.append(f"  baseline: {state.baseline.path if state.baseline else '-'}")
    lines.append(f"  profile:  {state.profile.path if state.profile else '-'}")
    lines.append(f"  analyses: {len(state.analyses)}")
    for k in state.kernels:
        lines.append(f"  kernel:   {k.name} (source mapping {k.source_resolution}: {k.source_file or '-'})")
    for c in state.compares:
        speed = f"{c.speedup:.3f}x" if c.speedup is not None else "-"
        lines.append(f"  compare:  {c.kernel or '-'}: {c.candidate_id} {speed} {c.verdict}")
    final = state.final.summary.get("e2e_verdict") if state.final else None
    lines.append(f"  final:    {state.final.path + ' (' + str(final) + ')' if state.final else '-'}")
    lines.append(f"  next:     {next_step(state)}")
    return lines


def next_step(state: LoopState) -> str:
    if state.baseline is None:
        return "magpie loop add DIR baseline <benchmark_report.json of the unprofiled run>"
    if state.profile is None:
        return "magpie loop add DIR profile <benchmark report of the profiled run (run_kind diagnostic)>"
    if not state.analyses:
        return "magpie loop add DIR analysis <gap_analysis.json>"
    if not state.kernels:
        return "magpie loop add DIR kernel <kernel name from the analysis>"
    if not state.compares:
        return "magpie loop add DIR compare <compare_report.json> --kernel NAME"
    if state.final is None:
        return "magpie loop add DIR final <benchmark_report.json of the same benchmark, with the winner>"
    return "magpie loop report DIR"


def as_json(state: LoopState) -> str:
    return json.dumps(state.model_dump(mode="json"), indent=2)
