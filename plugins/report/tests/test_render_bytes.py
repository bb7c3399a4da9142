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


@pytest.mark.parametrize("js", ["a\r\nb\rc\n", "", "plain ü\n"], ids=["crlf", "empty", "plain"])
def test_written_page_is_page_html_encoded_for_any_plotly_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, js: str
) -> None:
    """The mapped copy (no ``\\r``), the read one (line ends translated as text mode would) and an empty file."""
    source = tmp_path / "plotly.min.js"
    source.write_bytes(js.encode("utf-8"))
    monkeypatch.setattr(render, "_plotly_js_path", lambda: source)
    monkeypatch.setattr(render.dt, "datetime", _FixedNow)
    blocks = [render.RunBlock("run", "sub", [Section("s", [Table(["a"], [[1]])])])]
    path = render.write_page(tmp_path / "report.html", "t", "sub", blocks)
    assert path.read_bytes() == render.page_html("t", "sub", blocks).encode("utf-8")
