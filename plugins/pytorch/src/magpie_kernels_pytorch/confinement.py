"""Keep a candidate's hands off the other processes of a compare, from the kernel's (Linux's) side.

Every timing worker runs as the same user as the others and as magpie itself, so without this its code may
stop the baseline's worker in the middle of its slot (``SIGSTOP``/``SIGCONT``: everyone else's timers keep
running), move the others' threads onto one CPU or lower their priority, read or write their memory
(``ptrace``, ``/proc/<pid>/mem``, ``process_vm_writev``), or page their memory out: the others look slower and
the candidate FASTER, while it uses almost no CPU the idle meter could see (the catalogue's ``sabotage_stop``
and ``sabotage_affinity``). Before any kernel code loads, the worker confines itself, for good:

- a **seccomp filter** (Linux >= 3.17, every thread of the process and every process it starts): sending a stop
  signal to anyone, ``ptrace`` and reading or writing another process's memory end the process (``SIGSYS``, which
  the parent reports as REJECTED); signalling every process of the user (``kill(-1, ...)``), changing another
  process's CPUs, priority, scheduling, limits or memory placement, taking its file descriptors or advising on its
  memory, or leaving the worker's session or process group (``setsid``, ``setpgid``) fail with ``EPERM``; honest
  code does none of these (a library that pins its own threads by thread id gets ``EPERM`` and runs unpinned). So
  every process the candidate starts stays in its worker's session, where magpie pauses it while other workers
  are timed (``magpie_core.pipelines.blocked.Started``; the catalogue's ``child_hog``) and ends it with the worker;
- a **Landlock domain** where the kernel has ABI 2 (>= 5.19; ABI 1 refuses moving a file to another folder, which
  compile caches do): no access to processes outside it, so neither
  ``/proc/<pid>/mem`` nor ``/proc/<pid>/fd`` of the parent, the referee or a neighbour; from Landlock ABI 6
  (Linux 6.12) no signal at all to a process outside it. It handles no file access a kernel needs.

What this cannot stop is in docs/kernel-evaluation.md (threat model): the same user's files, cgroups the user
may write to, and a compiled extension that undoes nothing here but attacks its own process from inside.
``MAGPIE_WORKER_CONFINEMENT=off`` in magpie's environment leaves workers unconfined (a debugger attached from
inside a worker, say), but not in a kernel config's ``env:`` (an agent writes those); the worker's notes say what
was applied either way.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import struct
import sys
from collections.abc import Mapping
from types import MappingProxyType

#: (AUDIT_ARCH, syscall numbers) per machine: the filter knows these two ABIs and leaves others unconfined
_ABIS = {
    "x86_64": (
        0xC000003E,
        {
            "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
            "pidfd_send_signal": 424, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
            "sched_setaffinity": 203, "sched_setparam": 142, "sched_setscheduler": 144, "sched_setattr": 314,
            "setpriority": 141, "prlimit64": 302, "migrate_pages": 256, "move_pages": 279, "pidfd_getfd": 438,
            "process_madvise": 440, "seccomp": 317, "setsid": 112, "setpgid": 109,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
            "pidfd_send_signal": 424, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
            "sched_setaffinity": 122, "sched_setparam": 118, "sched_setscheduler": 119, "sched_setattr": 274,
            "setpriority": 140, "prlimit64": 261, "migrate_pages": 238, "move_pages": 239, "pidfd_getfd": 438,
            "process_madvise": 440, "seccomp": 277, "setsid": 157, "setpgid": 154,
        },
    ),
}  # fmt: skip
#: the signal's argument, per signal-sending call: the stop signals (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU: 19-22
#: on both ABIs) end the sender, whoever it aims at
_SIGNAL_ARG = {"kill": 1, "tkill": 1, "tgkill": 2, "rt_sigqueueinfo": 1, "rt_tgsigqueueinfo": 2, "pidfd_send_signal": 1}
_STOP_SIGNALS = (19, 22)
_END = ("ptrace",)  # whatever the request: no worker has a reason to trace anything
_OWN_MEMORY_ONLY = ("process_vm_readv", "process_vm_writev")  # on itself allowed, on another process ended
#: allowed on the calling process (pid 0 or its own), EPERM on any other
_OWN_PROCESS_ONLY = ("sched_setaffinity", "sched_setparam", "sched_setscheduler", "sched_setattr", "prlimit64",
                     "migrate_pages", "move_pages")  # fmt: skip
#: and leaving the worker's session or process group, where magpie finds, pauses and ends what a worker started
_REFUSED = ("pidfd_getfd", "process_madvise", "setsid", "setpgid")

_RET_KILL_PROCESS, _RET_ERRNO, _RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
_LD, _JEQ, _JGE, _JGT, _RET = 0x20, 0x15, 0x35, 0x25, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, ..., BPF_RET|K
_EPERM = 1
_X32_BIT = 0x40000000

_state: dict[str, str] = {}


SWITCH = "MAGPIE_WORKER_CONFINEMENT"


def confine_process(kernel_env: Mapping[str, str] = MappingProxyType({})) -> str:
    """Confine this process (once; what was applied, also kept for :func:`confinement`). Call before kernel code.

    ``kernel_env``: the variables the kernel's own config set (``env:``), which whoever wrote the config chose: the
    switch counts only where the operator set it, in magpie's environment."""
    if "applied" in _state:
        return _state["applied"]
    if SWITCH not in kernel_env and os.environ.get(SWITCH, "").lower() in ("off", "0", "no", "false"):
        applied = f"off ({SWITCH})"
    elif not sys.platform.startswith("linux"):
        applied = "none (not Linux)"
    elif _libc().prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: what both need to confine without privileges
        applied = "none (no_new_privs refused)"
    else:
        applied = " + ".join(part for part in (_seccomp(), _landlock()) if part) or "none (the kernel offers neither)"
    if SWITCH in kernel_env:
        applied += f" ({SWITCH} in the kernel's env ignored: only the operator's counts)"
    _state["applied"] = applied
    return applied


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)  # only on Linux: the calls are its system calls


def confinement() -> str:
    return _state.get("applied", "none")


# --- seccomp ---------------------------------------------------------------------------------------


def _seccomp() -> str:
    abi = _ABIS.get(platform.machine())
    if abi is None:
        return ""
    program = _filter(abi[0], abi[1], os.getpid())
    buffer = ctypes.create_string_buffer(program)
    prog = struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(buffer))  # struct sock_fprog
    # SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_TSYNC: every thread of the process, not only this one
    if _libc().syscall(abi[1]["seccomp"], 1, 1, ctypes.c_char_p(prog)) != 0:
        return ""
    return "seccomp"


def _filter(arch: int, numbers: dict[str, int], pid: int) -> bytes:
    """The BPF program: ``struct sock_filter`` entries (code, jt, jf, k), one rule block per system call."""
    deny, end = _RET_ERRNO | _EPERM, _RET_KILL_PROCESS
    code: list[tuple[int, int, int, int]] = [(_LD, 0, 0, 4), (_JEQ, 1, 0, arch), (_RET, 0, 0, deny), (_LD, 0, 0, 0)]
    if arch == _ABIS["x86_64"][0]:  # the x32 numbering reaches the same calls under other numbers
        code += [(_JGE, 0, 1, _X32_BIT), (_RET, 0, 0, deny)]
    for name, number in numbers.items():
        if name in _SIGNAL_ARG:
            # kill(-1, ...) signals every process the user has (magpie, the user's shell): refused whatever the signal
            body = [_arg(0), (_JEQ, 0, 1, 0xFFFFFFFF), (_RET, 0, 0, deny)] if name == "kill" else []
            body += [_arg(_SIGNAL_ARG[name]), (_JGE, 0, 2, _STOP_SIGNALS[0]), (_JGT, 1, 0, _STOP_SIGNALS[1])]
            body += [(_RET, 0, 0, end), (_RET, 0, 0, _RET_ALLOW)]
        elif name in _END:
            body = [(_RET, 0, 0, end)]
        elif name in _OWN_MEMORY_ONLY:
            body = [_arg(0), (_JEQ, 0, 1, pid), (_RET, 0, 0, _RET_ALLOW), (_RET, 0, 0, end)]
        elif name in _OWN_PROCESS_ONLY:
            body = _own_process(0, pid, deny)
        elif name == "setpriority":  # (which, who): PRIO_PROCESS (0) of itself only, not its group or user
            body = [_arg(0), (_JEQ, 1, 0, 0), (_RET, 0, 0, deny), *_own_process(1, pid, deny)]
        elif name in _REFUSED:
            body = [(_RET, 0, 0, deny)]
        else:
            continue
        code += [(_JEQ, 0, len(body), number), *body]
    code.append((_RET, 0, 0, _RET_ALLOW))
    return b"".join(struct.pack("HBBI", *entry) for entry in code)


def _arg(index: int) -> tuple[int, int, int, int]:
    """Load the low 32 bits of argument ``index`` (``struct seccomp_data``: args from byte 16, little-endian)."""
    return (_LD, 0, 0, 16 + 8 * index)


def _own_process(index: int, pid: int, deny: int) -> list[tuple[int, int, int, int]]:
    return [_arg(index), (_JEQ, 2, 0, 0), (_JEQ, 1, 0, pid), (_RET, 0, 0, deny), (_RET, 0, 0, _RET_ALLOW)]


# --- Landlock --------------------------------------------------------------------------------------

_LANDLOCK_CREATE, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT = 444, 445, 446  # the same on both ABIs
_ACCESS_FS_MAKE_BLOCK = 1 << 11  # handled, and so denied: making block devices, which needs privileges anyway
#: moving or linking a file to another folder: refused by every Landlock domain (EXDEV) unless a rule grants it,
#: which ABI 1 cannot (Triton's and Inductor's caches move files into place: every compile failed there)
_ACCESS_FS_REFER = 1 << 13
_RULE_PATH_BENEATH = 1
_SCOPE_SIGNAL = 1 << 1


def _landlock() -> str:
    abi = _libc().syscall(_LANDLOCK_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 2:
        return ""
    handled, scoped = _ACCESS_FS_MAKE_BLOCK | _ACCESS_FS_REFER, _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("QQQ", handled, 0, scoped) if scoped else struct.pack("Q", handled)
    ruleset = _libc().syscall(_LANDLOCK_CREATE, ctypes.c_char_p(attr), len(attr), 0)
    if ruleset < 0:
        return ""
    root = os.open("/", os.O_PATH | os.O_CLOEXEC)
    try:
        beneath = struct.pack("<Qi", _ACCESS_FS_REFER, root)  # struct landlock_path_beneath_attr (packed)
        if _libc().syscall(_LANDLOCK_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.c_char_p(beneath), 0) != 0:
            return ""
        if _libc().syscall(_LANDLOCK_RESTRICT, ruleset, 0) != 0:
            return ""
    finally:
        os.close(root)
        os.close(ruleset)
    return f"landlock (ABI {abi}{', signals scoped' if scoped else ''})"
