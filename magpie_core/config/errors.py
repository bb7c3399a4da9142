"""The config errors, apart from the YAML and pydantic machinery that raises them.

Every command's error handler catches these (:func:`magpie_core.cli.kit.handle_errors`); keeping them in a
module that imports nothing lets a command that never reads a config file start without yaml or pydantic.
:mod:`magpie_core.config.loader` re-exports them."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ConfigError", "ConfigErrors", "Loc", "format_loc"]

Loc = tuple[str | int, ...]
#: pydantic error types of plugin config blocks that validation turns into located messages
UNKNOWN_KEY, BLOCK_ERROR = "magpie_unknown_key", "magpie_block_error"


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
