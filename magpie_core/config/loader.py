"""YAML loading with ``${ENV}`` expansion and errors that say where.

Every mapping key and scalar keeps its line, so a validation error from
pydantic can be reported as ``file:line: key.path: problem``.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from magpie_core.compat import warn_unimplemented
from magpie_core.config import safe_yaml
from magpie_core.config.common import BLOCK_ERROR, UNKNOWN_KEY

M = TypeVar("M", bound=BaseModel)
Loc = tuple[str | int, ...]

_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class ConfigError(ValueError):
    """A config file is unreadable or invalid. ``str()`` names file, line and key path."""

    def __init__(self, file: str | Path, problem: str, line: int | None = None, path: Loc = ()) -> None:
        self.file = str(file)
        self.line = line
        self.path = path
        self.problem = problem
        super().__init__(self.format())

    def format(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        key = format_loc(self.path)
        return f"{where}: {key}: {self.problem}" if key else f"{where}: {self.problem}"


class ConfigErrors(ValueError):
    """Several problems in one file, all reported at once."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.format() for e in errors))


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


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
    if isinstance(value, str) and "$" in value:
        value = expand_env(value, file, lines[path], path)
    return value


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


def _nearest_line(lines: dict[Loc, int], loc: Loc) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class that owns the last key of ``loc`` (for "did you mean")."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            current = _inner_model(current)
            if isinstance(part, int):
                continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = _field_by_key(current, str(part))
        if field is None:
            return None
        current = _inner_model(field.annotation)
    current = _inner_model(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, field in model.model_fields.items():
        if key in (name, field.alias, field.validation_alias):
            return field
    return None


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None if get_origin(annotation) is not None or not isinstance(annotation, type) else annotation


def model_keys(model: type[BaseModel]) -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        keys.append(field.alias or name)
    return keys


def _plugin_block_error(error: dict[str, Any]) -> dict[str, Any]:
    """A plugin block's error (raised by ``PluginBlocksModel``) located at its own key."""
    ctx = error.get("ctx") or {}
    if error["type"] == UNKNOWN_KEY:
        match = difflib.get_close_matches(ctx["key"], ctx["known"], n=1, cutoff=0.6)
        msg = f"unknown key {ctx['key']!r}" + (f" (did you mean {match[0]!r}?)" if match else "")
        return {**error, "loc": (*error["loc"], ctx["key"]), "msg": msg}
    if error["type"] == BLOCK_ERROR:
        return {**error, "loc": (*error["loc"], ctx["key"], *ctx["inner"]), "msg": ctx["problem"]}
    return error


def _problem(model: type[BaseModel], error: dict[str, Any]) -> str:
    loc = tuple(error["loc"])
    if error["type"] in (UNKNOWN_KEY, BLOCK_ERROR):
        return str(error["msg"])
    if error["type"] == "extra_forbidden":
        owner = _model_at(model, loc)
        key = str(loc[-1])
        msg = f"unknown key {key!r}"
        if owner is not None:
            match = difflib.get_close_matches(key, model_keys(owner), n=1, cutoff=0.6)
            if match:
                msg += f" (did you mean {match[0]!r}?)"
        return msg
    return str(error["msg"]).removeprefix("Value error, ")


def validate(model: type[M], data: Any, file: str | Path, lines: dict[Loc, int] | None = None) -> M:
    """Validate ``data`` against ``model``; errors carry file, line and key path."""
    from_file = lines is not None
    lines = lines or {}
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        errors = []
        for err in map(_plugin_block_error, exc.errors()):
            loc = _real_loc(data, tuple(err["loc"]))
            errors.append(ConfigError(file, _problem(model, {**err, "loc": loc}), _nearest_line(lines, loc), loc))
        unique = {e.format(): e for e in errors}
        if len(unique) == 1:
            raise next(iter(unique.values())) from None
        raise ConfigErrors(list(unique.values())) from None
    if from_file:
        warn_unimplemented(model.__name__, data, file, lines)
    return validated


def _real_loc(data: Any, loc: Loc) -> Loc:
    """Drop pydantic's union and validator tags from ``loc``, keeping the keys the file has.

    A key the data lacks is kept when it is the last thing named (a missing field).
    """
    kept: list[str | int] = []
    current = data
    for part in loc:
        if (isinstance(current, dict) and part in current) or (
            isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        ):
            kept.append(part)
            current = current[part]
        elif isinstance(current, dict) and isinstance(part, str) and part == loc[-1]:
            kept.append(part)
            break
    return tuple(kept)


def load_config(model: type[M], path: str | Path) -> M:
    """Read a YAML file into ``model``, with ``${ENV}`` expansion and located errors."""
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, f"expected a mapping at the top level, got {type(data).__name__}", 1)
    return validate(model, data, path, lines)
