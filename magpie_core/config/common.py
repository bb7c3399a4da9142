"""Pieces shared by every config model."""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict

#: A command as AMD Magpie writes it: a string, an argv list, or a list of argv lists.
CommandSpec = str | list[str] | list[list[str]]


class StrictModel(BaseModel):
    """Config models reject unknown keys, so a typo is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True, defer_build=True)


def as_argv_list(spec: CommandSpec | None) -> list[list[str]]:
    """Normalize a command spec to a list of argv lists. Strings are split like a POSIX
    shell would split words (quotes respected), but never run through a shell."""
    if spec is None:
        return []
    if isinstance(spec, str):
        return [shlex.split(spec)] if spec.strip() else []
    if all(isinstance(item, str) for item in spec):
        return [list(spec)] if spec else []  # type: ignore[arg-type]
    return [list(argv) for argv in spec if argv]  # type: ignore[union-attr]


def dump(model: BaseModel) -> dict[str, Any]:
    """A config as plain data, for snapshots (aliases, no unset defaults)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
