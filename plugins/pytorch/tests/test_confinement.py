"""A confined worker cannot reach the other processes of a compare; its own work goes on as before.

Each case runs in a fresh Python process that confines itself (magpie_kernels_pytorch.confinement), as a timing
worker does before loading a kernel, then acts on a process this test started (a stand-in for the baseline's worker).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp and Landlock are Linux's")


@pytest.fixture
def neighbour():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _confined(code: str, kernel_env: dict[str, str] | None = None, **values: object) -> subprocess.CompletedProcess:
    prelude = "from magpie_kernels_pytorch.confinement import confine_process\n"
    prelude += f"print(confine_process({kernel_env or {}!r}), flush=True)\n"
    source = prelude + textwrap.dedent(code).format(**values)
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)


def test_stopping_another_process_ends_the_sender(neighbour: int) -> None:
    stops = ("os.kill({pid}, signal.SIGSTOP)", "os.kill({pid}, signal.SIGTSTP)", "signal.raise_signal(signal.SIGSTOP)")
    for how in stops:
        result = _confined(f"import os, signal\n{how}\nprint('sent')", pid=neighbour)
        assert result.returncode == -signal.SIGSYS, (how, result)
        assert "seccomp" in result.stdout and "sent" not in result.stdout
    with open(f"/proc/{neighbour}/stat") as stat:
        assert stat.read().split(") ")[1][0] in "SR"  # never stopped


def test_scheduling_another_process_is_refused_and_its_own_allowed(neighbour: int) -> None:
    result = _confined(
        """
        import os
        refused = []
        for name, call in [
            ("affinity", lambda: os.sched_setaffinity({pid}, {{0}})),
            ("priority", lambda: os.setpriority(os.PRIO_PROCESS, {pid}, 19)),
            ("user priority", lambda: os.setpriority(os.PRIO_USER, 0, 19)),
            ("scheduler", lambda: os.sched_setscheduler({pid}, os.SCHED_IDLE, os.sched_param(0))),
            ("everyone", lambda: os.kill(-1, 0)),
        ]:
            try:
                call()
            except PermissionError:
                refused.append(name)
        os.sched_setaffinity(0, os.sched_getaffinity(0))
        os.setpriority(os.PRIO_PROCESS, 0, 1)
        print("refused:", ",".join(refused))
        """,
        pid=neighbour,
    )
    assert result.returncode == 0, result.stderr
    assert "refused: affinity,priority,user priority,scheduler,everyone" in result.stdout
    assert os.sched_getaffinity(neighbour) == os.sched_getaffinity(0)


def test_its_processes_cannot_leave_its_session_or_group() -> None:
    """Where magpie finds what a worker started (pausing it while others are timed) and ends it with the worker."""
    result = _confined(
        """
        import os, subprocess, sys
        refused = []
        for name, call in [("setsid", os.setsid), ("setpgid", lambda: os.setpgid(0, 0))]:
            try:
                call()
            except PermissionError:
                refused.append(name)
        try:
            subprocess.run([sys.executable, "-c", ""], start_new_session=True)
        except PermissionError:
            refused.append("new session")
        child = subprocess.run([sys.executable, "-c", "import os; print(os.getsid(0), os.getpgid(0))"],
                               capture_output=True, text=True)
        print("refused:", ",".join(refused), "| child:", child.stdout.strip(), "| here:", os.getsid(0), os.getpgid(0))
        """
    )
    assert result.returncode == 0, result.stderr
    refused, child, here = result.stdout.splitlines()[-1].split(" | ")
    assert refused == "refused: setsid,setpgid,new session"
    assert child.removeprefix("child: ") == here.removeprefix("here: ")  # what it starts stays where it is


def test_reading_another_process_memory_is_refused_or_ends_the_reader(neighbour: int) -> None:
    result = _confined(
        """
        import ctypes, os
        try:
            open("/proc/{pid}/mem", "rb").close()
            print("opened")
        except PermissionError:
            print("mem refused")
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace(16, {pid}, 0, 0)  # PTRACE_ATTACH
        print("attached")
        """,
        pid=neighbour,
    )
    assert result.returncode == -signal.SIGSYS, result
    assert "attached" not in result.stdout
    if "landlock" in result.stdout:  # without Landlock the file opens (the same user's): the threat model says so
        assert "mem refused" in result.stdout


def test_a_confined_process_still_starts_and_stops_its_own_children() -> None:
    result = _confined(
        """
        import os, signal, subprocess, sys, threading
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == -signal.SIGTERM
        threading.Thread(target=lambda: None).start()
        print(subprocess.run(["true"]).returncode, "done")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "0 done" in result.stdout


def test_a_confined_process_moves_and_links_files_between_folders(tmp_path) -> None:
    """Triton's and Inductor's caches write a file in one folder and move it into another: a Landlock domain refuses
    that (EXDEV) unless its rules grant it. On an H100 every Triton and torch.compile candidate failed so ("Invalid
    cross-device link") where the caches were cold, until the confinement granted it."""
    result = _confined(
        """
        import os
        os.makedirs("{folder}/a"); os.makedirs("{folder}/b/c")
        open("{folder}/a/f", "w").close()
        os.replace("{folder}/a/f", "{folder}/b/c/f")
        os.link("{folder}/b/c/f", "{folder}/a/g")
        os.rename("{folder}/b/c", "{folder}/a/c")
        print(sorted(os.listdir("{folder}/a")))
        """,
        folder=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "['c', 'g']"


def test_confinement_can_be_switched_off_by_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGPIE_WORKER_CONFINEMENT", "off")
    result = _confined("")
    assert result.returncode == 0 and result.stdout.startswith("off")


def test_a_kernel_config_cannot_switch_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's environment holds its kernel's ``env:`` too, which an agent may write: only the operator's counts."""
    monkeypatch.setenv("MAGPIE_WORKER_CONFINEMENT", "off")  # as a forked worker has it after the kernel's env
    result = _confined("", kernel_env={"MAGPIE_WORKER_CONFINEMENT": "off"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("seccomp") and "ignored" in result.stdout, result.stdout
