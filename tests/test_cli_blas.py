"""The CLI process loads numpy's BLAS with one thread, and processes it starts see the user's environment.

Each case runs in a fresh interpreter (numpy can be loaded only once per process). The thread count is asked of
the OpenBLAS library numpy really loaded; where numpy was built against another BLAS the count is not checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: install the hook as ``magpie`` does, import numpy, start a child: report what each saw
_PROBE = """
import ctypes, json, os, subprocess, sys
from magpie_core.cli.blas import VARIABLE, one_blas_thread
one_blas_thread()
import numpy
threads = None
for lib in {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()}:
    for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
        get = getattr(ctypes.CDLL(lib), symbol, None)
        if get is not None:
            threads = get()
child = subprocess.run([sys.executable, "-c", f"import os; print(os.environ.get({VARIABLE!r}, 'unset'))"],
                       capture_output=True, text=True, check=True).stdout.strip()
print(json.dumps({"threads": threads, "after": os.environ.get(VARIABLE), "child": child}))
"""


def _probe(tmp_path: Path, **env: str) -> dict[str, object]:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    }
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=tmp_path, env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_numpy_loads_with_one_blas_thread_and_children_do_not_inherit_it(tmp_path: Path) -> None:
    seen = _probe(tmp_path)
    assert seen["after"] is None  # removed once numpy had loaded
    assert seen["child"] == "unset"  # a server or worker magpie starts gets the user's environment
    if seen["threads"] is None:
        pytest.skip("numpy's BLAS here is not OpenBLAS")
    assert seen["threads"] == 1


def test_a_thread_count_the_user_chose_is_kept(tmp_path: Path) -> None:
    seen = _probe(tmp_path, OPENBLAS_NUM_THREADS="2")
    assert seen["after"] == "2" and seen["child"] == "2"
    if seen["threads"] is not None and (os.cpu_count() or 1) >= 2:
        assert seen["threads"] == 2
