"""Every AMD Magpie config key, and what magpie does with it (the source of docs/compatibility.md).

Three outcomes per key: **implemented** (the meaning AMD Magpie gives it, or magpie's stated equivalent), **warned**
(accepted; the load logs a warning naming the key and what magpie does instead; see
:data:`magpie_core.config.amd_magpie.UNIMPLEMENTED`), **refused** (a file that switches it on stops with exit 2 naming
the key). The tables are data, ``magpie_core/data/compat_keys.json``: the kernel entry's keys (under ``kernel.`` and
``kernels.``), the performance and latency blocks (in both files), and each file's own keys. The benchmark YAML's table
lives with the benchmark (``magpie_benchmark.amd_magpie_keys``); :func:`describe_in`, :func:`status_in` serve any table.
Patterns use ``*`` for one free-form key (an env var name, a metric name, a GPU index). ``tests/test_magpie_corpus.py``
checks every key of the gathered AMD Magpie configs against this table and against what the loaders actually do."""

from __future__ import annotations

import fnmatch
import json
from importlib.resources import files

from magpie_core.config.amd_magpie import UNIMPLEMENTED

_PARTS: dict[str, dict[str, str]] = json.loads((files("magpie_core") / "data" / "compat_keys.json").read_text())
#: kernel YAML, keys from the file's root
KERNEL: dict[str, str] = {
    **{f"{root}.{k}": v for root in ("kernel", "kernels") for k, v in _PARTS["kernel_entry"].items()},
    **_PARTS["performance"],
    **_PARTS["latency"],
    **_PARTS["kernel"],
}
#: framework config (``--config``), keys from the file's root
FRAMEWORK: dict[str, str] = {
    **_PARTS["framework"],
    **{k: f"default for kernel files without their own block: {v}" for k, v in _PARTS["performance"].items()},
    **_PARTS["latency"],
}

TABLES = {"kernel": KERNEL, "framework": FRAMEWORK}
_MODEL = {"kernel": "KernelConfigFile", "framework": "FrameworkConfig"}


def describe(kind: str, key: str) -> str | None:
    """What magpie does with ``key`` (dotted, list indices dropped) of a ``kind`` config; None: unknown."""
    return describe_in(TABLES[kind], key)


def describe_in(table: dict[str, str], key: str) -> str | None:
    """What ``table`` (dotted key or ``*`` pattern -> what magpie does) says about ``key``; None: nothing."""
    if key in table:
        return table[key]
    wild = [p for p in table if "*" in p and fnmatch.fnmatchcase(key, p)]
    same_depth = [p for p in wild if p.count(".") == key.count(".")]
    matches = same_depth or wild  # a free-form name may hold dots itself (a counter metric name)
    return table[max(matches, key=len)] if matches else None


def status(kind: str, key: str) -> str:
    """implemented | warned (what a file switching ``key`` on gets)."""
    return status_in(UNIMPLEMENTED.get(_MODEL[kind], {}), key)


def status_in(unimplemented: dict[str, str], key: str) -> str:
    """warned when ``key`` or an ancestor is in ``unimplemented`` (:mod:`~magpie_core.config.amd_magpie`), else
    implemented."""
    parts = key.split(".")
    if any(".".join(parts[: i + 1]) in unimplemented for i in range(len(parts))):
        return "warned"
    return "implemented"
