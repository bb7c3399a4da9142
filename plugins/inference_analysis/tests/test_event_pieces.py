"""The piece size of the streaming decoder changes which pieces are skipped undecoded, never what is kept."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest
from magpie_inference_analysis import events

from tests.conftest import DATA

TRACES = sorted((DATA / "traces").rglob("*.json.gz"))


def _kept(trace: events.Trace) -> tuple[bytes, ...]:
    enc = msgspec.json.encode
    return (*(enc(b) for b in (trace.cpu_ops, trace.gpu, trace.runtime, trace.annotations)), enc(trace.num_events))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_small_pieces_keep_the_same_events(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))  # plain JSON: the path that is split into byte ranges
    monkeypatch.setattr(events, "CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr(events, "NATIVE_CHUNK_BYTES", 1 << 20)
    whole = _kept(events.load(plain))
    monkeypatch.setattr(events, "CHUNK_BYTES", 4 << 10)  # smaller than the runs of skipped events
    monkeypatch.setattr(events, "NATIVE_CHUNK_BYTES", 4 << 10)
    assert _kept(events.load(plain)) == whole
    assert _kept(events.load(plain, workers=2)) == whole
