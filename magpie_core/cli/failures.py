"""The last line of the exit-code policy: what the ``magpie`` shell does with an error no command caught.

Every command turns the errors it expects into one line and exit 2 (:func:`magpie_core.cli.kit.handle_errors`)
or a failed run into exit 1. Whatever escapes that, in a core command or a plugin's, ends here:

* an ``OSError`` about a path (an ``-o`` that is a file, a folder under ``/dev/null``, a name too long, no
  permission) is the user's environment: one line naming the path, exit 2;
* anything else is a bug in magpie or a plugin: one line naming the error and the file holding the full
  traceback (written to a temporary folder), exit 1 — never a traceback on the terminal."""

from __future__ import annotations

import errno
import os
import tempfile
import time
import traceback
from pathlib import Path

__all__ = ["EXIT_INTERNAL", "describe_os_error", "write_error_log"]

#: exit code of an internal error (the run did not succeed; nothing says the input was wrong)
EXIT_INTERNAL = 1
#: longest message shown for an internal error (the log holds all of it)
_MESSAGE_CHARS = 300


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError: the path(s), and what is wrong in words a user acts on."""
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno == errno.ENAMETOOLONG:
        reason = "path too long for this file system"
    elif exc.errno == errno.ENOTDIR:
        reason = "a part of this path is a file, not a folder"
    elif exc.errno == errno.EEXIST:
        reason = "already exists and is not a folder"
    if where and len(where) > 240:
        where = where[:120] + "…" + where[-100:]
    return f"{where}: {reason}" if where else reason


def write_error_log(exc: BaseException, argv: list[str]) -> Path | None:
    """Write the full traceback of ``exc`` to a new file under the temporary folder; its path (None: unwritable)."""
    folder = Path(tempfile.gettempdir()) / "magpie-errors"
    stamp = time.strftime("%Y%m%d_%H%M%S")
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"magpie-error-{stamp}-", suffix=".log", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
            f.write(f"magpie {' '.join(_redacted(argv))}\n\n")
            f.write("".join(traceback.format_exception(exc)))
        return Path(name)
    except OSError:
        return None


def internal_error_message(exc: BaseException, log: Path | None) -> str:
    text = " ".join(str(exc).split())
    if len(text) > _MESSAGE_CHARS:
        text = text[:_MESSAGE_CHARS] + "…"
    where = f"full traceback in {log}" if log else "no log could be written"
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"internal error (a bug in magpie or a plugin): {what}; {where}"


def _redacted(argv: list[str]) -> list[str]:
    """The command line for the log, values of secret-looking options replaced (secrets never go to logs)."""
    out: list[str] = []
    hide = False
    for arg in argv:
        low = arg.lower()
        secret = any(k in low for k in ("token", "key", "secret", "password"))
        if hide:
            out.append("***")
            hide = False
        elif secret and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(arg)
            hide = secret and arg.startswith("-")
    return out
