"""Every tool input, at every nesting level, and every prompt argument has a description (issue 31):
an agent sees nothing else of what a field means. Numeric fields a client sends are bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from magpie_mcp.server import build_server
from pydantic import ValidationError

from magpie_core.config.kernel import PerformanceConfig


def _undescribed(schema: dict[str, Any], defs: dict[str, Any], where: str, seen: frozenset[str]) -> list[str]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return []
        schema, seen = defs[name], seen | {name}
    missing: list[str] = []
    nested = [*schema.get("anyOf", []), *schema.get("oneOf", []), *schema.get("allOf", [])]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            nested.append(schema[key])
    for sub in nested:
        missing += _undescribed(sub, defs, where, seen)
    for name, prop in schema.get("properties", {}).items():
        if not prop.get("description"):
            missing.append(f"{where}.{name}")
        missing += _undescribed(prop, defs, f"{where}.{name}", seen)
    return missing


def test_every_tool_input_and_prompt_argument_has_a_description(tmp_path: Path):
    server, context = build_server(cwd=tmp_path)
    try:
        tools = anyio.run(server.list_tools)
        prompts = anyio.run(server.list_prompts)
    finally:
        context.job_manager.shutdown()
    missing = [
        where
        for tool in tools
        for where in _undescribed(tool.input_schema, tool.input_schema.get("$defs", {}), tool.name, frozenset())
    ]
    missing += [f"prompt {p.name}.{a.name}" for p in prompts for a in p.arguments or [] if not a.description]
    assert not missing, f"inputs without a description: {sorted(set(missing))}"
    assert prompts and tools


def test_warmup_is_bounded():
    with pytest.raises(ValidationError, match="warmup_ms"):
        PerformanceConfig(warmup_ms=1e12)
