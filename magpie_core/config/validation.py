"""Validation of config data against a pydantic model, with errors that name file, line and key path.

Apart from the YAML reading in :mod:`magpie_core.config.loader` (which re-exports :func:`validate`), so that a
command that validates data it built itself (``magpie gap``'s flags) does not import yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from magpie_core.config.errors import BLOCK_ERROR, UNKNOWN_KEY, ConfigError, ConfigErrors, Loc

__all__ = ["model_keys", "validate"]

M = TypeVar("M", bound=BaseModel)


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
    import difflib  # only for a bad key: not at start-up

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
        return unknown_key_problem(model, loc)
    return str(error["msg"]).removeprefix("Value error, ")


def unknown_key_problem(model: type[BaseModel], loc: Loc) -> str:
    """``unknown key 'x'``, with the nearest key of the model at ``loc`` when one is close."""
    owner = _model_at(model, loc)
    key = str(loc[-1])
    msg = f"unknown key {key!r}"
    if owner is not None:
        import difflib

        match = difflib.get_close_matches(key, model_keys(owner), n=1, cutoff=0.6)
        if match:
            msg += f" (did you mean {match[0]!r}?)"
    return msg


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
        from magpie_core.config.amd_magpie import unimplemented_table, warn_unimplemented

        warn_unimplemented(model.__name__, data, file, lines, unimplemented_table(model))
    return validated


def _real_loc(data: Any, loc: Loc) -> Loc:
    """Drop pydantic's union and validator tags from ``loc``, keeping the keys the file has.

    A key the data lacks is kept when it is the last thing named (a missing field)."""
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
