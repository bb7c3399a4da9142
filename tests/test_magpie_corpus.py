"""AMD Magpie's own example configs (tests/data/magpie_configs, see its MANIFEST.md): every key of
every file is implemented with AMD Magpie's meaning, or warned about by name, or refused by name.

The verdict per key comes from the documented tables (magpie_core.config.amd_magpie_keys and, for benchmark files,
magpie_benchmark.amd_magpie_keys, rendered into
docs/compatibility.md); this test checks the table against what the loaders really do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from magpie_benchmark.amd_magpie import UNIMPLEMENTED as BENCHMARK_UNIMPLEMENTED
from magpie_benchmark.amd_magpie import truthy
from magpie_benchmark.run_config import load_benchmark_config

from magpie_benchmark import amd_magpie_keys as benchmark_keys
from magpie_core.config import ConfigError, FrameworkConfig, load_config
from magpie_core.config import amd_magpie_keys as compat_keys
from magpie_core.config.amd_magpie import UNIMPLEMENTED
from magpie_core.pipelines.kernel_files import load_kernel_file

from .conftest import DATA, ROOT

CORPUS = DATA / "magpie_configs"
FILES = sorted(CORPUS.rglob("*.yaml"))
KIND = {"benchmarks": "benchmark", "kernels": "kernel", "framework": "framework"}
MODEL = {"benchmark": "BenchmarkConfig", "kernel": "KernelConfigFile", "framework": "FrameworkConfig"}


def _leaves(data: Any, path: tuple[str, ...] = (), active: bool = True) -> Iterator[tuple[str, Any, bool]]:
    """(dotted key, value, switched on) for every leaf; list items share their list's key."""
    if isinstance(data, dict) and data:
        on = active and data.get("enabled", True) not in (False, None)
        for key, value in data.items():
            yield from _leaves(value, (*path, str(key)), on)
    elif isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        for item in data:
            yield from _leaves(item, path, active)
    else:
        yield ".".join(path), data, active and data not in (False, None)


def _load(kind: str, path: Path) -> None:
    if kind == "benchmark":
        load_benchmark_config(path)
    elif kind == "kernel":
        load_kernel_file(path)
    else:
        load_config(FrameworkConfig, path)


def _keys(kind: str, path: Path) -> list[tuple[str, Any, bool]]:
    data = yaml.safe_load(path.read_text())
    if kind == "benchmark":
        data = data["benchmark"]
    return list(_leaves(data))


def _warned_as(kind: str, key: str) -> str:
    """The key (or ancestor) a warning names."""
    if key.startswith("envs."):
        return key[5:]
    table = BENCHMARK_UNIMPLEMENTED if kind == "benchmark" else UNIMPLEMENTED[MODEL[kind]]
    parts = key.split(".")
    name = next(".".join(parts[: i + 1]) for i in range(len(parts)) if ".".join(parts[: i + 1]) in table)
    return f"benchmark.{name}" if kind == "benchmark" else name


def describe(kind: str, key: str) -> str | None:
    return benchmark_keys.describe(key) if kind == "benchmark" else compat_keys.describe(kind, key)


def status(kind: str, key: str) -> str:
    return benchmark_keys.status(key) if kind == "benchmark" else compat_keys.status(kind, key)


def test_corpus_is_there() -> None:
    assert len(FILES) >= 40 and {KIND[p.relative_to(CORPUS).parts[0]] for p in FILES} == set(KIND.values())


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_key_implemented_warned_or_refused(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    kind = KIND[path.relative_to(CORPUS).parts[0]]
    keys = _keys(kind, path)
    unknown = [k for k, _, _ in keys if describe(kind, k) is None]
    assert not unknown, f"{path.name}: keys missing from the compat_keys tables: {unknown}"
    refused = [k for k, v, on in keys if status(kind, k) == "refused" and on and truthy_on(k, v)]
    with caplog.at_level(logging.WARNING):
        if refused:
            with pytest.raises(ConfigError) as err:
                _load(kind, path)
            assert refused[0].split(".")[0] in str(err.value) and path.name in str(err.value)
            return
        _load(kind, path)
    said = "\n".join(r.getMessage() for r in caplog.records)
    for key, _, on in keys:
        verdict = status(kind, key)
        if verdict == "warned" and on:
            assert _warned_as(kind, key) in said, f"{path.name}: {key} is not warned about"
        if verdict == "implemented":
            assert f"{key}: AMD Magpie key not implemented" not in said, f"{path.name}: {key} claimed implemented"


def truthy_on(key: str, value: Any) -> bool:
    return truthy(value) if key == "envs.RUN_EVAL" else True


def test_compatibility_doc_is_current() -> None:
    from scripts.compat_doc import render

    assert (ROOT / "docs" / "compatibility.md").read_text() == render(), "run: python scripts/compat_doc.py"
