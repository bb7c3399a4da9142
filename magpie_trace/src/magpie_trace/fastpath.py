"""What the fast path's two readers share: the streaming decoder and table builder (:mod:`magpie_trace.columns`) and
the compiled reader it uses (:mod:`magpie_trace.native`). The columns of each group of events an
:class:`~magpie_trace.columns.EventTable` keeps, the compiled reduction's row columns in that order, and
:class:`FallBack`, which either raises when it cannot read a file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["GROUP_COLUMNS", "ROW_DTYPES", "ROW_NAMES", "FallBack"]

#: each group's columns (name, dtype), in the order the compiled reduction keeps them
GROUP_COLUMNS: dict[str, tuple[tuple[str, Any], ...]] = {
    "cpu": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("ext", np.int64), ("dims", np.int32)),
    "py": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("tid", np.int32)),
    "rt": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("tid", np.int32), ("corr", np.int64)),
    "act": (
        ("ts", np.float64),
        ("dur", np.float64),
        ("name", np.int32),
        ("dev", np.int32),
        ("kernel", np.bool_),
        ("corr", np.int64),
    ),
    "ann": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("cat", np.int32)),
    "sel": (("ts", np.float64), ("dur", np.float64), ("name", np.int32), ("ext", np.int64), ("corr", np.int64)),
    "flow": (("id", np.int64), ("ts", np.float64)),
}
#: the compiled reduction's row columns in ``GROUP_COLUMNS`` order (``_kineto_scan.row_columns()``, checked)
ROW_NAMES = tuple(f"{g}.{c}" for g, cols in GROUP_COLUMNS.items() for c, _ in cols)
ROW_DTYPES = tuple(dtype for cols in GROUP_COLUMNS.values() for _, dtype in cols)


class FallBack(Exception):
    """The streaming decoder met something it does not handle; decode the whole file instead."""
