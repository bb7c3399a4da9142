"""One BLAS thread in the ``magpie`` process itself, unless the user chose a number.

numpy's bundled OpenBLAS starts a thread per core when numpy loads, and the threads spin for a while after
numpy work: magpie's trace commands sort, count and search (no matrix products), so on a small machine
those threads only take a core from the trace reader (a profile of a trace read showed them in ~15 % of
the samples). OpenBLAS reads ``OPENBLAS_NUM_THREADS`` once, when its library loads with numpy, so the
variable is set only while numpy's own module runs and is removed right after: processes magpie starts
later (inference servers, kernel workers, ``docker``) get the user's environment unchanged (the pipelines
that start them import numpy when their modules load, before they start anything). A user who set
``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS`` keeps their choice.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

VARIABLE = "OPENBLAS_NUM_THREADS"
#: any of these set by the user: magpie leaves the thread count alone (OpenBLAS also reads the other two)
USER_CHOICES = (VARIABLE, "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


class _SetWhileLoading:
    """numpy's own loader, with ``VARIABLE=1`` in the environment while numpy's ``__init__`` runs."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        os.environ[VARIABLE] = "1"
        try:
            self._loader.exec_module(module)
        finally:
            os.environ.pop(VARIABLE, None)

    def __getattr__(self, name: str) -> Any:  # resource readers and the like: numpy's loader answers
        return getattr(self._loader, name)


class _NumpyFinder:
    """Finds numpy the usual way, once, and hands it the loader above."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "numpy":
            return None
        uninstall()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and not any(os.environ.get(v) for v in USER_CHOICES):
                    spec.loader = _SetWhileLoading(spec.loader)
                return spec
        return None


_FINDER = _NumpyFinder()


def one_blas_thread() -> None:
    """In the CLI process, before numpy is imported: numpy's BLAS starts one thread (see the module docstring).
    Nothing happens when numpy is imported already or the user chose a thread count."""
    if "numpy" in sys.modules or any(os.environ.get(v) for v in USER_CHOICES) or _FINDER in sys.meta_path:
        return
    sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
