"""How the ``magpie`` executable ends: :func:`magpie_core.cli.leave` skips the interpreter's teardown of the
modules a command imported, never what must happen before a process ends.

Each case runs a fresh interpreter, as the executable does, and checks what an observer of the process sees:
its exit status, its complete stdout/stderr, the ``atexit`` functions' effects, a live thread's work finished.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TRACE = Path(__file__).parent / "data" / "traces" / "inference" / "vllm_decode_full" / "graph_execution.json.gz"


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=120
    )


def test_leave_runs_atexit_functions_and_flushes_buffered_output() -> None:
    done = _python(
        """
        import atexit, sys
        from magpie_core.cli import leave
        atexit.register(lambda: print("atexit ran"))
        sys.stdout.write("x" * 100000)  # more than one buffer, the tail still buffered
        sys.stderr.write("to stderr")
        leave(3)
        """
    )
    assert done.returncode == 3
    assert done.stdout == "x" * 100000 + "atexit ran\n"
    assert done.stderr == "to stderr"


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (2, 2), (-1, 255)])
def test_leave_gives_sys_exit_status(code: int | None, status: int) -> None:
    done = _python(f"from magpie_core.cli import leave; leave({code!r})")
    assert done.returncode == status


def test_leave_with_a_message_exits_as_sys_exit_does() -> None:
    done = _python("from magpie_core.cli import leave; leave('boom')")
    assert done.returncode == 1
    assert done.stderr.strip() == "boom"


def test_leave_waits_for_a_live_thread(tmp_path: Path) -> None:
    """A thread still working is joined (the normal exit), not killed with the process."""
    out = tmp_path / "written"
    done = _python(
        """
        import sys, threading, time
        from pathlib import Path
        from magpie_core.cli import leave
        def work():
            time.sleep(0.5)
            Path(sys.argv[1]).write_text("done")
        threading.Thread(target=work).start()
        leave(0)
        """,
        str(out),
    )
    assert done.returncode == 0
    assert out.read_text() == "done"


def test_executable_writes_every_output_and_status(tmp_path: Path) -> None:
    """``python -m magpie_core`` (the executable's :func:`~magpie_core.cli.main`): a gap run's printed table and files
    are complete; a usage error still exits 2."""
    done = subprocess.run(
        [sys.executable, "-m", "magpie_core", "gap", str(TRACE), "-o", str(tmp_path), "--format", "csv"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#,kernel,category,calls,") and done.stdout.endswith("\n")
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "gap_analysis.json").read_text().endswith("}\n")
    assert (run_dir / "report.html").read_bytes().rstrip().endswith(b"</html>")
    bad = subprocess.run(
        [sys.executable, "-m", "magpie_core", "gap", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2
    assert "missing.json" in bad.stderr
