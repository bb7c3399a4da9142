"""`magpie plugins` says which trace reader reads plain-JSON traces: the gap (and inference) analyzer answers the
core's ``magpie_status_lines`` hook with magpie-trace's ``reader_status()``; the core imports no trace library."""

from __future__ import annotations

from magpie_trace import native


def test_plugins_names_the_reader_and_the_switch(run_magpie) -> None:
    on = run_magpie(["plugins"], env={native.ENV: "1"})
    off = run_magpie(["plugins"], env={native.ENV: "0"})
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    if native.available():
        assert "trace reader: compiled" in on.stdout
    else:
        assert "trace reader: msgspec only" in on.stdout
    assert "MAGPIE_TRACE_NATIVE=0" in off.stdout or "trace reader: msgspec only" in off.stdout
    assert on.stdout.count("trace reader:") == 1  # gap and inference both answer: printed once


def test_csv_and_json_stay_machine_readable(run_magpie) -> None:
    for fmt in (["--json"], ["--format", "csv"]):
        got = run_magpie(["plugins", *fmt])
        assert got.returncode == 0, got.stderr
        assert "trace reader" not in got.stdout
