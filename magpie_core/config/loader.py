"""YAML loading with ``${ENV}`` expansion and errors that say where.

Every mapping key and scalar keeps its line, so a validation error from
pydantic can be reported as ``file:line: key.path: problem``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from magpie_core.config import safe_yaml
from magpie_core.config.errors import ConfigError, ConfigErrors, Loc, format_loc  # noqa: F401  (re-exported)
from magpie_core.config.validation import model_keys, validate  # noqa: F401  (re-exported)

M = TypeVar("M", bound=BaseModel)

_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_env(text: str, file: str | Path, line: int | None, path: Loc) -> str:
    """Expand ``${VAR}``, ``${VAR:-default}`` and ``$VAR``; an unset variable without default is an error."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        default = match.group(2)
        value = os.environ.get(name)
        if value is not None:
            return value
        if default is not None:
            return default
        if match.group(3):  # bare $VAR: leave it for shells (commands may use it)
            return match.group(0)
        raise ConfigError(file, f"environment variable {name} is not set (use ${{{name}:-default}})", line, path)

    return _ENV_PATTERN.sub(replace, text)


class _Budget:
    """Counts the values built from one file, aliases at every use (see :data:`safe_yaml.MAX_NODES`)."""

    def __init__(self) -> None:
        self.left = safe_yaml.MAX_NODES

    def spend(self, node: yaml.Node) -> None:
        self.left -= 1
        if self.left < 0:
            raise safe_yaml.YamlRefusal(
                f"expands to more than {safe_yaml.MAX_NODES:,} values (nested aliases: a 'billion laughs' file?)",
                node.start_mark.line + 1,
            )


def _construct(node: yaml.Node, file: str, path: Loc, lines: dict[Loc, int], budget: _Budget | None = None) -> Any:
    budget = budget or _Budget()
    lines[path] = node.start_mark.line + 1
    try:
        budget.spend(node)
        safe_yaml.check_tag(node)
        value = safe_yaml.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None
    except safe_yaml.YamlRefusal as exc:
        raise ConfigError(file, exc.problem, exc.line, path) from None
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(node, file, path, lines, budget)
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, file, (*path, i), lines, budget) for i, item in enumerate(node.value)]
    return expand_env(value, file, lines[path], path) if isinstance(value, str) and "$" in value else value


def _construct_mapping(node: yaml.MappingNode, file: str, path: Loc, lines: dict[Loc, int], budget: _Budget) -> Any:
    out: dict[Any, Any] = {}
    merged: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if key_node.tag == safe_yaml.MERGE_TAG:  # ``<<: *defaults``: keys written here win
            merged.update(_merge_source(value_node, file, path, lines, budget))
            continue
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "mapping" if isinstance(key_node, yaml.MappingNode) else "list"
            raise ConfigError(file, f"a key must be a plain value, not a {kind}", line, path)
        try:
            key = safe_yaml.construct_scalar(key_node)
        except safe_yaml.YamlRefusal as exc:
            raise ConfigError(file, exc.problem, line, path) from None
        if key in out:
            raise ConfigError(file, f"duplicate key {key!r}", line, path)
        child = (*path, key)
        out[key] = _construct(value_node, file, child, lines, budget)
        lines[child] = line
    return {**{k: v for k, v in merged.items() if k not in out}, **out} if merged else out


def _merge_source(node: yaml.Node, file: str, path: Loc, lines: dict[Loc, int], budget: _Budget) -> dict[Any, Any]:
    sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
    merged: dict[Any, Any] = {}
    for source in reversed(sources):
        value = _construct(source, file, path, lines, budget)
        if not isinstance(value, dict):
            raise ConfigError(file, "'<<' merges a mapping (or a list of mappings)", node.start_mark.line + 1, path)
        merged.update(value)
    return merged


def load_yaml(path: str | Path) -> tuple[Any, dict[Loc, int]]:
    """Parse ``path``; return the data and a map from key path to line number.

    Hostile files (not UTF-8, binary, Python tags, alias bombs, deep nesting) are a located
    :class:`ConfigError`, never a hang or a traceback (see :mod:`magpie_core.config.safe_yaml`)."""
    path = Path(path)
    try:
        text = safe_yaml.read_config_text(path)
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from exc
    except safe_yaml.YamlRefusal as exc:
        raise ConfigError(path, exc.problem, exc.line) from None
    try:
        node = safe_yaml.compose_text(text)
        lines: dict[Loc, int] = {}
        data = {} if node is None else _construct(node, str(path), (), lines)
    except safe_yaml.YamlRefusal as exc:
        raise ConfigError(path, exc.problem, exc.line) from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(path, f"invalid YAML: {exc.problem or exc}", line) from None
    except yaml.reader.ReaderError as exc:  # a control character: a position, not a mark
        refusal = safe_yaml.reader_refusal(text, exc)
        raise ConfigError(path, refusal.problem, refusal.line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, f"invalid YAML: {' '.join(str(exc).split())}") from None
    return data, lines


def load_config(model: type[M], path: str | Path) -> M:
    """Read a YAML file into ``model``, with ``${ENV}`` expansion and located errors."""
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, f"expected a mapping at the top level, got {type(data).__name__}", 1)
    return validate(model, data, path, lines)
