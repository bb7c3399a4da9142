"""Pieces shared by every config model."""

from __future__ import annotations

import shlex
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from magpie_core.config.errors import BLOCK_ERROR, UNKNOWN_KEY
from magpie_core.config.validation import unknown_key_problem
from magpie_core.runtime.processes import MAX_WAIT_S

#: A command as AMD Magpie writes it: a string, an argv list, or a list of argv lists.
CommandSpec = str | list[str] | list[list[str]]

# Value constraints shared by every config model: a count is positive, a time or tolerance finite and
# not negative, a timeout finite and bounded (a run that may wait forever is a hang, not a setting).
#: longest timeout a config may set: the longest wait magpie's process plumbing accepts (one week)
MAX_TIMEOUT_S = MAX_WAIT_S
#: largest count of requests, samples or tokens a config may ask for
MAX_COUNT = 100_000_000
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
#: a timeout or time budget in seconds: positive, finite, at most :data:`MAX_TIMEOUT_S`
Seconds = Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]


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


class PluginBlocksModel(StrictModel):
    """A config model whose extra top-level keys are blocks owned by plugins (``magpie_register_config_blocks``).

    ``block_scope`` names the file it stands for (``framework``, ``kernel_file``, ``benchmark``).
    An extra key is validated by the model of the plugin that registered it for that scope; a key no
    installed plugin owns is an unknown key, reported like any other (file, line, "did you mean")."""

    model_config = StrictModel.model_config | {"extra": "allow"}
    block_scope: ClassVar[str] = ""

    @model_validator(mode="after")
    def _validate_plugin_blocks(self) -> PluginBlocksModel:
        extra = self.__pydantic_extra__ or {}
        if not extra:
            return self
        blocks = config_blocks(self.block_scope)
        for key, value in list(extra.items()):
            block = blocks.get(key)
            if block is None:
                known = [*type(self).model_fields, *blocks]
                raise PydanticCustomError(UNKNOWN_KEY, "unknown key {key!r}", {"key": key, "known": known})
            if not isinstance(value, block.model):
                extra[key] = _validate_block(block, key, value)
        return self

    def plugin_block(self, name: str) -> Any:
        """The validated block ``name`` (the owning plugin's model), or None when the file has none."""
        return (self.__pydantic_extra__ or {}).get(name)

    def plugin_blocks(self) -> dict[str, Any]:
        """Every plugin block this config holds, by key."""
        return dict(self.__pydantic_extra__ or {})


def config_blocks(scope: str) -> dict[str, Any]:
    """The plugin config blocks allowed in ``scope``, by key."""
    from magpie_core.plugins import get_plugin_manager

    blocks = get_plugin_manager().components("config_block").values()
    return {block.name: block for block in blocks if scope in block.scopes}


def _validate_block(block: Any, key: str, value: Any) -> Any:
    try:
        return block.model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        problem = str(first["msg"]).removeprefix("Value error, ")  # a validator's ValueError, as for core keys
        if first["type"] == "extra_forbidden":
            problem = unknown_key_problem(block.model, tuple(first["loc"]))
        raise PydanticCustomError(
            BLOCK_ERROR, "{problem}", {"key": key, "inner": list(first["loc"]), "problem": problem}
        ) from None
