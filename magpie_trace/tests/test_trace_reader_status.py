"""`magpie plugins` says which trace reader reads plain-JSON traces, and why when it is not the compiled one.

An install without a C compiler silently builds no compiled reader (``setup.py`` marks it optional): traces still
read, only slower, so the line under the plugin table is where a user finds out. "Not built" and "built from another
version" cannot be produced by a real install in a test: they are simulated by replacing the loader of the compiled
modules (``native.compiled``) in process.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from magpie_trace.columns import _ROW_NAMES

from magpie_trace import native


def test_plugins_names_the_reader_and_the_switch(run_magpie) -> None:
    on = run_magpie(["plugins"], env={native.ENV: "1"})
    off = run_magpie(["plugins"], env={native.ENV: "0"})
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    if native.available():
        assert "trace reader: compiled" in on.stdout
    else:
        assert "are not built" in on.stdout
    assert "MAGPIE_TRACE_NATIVE=0" in off.stdout or "are not built" in off.stdout


def test_csv_and_json_stay_machine_readable(run_magpie) -> None:
    for fmt in (["--json"], ["--format", "csv"]):
        got = run_magpie(["plugins", *fmt])
        assert got.returncode == 0, got.stderr
        assert "trace reader" not in got.stdout


def test_not_built_says_what_it_costs_and_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "compiled", lambda name: None)
    line = native.reader_status()
    assert "_kineto_scan and _kineto_kept" in line and "not built in" in line
    assert str(Path(native.__file__).parent) in line
    assert "longer without them" in line and "gcc" in line


def test_a_stale_build_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    stale = SimpleNamespace(row_columns=lambda: tuple(reversed(_ROW_NAMES)))
    monkeypatch.setattr(native, "compiled", lambda name: stale)
    monkeypatch.delenv(native.ENV, raising=False)
    assert "built from another magpie-core" in native.reader_status()


def test_switch_is_reported_only_when_the_readers_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = SimpleNamespace(row_columns=lambda: _ROW_NAMES)
    monkeypatch.setattr(native, "compiled", lambda name: fresh)
    monkeypatch.setenv(native.ENV, "0")
    assert "MAGPIE_TRACE_NATIVE=0" in native.reader_status()
    monkeypatch.setenv(native.ENV, "1")
    assert native.reader_status().startswith("trace reader: compiled")
