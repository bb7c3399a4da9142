"""Random image requests, as ``vllm bench serve --dataset-name random-mm`` builds them.

vLLM's ``RandomMultiModalDataset`` (``vllm/benchmarks/datasets.py``), which AMD Magpie's ``*_mm.sh``
scripts drive from the ``MM_*`` envs:

* items per request: uniform over the whole numbers in ``[floor(n(1-r)), min(ceil(n(1+r)), sum of limits)]``
  (``n``: ``base_items_per_request``, ``r``: ``items_range_ratio`` in [0, 1]);
* each item's shape: drawn from ``buckets`` ((height, width, num_frames) -> probability, zero entries
  dropped, the rest renormalized); a modality at its ``limit_mm_per_prompt`` cap has its buckets removed;
* pixels: independent uniform RGB bytes (worst-case compression, as vLLM notes);
* the request: one user message whose content is ``[{"type": "text", "text": prompt}, *images]``, each image
  ``{"type": "image_url", "image_url": {"url": "data:image/...;base64,..."}}`` (the OpenAI chat format).

One difference: vLLM encodes with Pillow as JPEG; magpie has no imaging dependency and writes PNG with
zlib (lossless), so an image's payload is larger (about 3 x height x width bytes before base64, random
pixels do not compress) while the server's vision encoder sees the same pixel count. Only images:
video buckets (num_frames > 1) are refused by the config, as generating MP4 needs OpenCV.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from magpie_benchmark.loadgen.datasets import SampleRequest

Bucket = tuple[int, int, int]  # (height, width, num_frames)
#: salt of the image generator (the prompts' generator is seeded by the dataset seed alone)
_IMAGE_SALT = 0x696D67


@dataclass(frozen=True)
class MultiModalSpec:
    base_items_per_request: int = 1
    items_range_ratio: float = 0.0
    limit_images: int = 255
    buckets: dict[Bucket, float] = field(default_factory=lambda: {(256, 256, 1): 0.5, (720, 1280, 1): 0.5})

    def item_range(self) -> tuple[int, int]:
        """(fewest, most) images per request, as vLLM's ``get_mm_item_sampling_params``."""
        most = min(self.limit_images, math.ceil(self.base_items_per_request * (1 + self.items_range_ratio)))
        fewest = max(0, math.floor(self.base_items_per_request * (1 - self.items_range_ratio)))
        if fewest > most:
            raise ValueError(f"multimodal: at least {fewest} images per request but at most {most} (limit_images)")
        return fewest, most

    def image_buckets(self) -> dict[Bucket, float]:
        """The buckets with a probability, renormalized to sum to 1."""
        kept = {b: p for b, p in self.buckets.items() if p > 0}
        total = sum(kept.values())
        if not kept:
            raise ValueError("multimodal: every bucket has probability 0")
        return {b: p / total for b, p in kept.items()}


def sample_shapes(spec: MultiModalSpec, rng: np.random.Generator) -> list[Bucket]:
    """One request's image shapes: a count in :meth:`MultiModalSpec.item_range`, each shape from the buckets.
    Only images exist here, so the per-modality cap is the count's upper bound itself."""
    fewest, most = spec.item_range()
    count = int(rng.integers(fewest, most + 1))
    buckets = spec.image_buckets()
    keys = list(buckets)
    picks = rng.choice(len(keys), size=count, p=list(buckets.values())) if count else []
    return [keys[int(k)] for k in picks]


def png_bytes(pixels: np.ndarray) -> bytes:
    """A PNG of an (height, width, 3) uint8 RGB array (8-bit truecolour, no filter on every row)."""
    height, width, _ = pixels.shape
    rows = np.concatenate([np.zeros((height, 1), np.uint8), pixels.reshape(height, width * 3)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    # level 1: random pixels do not compress, so a higher level only costs client CPU during the load
    body = zlib.compress(rows.tobytes(), 1)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def image_part(height: int, width: int, rng: np.random.Generator) -> dict[str, object]:
    """One random image as an OpenAI chat content part (a base64 data URL)."""
    pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    data = base64.b64encode(png_bytes(pixels)).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


def attach_images(requests: list[SampleRequest], spec: MultiModalSpec, seed: int) -> list[SampleRequest]:
    """``requests`` as one chat message each: the prompt text, then that request's random images."""
    rng = np.random.default_rng([_IMAGE_SALT, seed])
    for req in requests:
        text = req.prompt if isinstance(req.prompt, str) else json.dumps(req.prompt)  # as build_payload sends it
        parts: list[dict[str, object]] = [{"type": "text", "text": text}]
        parts += [image_part(h, w, rng) for h, w, _ in sample_shapes(spec, rng)]
        req.messages = [{"role": "user", "content": parts}]
    return requests
