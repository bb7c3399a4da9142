"""Multimodal load: random images per request as ``vllm bench serve --dataset-name random-mm`` builds them,
driven by AMD Magpie's ``MM_*`` envs.

The server here is a stub (``loadgen.fake_server``): it checks the OpenAI chat request format (text and
``image_url`` parts, base64 data URLs of real PNG files) and counts the images, because no vision model
can run on this machine; it does not look at the pixels.
"""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pytest
from magpie_benchmark.loadgen import LoadSpec, run_load
from magpie_benchmark.loadgen.fake_server import FakeSettings, in_thread
from magpie_benchmark.loadgen.multimodal import MultiModalSpec, image_part, png_bytes, sample_shapes
from magpie_benchmark.run_config import load_benchmark_config
from magpie_benchmark.workload import make_requests, plan_points

from magpie_core.config import ConfigError
from tests.conftest import DATA

MM_YAML = DATA / "magpie_configs" / "benchmarks" / "benchmark_vllm_r9700_qwen35_9b_mm_single_user.yaml"


def _decode_png(data: bytes) -> np.ndarray:
    """The pixels of an 8-bit RGB PNG with unfiltered rows, every chunk's CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + size]
        assert struct.unpack(">I", data[pos + 8 + size : pos + 12 + size])[0] == zlib.crc32(kind + body)
        chunks[kind] = body
        pos += 12 + size
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2) and b"IEND" in chunks
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, 1 + width * 3)
    assert not rows[:, 0].any()  # filter type 0 on every row
    return rows[:, 1:].reshape(height, width, 3)


def test_png_encoder_round_trip() -> None:
    pixels = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    assert np.array_equal(_decode_png(png_bytes(pixels)), pixels)
    url = image_part(4, 6, np.random.default_rng(2))["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert _decode_png(base64.b64decode(url.split(",", 1)[1])).shape == (4, 6, 3)


def test_item_counts_and_buckets_as_vllm() -> None:
    # [floor(2 * 0.5), min(ceil(2 * 1.5), limit 3)] = [1, 3]
    spec = MultiModalSpec(2, 0.5, 3, {(16, 16, 1): 3.0, (8, 32, 1): 1.0, (64, 64, 1): 0.0})
    assert spec.item_range() == (1, 3)
    assert spec.image_buckets() == {(16, 16, 1): 0.75, (8, 32, 1): 0.25}
    rng = np.random.default_rng(0)
    draws = [sample_shapes(spec, rng) for _ in range(400)]
    assert {len(d) for d in draws} == {1, 2, 3}
    shapes = [s for d in draws for s in d]
    assert set(shapes) == {(16, 16, 1), (8, 32, 1)} and 0.65 < shapes.count((16, 16, 1)) / len(shapes) < 0.85
    with pytest.raises(ValueError, match="at least 4 images"):
        MultiModalSpec(4, 0.0, 3).item_range()


def test_amd_mm_config_loads_without_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING"):
        config = load_benchmark_config(MM_YAML)
    mm = config.dataset.multimodal
    assert mm is not None and config.load.endpoint == "chat"
    assert (mm.base_items_per_request, mm.items_range_ratio, mm.limit_images) == (1, 0.0, 3)
    assert [(b.height, b.width, b.num_frames) for b in mm.buckets] == [(256, 256, 1)]
    assert "MM_" not in caplog.text


def test_video_frames_and_completions_are_refused(tmp_path: Path) -> None:
    text = MM_YAML.read_text()
    video = tmp_path / "video.yaml"
    video.write_text(text.replace("MM_IMAGE_NUM_FRAMES: 1", "MM_IMAGE_NUM_FRAMES: 16"))
    with pytest.raises(ConfigError, match="MM_IMAGE_NUM_FRAMES"):
        load_benchmark_config(video)
    completions = tmp_path / "completions.yaml"
    completions.write_text(text.replace("envs: {", "load: {endpoint: completions}\n  envs: {"))
    with pytest.raises(ConfigError, match=r"dataset\.multimodal needs"):
        load_benchmark_config(completions)


def _stats(url: str) -> list[dict]:
    with urllib.request.urlopen(url + "/fake/stats", timeout=5) as resp:
        return json.load(resp)["records"]


def test_image_requests_reach_the_stub_server_in_the_openai_chat_format(tmp_path: Path) -> None:
    cfg = tmp_path / "mm.yaml"
    # 1 to 3 images of 32 x 48 per request (base 2, ratio 0.5, the file's limit 3), small so the test stays fast
    cfg.write_text(
        MM_YAML.read_text()
        .replace("MM_BASE_ITEMS_PER_REQUEST: 1", "MM_BASE_ITEMS_PER_REQUEST: 2")
        .replace("MM_ITEMS_RANGE_RATIO: 0.0", "MM_ITEMS_RANGE_RATIO: 0.5")
        .replace("MM_IMAGE_HEIGHT: 256, MM_IMAGE_WIDTH: 256", "MM_IMAGE_HEIGHT: 32, MM_IMAGE_WIDTH: 48")
    )
    config = load_benchmark_config(cfg)
    point = plan_points(config)[0]
    requests = make_requests(config, point, None, 12)
    counts = [len(r.messages[0]["content"]) - 1 for r in requests]
    assert set(counts) <= {1, 2, 3} and len(set(counts)) > 1
    with in_thread(FakeSettings(ttft_ms=1, itl_ms=1)) as url:
        load = run_load(LoadSpec(base_url=url, model="fake-model", requests=requests, endpoint="chat"))
        assert all(r.success for r in load.results), [r.error for r in load.results]
        assert sorted(r["images"] for r in _stats(url)) == sorted(counts)
        bad = {"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGEgcG5n"}}
        body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": [bad]}]}
        req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 400 and "not a image/png file" in err.value.read().decode()


def test_benchmark_script_is_a_visible_warning(caplog: pytest.LogCaptureFixture) -> None:
    """AMD Magpie runs benchmark_script; magpie does not, and says so when the file loads."""
    with caplog.at_level("WARNING"):
        load_benchmark_config(MM_YAML)
    said = [r.getMessage() for r in caplog.records if "benchmark.benchmark_script" in r.getMessage()]
    assert len(said) == 1 and "the script is not run" in said[0] and "drives the load itself" in said[0]
