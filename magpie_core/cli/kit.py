"""What commands use, the core's and the plugins': the global options (:data:`STATE`, filled by the root group,
:mod:`magpie_core.cli.app`), the consoles and errors of :mod:`~.output`, error handling, the ``-o`` check, interrupts,
the GPU settings and the exit codes: 0 ok; 1 a kernel or benchmark failed its checks; 2 usage or config error
(including a missing plugin); 130 interrupted by Ctrl-C (143 by SIGTERM)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from magpie_core.cli.output import NotAvailable, UsageError, console, err_console, escape  # noqa: F401  (re-exported)
from magpie_core.config.errors import ConfigError, ConfigErrors
from magpie_core.interfaces import HardwareControlError
from magpie_core.plugins import PluginConflictError, UnknownComponentError
from magpie_core.runtime.interrupts import RunInterrupted, exit_code, exit_now, handling_interrupts, received

if TYPE_CHECKING:
    from magpie_core.config.defaults import FrameworkConfig

EXIT_OK = 0
EXIT_CHECKS_FAILED = 1
EXIT_USAGE = 2


@dataclass
class GlobalOptions:
    config_path: Path | None = None
    verbose: bool = False
    environment: str | None = None
    workers: int | None = None
    output_dir: Path | None = None
    docker_image: str | None = None

    _framework: FrameworkConfig | None = None

    @property
    def framework(self) -> FrameworkConfig:
        """The framework config: ``--config`` if given, else defaults."""
        if self._framework is None:
            from magpie_core.config.defaults import FrameworkConfig
            from magpie_core.config.loader import load_config

            self._framework = load_config(FrameworkConfig, self.config_path) if self.config_path else FrameworkConfig()
        return self._framework

    def resolve_output_dir(self, local: Path | None) -> Path:
        return local or self.output_dir or Path(self.framework.output.directory)

    def resolve_environment(self, from_file: str | None = None) -> str:
        return self.environment or from_file or self.framework.scheduler.environment

    def resolve_workers(self, from_file: int | None = None) -> int:
        return self.workers or from_file or self.framework.scheduler.max_workers


STATE = GlobalOptions()

F = TypeVar("F", bound=Callable[..., Any])


def gpu_hardware() -> Any:
    """The framework config's ``gpu.hardware`` applied around a run (a no-op unless it is enabled)."""
    from magpie_core.machine.hardware import applied

    gpu = STATE.framework.gpu
    return applied(gpu.hardware, gpu.device_ids)


def handle_errors(fn: F) -> F:
    """Turn magpie's expected errors into one clear line and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ConfigError, ConfigErrors) as exc:
            err_console.print(f"[red]config error[/red]\n{escape(str(exc))}", markup=True, soft_wrap=True)
        except (PluginConflictError, UnknownComponentError, NotAvailable, UsageError, HardwareControlError) as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        except RunInterrupted as exc:
            where = f"; what was measured is in {exc.report_path}" if exc.report_path else ""
            err_console.print(f"[yellow]interrupted:[/yellow] {escape(exc.message + where)}", soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted[/yellow] (no report was written)", soft_wrap=True)
            raise typer.Exit(exit_code()) from None
        raise typer.Exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


#: longest path accepted for an output folder (Linux PATH_MAX is 4096 bytes, a name at most 255)
_PATH_MAX, _NAME_MAX = 4000, 255


def check_output_dir(value: Path | None) -> Path | None:
    """Typer callback of every ``-o/--output-dir``: the folder can be made (no file in the way, not under
    ``/dev/null``, a path the file system accepts), else a usage error naming the flag (exit 2)."""
    if value is None:
        return None
    if len(os.fsencode(str(value))) > _PATH_MAX or any(len(os.fsencode(p)) > _NAME_MAX for p in value.parts):
        raise typer.BadParameter(f"path too long ({len(str(value)):,} characters)")
    probe = value
    while True:
        try:
            if probe.exists():
                break
        except OSError as exc:
            raise typer.BadParameter(f"{value}: {exc.strerror or exc}") from None
        if probe.parent == probe:
            return value
        probe = probe.parent
    if not probe.is_dir():
        what = "exists and is not a folder" if probe == value else "is not a folder, so no folder can be made under it"
        raise typer.BadParameter(f"{probe} {what}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"{probe} is not writable")
    return value


def forwards_interrupts(fn: F) -> F:
    """For a command that runs children: Ctrl-C/SIGTERM stop them too, and the run keeps what it measured
    (:mod:`magpie_core.runtime.interrupts`). Put it above :func:`handle_errors`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with handling_interrupts():
                result = fn(*args, **kwargs)
            if received() is not None:  # the command ended without noticing the signal
                err_console.print("[yellow]interrupted[/yellow]", soft_wrap=True)
            return result
        except (typer.Exit, SystemExit):
            raise
        except BaseException as exc:
            if received() is None:
                raise
            _say_interrupted_by(exc)  # an error while stopping must not end the run without a word
        finally:
            if received() is not None:
                exit_now()  # interrupted: report written, message printed; exit before anything else can hang

    return wrapper  # type: ignore[return-value]


def _say_interrupted_by(exc: BaseException) -> None:
    from magpie_core.cli.failures import write_error_log

    log = write_error_log(exc, sys.argv)
    where = f"; details in {log}" if log else ""
    err_console.print(
        f"[yellow]interrupted[/yellow] ({type(exc).__name__} while stopping; no report was written){where}",
        soft_wrap=True,
    )
