"""``magpie report PATH [PATH...]``: draw existing runs again, or several side by side with before/after deltas."""

from __future__ import annotations

from pathlib import Path

import typer

from magpie_core.cli.kit import UsageError, console, handle_errors

MULTI_DEFAULT = "a new report_<time>/ folder under ./magpie_runs"


def render_paths(paths: list[Path], output: Path | None) -> Path:
    """One path: its ``report.html`` (in its workspace unless ``output``); several: one page, runs in order,
    each after the first compared with the first when both are of the same kind. ``output`` is a folder (the page
    is its ``report.html``), as ``-o`` is for every command; a path ending in ``.html`` names the page itself."""
    from magpie_core.report_pages import REPORT_FILE, ReportPage, collect
    from magpie_report.load import ReportInputError, load
    from magpie_report.pages import TITLES, flatten, subtitle
    from magpie_report.render import RunBlock, write_page

    try:
        runs = [load(p) for p in paths]
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    pages = [ReportPage(kind=r.kind, report=r.report, workspace=r.workspace) for r in runs]
    for page in pages[1:]:
        if page.kind == pages[0].kind:
            page.before = pages[0]
    blocks = []
    for i, page in enumerate(pages):
        label = "before" if i == 0 and len(pages) > 1 else (f"after ({i})" if page.before else f"run {i + 1}")
        heading = f"{label}: {TITLES.get(page.kind, page.kind)}" if len(pages) > 1 else TITLES.get(page.kind, "")
        blocks.append(RunBlock(heading, subtitle(page), flatten(collect(page))))
    if output is not None and output.suffix != ".html":
        output = output / REPORT_FILE
    if len(pages) == 1:
        target = output or runs[0].workspace / REPORT_FILE
        title = TITLES.get(pages[0].kind, f"magpie {pages[0].kind}")
        return write_page(target, title, subtitle(pages[0]), blocks)
    kinds = sorted({p.kind for p in pages})
    title = f"magpie: {len(pages)} runs ({', '.join(kinds)})"
    if output is None:
        from magpie_core.cli.kit import STATE
        from magpie_core.runtime.workspace import create_run_folder

        output = create_run_folder(STATE.output_dir or STATE.resolve_output_dir(None), "report") / REPORT_FILE
    return write_page(output, title, " vs ".join(str(r.workspace) for r in runs), blocks)


@handle_errors
def report_command(
    paths: list[Path] = typer.Argument(
        ..., help="workspaces or report JSON files (analyze, compare, benchmark, gap, inference)"
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help=f"folder for report.html, or a .html path (one run: its workspace; several: {MULTI_DEFAULT})",
    ),
) -> None:
    """Draw report.html for existing runs; several runs go on one page, later ones compared with the first."""
    from magpie_core.cli.kit import NotAvailable

    try:
        written = render_paths(paths, output)
    except RuntimeError as exc:  # plotly (its plotly.js) is missing
        raise NotAvailable(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the page: {exc}") from None
    console.print(f"wrote {written}", markup=False, soft_wrap=True)


def register(cli: typer.Typer) -> None:
    cli.command("report")(report_command)
