"""``write_page`` copies plotly.js into the page as bytes: the file it writes is ``page_html``'s text, encoded."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from magpie_report import render
from magpie_report.kit import Figure, Section, Table

_REAL = datetime.datetime


class _FixedNow:
    """A clock that does not move, so the page's footer stamp is the same in both pages."""

    @staticmethod
    def now() -> datetime.datetime:
        return _REAL(2026, 1, 2, 3, 4)


def test_written_page_is_page_html_encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render.dt, "datetime", _FixedNow)
    sections = [
        Section(
            "Kernels — ünïcode <b>",
            [Table(["name", "us"], [["gemm<float>", 1.5]], title="top"), Figure([{"y": [1, 2]}], {}, title="busy")],
        )
    ]
    blocks = [render.RunBlock("run", "sub", sections)]
    path = render.write_page(tmp_path / "report.html", "gap — run", "sub", blocks)
    assert path.read_bytes() == render.page_html("gap — run", "sub", blocks).encode("utf-8")
    assert not (tmp_path / "report.html.tmp").exists()
