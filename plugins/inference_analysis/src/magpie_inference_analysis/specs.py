"""GPU specifications as data: the bundled ``specs/*.json`` files, or a user JSON of the same schema.

Schema: ``name``, ``hbm_bandwidth_tbps`` (TB/s, 1e12 bytes/s), ``matrix_tflops`` and
``vector_tflops`` (dtype -> TFLOP/s, dense), optional ``match`` (substrings of the
``deviceProperties`` name), ``arch``, ``memory_gb``, ``sources``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any


class SpecError(ValueError):
    """A spec name or file that cannot be used; the message says which and why."""


@dataclass
class GpuSpec:
    name: str
    hbm_bandwidth_tbps: float
    matrix_tflops: dict[str, float]
    vector_tflops: dict[str, float]
    source: str = "bundled"
    chosen_by: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def peak_tflops(self, kind: str, dtype: str | None) -> tuple[float | None, str]:
        """Peak rate for ``kind`` (matrix|vector) and dtype, and the spec key used (``matrix_bf16``).

        Vector ops of 16-bit (or narrower) types use the fp32 vector rate unless the spec
        lists their own; a matrix dtype the spec does not list has no peak (None).
        """
        dtype = dtype or "fp32"
        table = self.matrix_tflops if kind == "matrix" else self.vector_tflops
        if table.get(dtype):
            return float(table[dtype]), f"{kind}_{dtype}"
        if kind == "vector":
            return float(self.vector_tflops.get("fp32") or 0.0) or None, "vector_fp32"
        if dtype == "tf32" and self.matrix_tflops.get("fp32"):
            return float(self.matrix_tflops["fp32"]), "matrix_fp32"
        return None, f"{kind}_{dtype}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "hbm_bandwidth_tbps": self.hbm_bandwidth_tbps,
            "matrix_tflops": self.matrix_tflops,
            "vector_tflops": self.vector_tflops,
            "source": self.source,
            "chosen_by": self.chosen_by,
            **{k: v for k, v in self.extra.items() if k in ("arch", "memory_gb", "sources")},
        }


def _from_dict(data: Any, where: str) -> GpuSpec:
    if not isinstance(data, dict):
        raise SpecError(f"{where}: a spec is a JSON object")
    for key in ("name", "hbm_bandwidth_tbps", "matrix_tflops"):
        if key not in data:
            raise SpecError(f"{where}: field {key!r} is missing")
    try:
        bw = float(data["hbm_bandwidth_tbps"])
        matrix = {str(k): float(v) for k, v in dict(data["matrix_tflops"]).items() if v is not None}
        vector = {str(k): float(v) for k, v in dict(data.get("vector_tflops") or {}).items() if v is not None}
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{where}: rates must be numbers ({exc})") from None
    if bw <= 0:
        raise SpecError(f"{where}: field 'hbm_bandwidth_tbps' must be > 0")
    return GpuSpec(str(data["name"]), bw, matrix, vector, source=where, extra=data)


def bundled() -> dict[str, GpuSpec]:
    out: dict[str, GpuSpec] = {}
    folder = resources.files("magpie_inference_analysis") / "specs"
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".json"):
            spec = _from_dict(json.loads(item.read_text()), f"bundled specs/{item.name}")
            out[spec.name.upper()] = spec
    return out


def load_spec(name_or_path: str) -> GpuSpec:
    """A bundled spec by name (case-insensitive: ``H200``) or a user JSON file."""
    table = bundled()
    key = name_or_path.strip().upper()
    if key in table:
        spec = table[key]
        spec.chosen_by = "given by name"
        return spec
    path = Path(name_or_path).expanduser()
    if path.suffix == ".json" or path.exists():
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise SpecError(f"{path}: cannot read spec file ({exc.strerror or exc})") from None
        except json.JSONDecodeError as exc:
            raise SpecError(f"{path}: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        spec = _from_dict(data, str(path))
        spec.chosen_by = "user JSON"
        return spec
    raise SpecError(f"unknown GPU spec {name_or_path!r}: give one of {', '.join(sorted(table))} or a JSON file")


def detect_spec(device_properties: list[dict[str, Any]]) -> GpuSpec | None:
    """The bundled spec that matches the trace's ``deviceProperties`` (name, else arch + memory)."""
    if not device_properties:
        return None
    table = bundled()
    dev = device_properties[0]
    name = str(dev.get("name") or "")
    for spec in table.values():
        for pat in spec.extra.get("match", [spec.name]):
            if pat.upper() in name.upper():
                spec.chosen_by = f"deviceProperties name {name!r}"
                return spec
    major, minor = dev.get("computeMajor"), dev.get("computeMinor")
    mem_gb = float(dev.get("totalGlobalMem") or 0) / 2**30
    warp = dev.get("warpSize")
    pick = None
    if warp == 64 and (major, minor) == (9, 4):
        pick = "MI325X" if mem_gb > 220 else "MI300X"
    elif warp == 64 and (major, minor) == (9, 5):
        pick = "MI355X"
    elif warp == 32 and major == 9:
        pick = "H200" if mem_gb > 100 else "H100"
    elif warp == 32 and major == 10:
        pick = "B200"
    if pick is None:
        return None
    spec = table[pick]
    spec.chosen_by = (
        f"deviceProperties without a name: compute capability {major}.{minor}, warp {warp}, {mem_gb:.0f} GiB memory"
    )
    return spec
