"""Tables as pandas DataFrames: a result's rows become a frame only when one is asked for.

pandas is imported inside these functions, never at ``import magpie``: a script that only reads a verdict
or a number from a result does not pay for it (about 0.3 s and 60 MB).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Rows", "csv_frame", "frame", "resolve", "table"]

Rows = list[dict[str, Any]]


def frame(rows: Iterable[dict[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    """A DataFrame of ``rows`` (dicts); ``columns`` when there may be no rows to name them."""
    import pandas as pd

    rows = list(rows)
    return pd.DataFrame(rows, columns=columns) if not rows and columns else pd.DataFrame(rows)


def _comment_lines(path: Path) -> int:
    """How many ``#`` lines precede the header (the gap kernel table's source-finder notes). Only leading lines
    count: kernel names themselves contain ``#`` (``{lambda(int)#1}``), so pandas' ``comment=`` would cut them."""
    n = 0
    with path.open() as f:
        for line in f:
            if not line.startswith("#"):
                break
            n += 1
    return n


def csv_frame(path: Path, **extra: Any) -> pd.DataFrame:
    """A table an analyzer wrote as CSV; ``extra`` columns (the stage, the trace) put first."""
    import pandas as pd

    df = pd.read_csv(path, skiprows=_comment_lines(path), keep_default_na=False, na_values=[""])
    for i, (key, value) in enumerate(extra.items()):
        df.insert(i, key, value)
    return df


def resolve(path: str | None, workspace: Path | None) -> Path | None:
    """A file a report names: where it was written, else the same name in ``workspace`` or one folder below
    (a run folder copied or moved elsewhere keeps its files, not their absolute paths)."""
    if not path:
        return None
    p = Path(path)
    if p.is_file():
        return p
    if workspace is not None:
        for candidate in (workspace / p.name, *sorted(workspace.glob(f"*/{p.name}"))):
            if candidate.is_file():
                return candidate
    return None


class table:  # lower-case: used as a decorator, like ``property``
    """Turns a method that returns a result's rows (dicts) or a DataFrame into a DataFrame property, and lists it
    among the result's tables (:meth:`magpie.Result.tables`, :meth:`magpie.Result.to_excel`)."""

    def __init__(self, rows: Callable[[Any], Rows | pd.DataFrame]) -> None:
        self.rows = rows
        self.name = rows.__name__
        self.__doc__ = rows.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> table: ...
    @overload
    def __get__(self, obj: object, owner: type) -> pd.DataFrame: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        return self.build(obj)

    def build(self, obj: object) -> pd.DataFrame:
        rows = self.rows(obj)
        return rows if not isinstance(rows, list) else frame(rows)
