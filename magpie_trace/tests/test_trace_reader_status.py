"""``magpie_trace.native.reader_status()``: which reader reads plain-JSON traces, and why when it is not the compiled
one (``magpie plugins`` prints it through the trace analyzers: plugins/gap_analysis/tests/test_gap_status_line.py).

An install without a C compiler silently builds no compiled reader (magpie-trace-native's ``setup.py`` marks it
optional): traces still read, only slower, so that line is where a user finds out. "Not installed", "not built" and
"built from another version" cannot be produced by a real install in a test: they are simulated by replacing the
lookup of the compiled modules (``native.compiled``, ``native._package_dir``) in process.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from magpie_trace import native
from magpie_trace.fastpath import ROW_NAMES


def test_not_installed_says_what_it_costs_and_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_package_dir", lambda: None)
    line = native.reader_status()
    assert line.startswith("trace reader: msgspec only") and "magpie-trace-native" in line
    assert "not installed" in line and "longer without them" in line and "gcc" in line


def test_not_built_says_where_what_it_costs_and_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(native, "_package_dir", lambda: tmp_path)
    monkeypatch.setattr(native, "compiled", lambda name: None)
    line = native.reader_status()
    assert "_kineto_scan and _kineto_kept" in line and f"not built in {tmp_path}" in line
    assert "longer without them" in line and "gcc" in line and "reinstall magpie-trace-native" in line


def test_a_stale_build_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stale = SimpleNamespace(row_columns=lambda: tuple(reversed(ROW_NAMES)))
    monkeypatch.setattr(native, "_package_dir", lambda: tmp_path)
    monkeypatch.setattr(native, "compiled", lambda name: stale)
    monkeypatch.delenv(native.ENV, raising=False)
    assert "built for another magpie-trace" in native.reader_status()


def test_switch_is_reported_only_when_the_readers_are_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fresh = SimpleNamespace(row_columns=lambda: ROW_NAMES)
    monkeypatch.setattr(native, "_package_dir", lambda: tmp_path)
    monkeypatch.setattr(native, "compiled", lambda name: fresh)
    monkeypatch.setenv(native.ENV, "0")
    assert "MAGPIE_TRACE_NATIVE=0" in native.reader_status()
    monkeypatch.setenv(native.ENV, "1")
    assert native.reader_status().startswith("trace reader: compiled")


def test_the_lookup_names_the_native_package() -> None:
    """The documented lookup (docs/trace-library.md): the modules of package ``magpie_trace_native``."""
    assert native.PACKAGE == "magpie_trace_native"
    if native._package_dir() is not None:
        assert native.available() == (native.compiled("_kineto_scan") is not None)
    else:
        assert not native.available() and native.compiled("_kineto_scan") is None
