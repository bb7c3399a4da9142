"""C++ symbol names for reports (c++filt or llvm-cxxfilt when present)."""

from __future__ import annotations

import shutil
import subprocess


def demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if not tool or not names:
        return {n: n for n in names}
    try:
        out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    lines = out.splitlines()
    return {n: (lines[i] if i < len(lines) and lines[i] else n) for i, n in enumerate(names)}
