"""The MCP server's trust model: what an untrusted client may make this machine do.

An MCP client (an AI agent, or anyone who can reach the port) is untrusted. The
server operator decides what it may do; nothing a client sends can widen that:

* **Where.** The kernel config file, the working directory of every kernel, the
  files a kernel names (sources, ``entry``/``reference`` files), output folders,
  report and trace paths must resolve (symlinks followed, ``..`` collapsed) to a
  path under an allowed root (``--root`` / ``mcp.allowed_roots``).
* **What runs.** By default only magpie's own harness runs: kernels in files under
  the allowed roots, evaluated by the built-in harness (``entry``/``reference``).
  Client-supplied ``compile_command`` / ``testcase_command`` / ``prof_command``
  (inline kernels and kernel YAML files alike) are refused unless the operator
  allowed programs (``--allow-commands PROG[,PROG]`` / ``mcp.allow_commands``).
  An allowed program is resolved once, with the *server's* PATH, and the command
  runs with that absolute path; a program given as a path must be that same file.
* **Environment.** A kernel's ``env`` (and a benchmark's ``server_env``) may set only the
  variables on a short allowlist (:data:`CLIENT_ENV`: launch-blocking and allocator switches,
  thread counts) and those the operator adds (``--allow-env`` / ``mcp.allow_env``, shell patterns
  allowed). Job processes get a scrubbed environment (:mod:`magpie_mcp.jobs`).
* **Every config field.** Each field of a kernel config (and of its plugin blocks, ``ray_config:``
  included) has a rule in :mod:`magpie_mcp.fields`; :meth:`TrustPolicy.check_field` applies it.
  Backend ``options`` are typed and bounded; a Ray cluster must be local or one the operator lists.
* **Python modules.** ``entry``/``reference`` given as ``module:function`` must name
  a module of an allowed package (``mcp.allowed_modules``; default torch, numpy,
  math, operator) or a module file under the kernel's working directory.
* **Timeouts.** Every ``*timeout*`` number a client sends must be finite and at most
  ``mcp.max_timeout_s``.

This confines what an agent can make magpie do; it is not a sandbox: magpie's own
harness imports the kernel's Python files (under the roots) with your user's rights.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from magpie_core.config.common import as_argv_list
from magpie_core.config.kernel import KernelConfig, KernelConfigFile
from magpie_mcp.fields import (
    MAX_CHARS,
    MAX_TEXT_CHARS,
    ClientOptions,
    Rule,
    benchmark_env_rule,
    rule_for,
    strings,
    walk,
)

#: environment variables a client may set in a kernel's ``env`` (or a benchmark's ``server_env``):
#: switches that change how a kernel is checked or timed, never where programs, libraries or caches are
#: found. The operator widens the list with ``--allow-env VAR`` / ``mcp.allow_env`` (shell patterns work).
CLIENT_ENV = frozenset(
    {
        "CUDA_LAUNCH_BLOCKING",
        "HIP_LAUNCH_BLOCKING",
        "AMD_SERIALIZE_KERNEL",
        "AMD_SERIALIZE_COPY",
        "CUBLAS_WORKSPACE_CONFIG",
        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_HIP_ALLOC_CONF",
        "PYTORCH_NO_CUDA_MEMORY_CACHING",
        "TORCH_SHOW_CPP_STACKTRACES",
        "TORCH_USE_CUDA_DSA",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
    }
)
DEFAULT_MODULES = ("torch", "numpy", "math", "operator")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
#: Ray addresses that stay on this machine: a new local runtime
LOCAL_RAY = ("", "local")
#: a model hub id: ``name`` or ``org/name``
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*(/[A-Za-z0-9][A-Za-z0-9_.\-]*)?")


class TrustError(PermissionError):
    """A tool input asks for something the server's policy does not allow."""


def env_allowed(name: str, allow_env: Iterable[str]) -> bool:
    """``name`` is on the client allowlist or matches one of the operator's names or patterns."""
    return name in CLIENT_ENV or any(fnmatch.fnmatchcase(name, pattern) for pattern in allow_env)


def check_size(value: Any, what: str, limit: int) -> None:
    """Every string in ``value`` is at most ``limit`` characters; the error names the field."""
    for where, text in strings(value):
        if len(text) > limit:
            raise TrustError(f"{what}{where[:200]}: {len(text)} characters, more than this server accepts ({limit})")


def resolve_programs(names: Iterable[str], search_path: str | None = None) -> dict[str, Path]:
    """Each allowed program (a name looked up on the server's PATH, or a path) -> its real file.

    An error when one cannot be found: the operator asked for it, so silence would hide a typo.
    """
    found: dict[str, Path] = {}
    for name in names:
        name = name.strip()
        if not name:
            continue
        where = shutil.which(name, path=search_path) if "/" not in name else name
        if where is None or not Path(where).is_file():
            raise ValueError(f"allowed command {name!r}: not found on the server's PATH")
        found[name] = Path(where).resolve()
    return found


@dataclass(frozen=True)
class TrustPolicy:
    roots: tuple[Path, ...]
    cwd: Path
    #: allowed program name (as the operator wrote it) -> its resolved file; empty: no client commands
    programs: dict[str, Path] = field(default_factory=dict)
    allow_env: frozenset[str] = frozenset()
    modules: tuple[str, ...] = DEFAULT_MODULES
    max_timeout_s: float = 3600.0
    #: the operator lets clients pass any backend options (compiler flags, torch.compile options)
    backend_options: bool = False
    #: Ray clusters a kernel file may connect to besides a local runtime
    ray_addresses: tuple[str, ...] = ()
    #: hosts a benchmark may send load to besides loopback
    benchmark_hosts: tuple[str, ...] = ()

    @classmethod
    def from_roots(cls, roots: Iterable[str | Path], cwd: Path | None = None, **options: Any) -> TrustPolicy:
        base = (cwd or Path.cwd()).resolve()
        resolved = tuple((base / Path(os.path.expandvars(str(r))).expanduser()).resolve() for r in roots)
        for root in resolved:
            if root == Path(root.anchor):
                raise ValueError(f"allowed root {root} is the file system root: name the folders an agent may use")
        return cls(roots=resolved or (base,), cwd=base, **options)

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)

    def is_allowed(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    # --- paths ---------------------------------------------------------------------

    def check_path(self, path: str | Path, what: str, base: Path | None = None) -> Path:
        """``path`` (relative to ``base``, default the server's CWD), resolved; an error if outside every root."""
        text = str(path)
        if "\x00" in text:
            raise TrustError(f"{what}: a path may not contain NUL bytes")
        # no $VAR expansion: a client path must not make the server reveal its environment in an error
        candidate = Path(text).expanduser()
        resolved = ((base or self.cwd) / candidate).resolve()
        if not self.is_allowed(resolved):
            raise TrustError(
                f"{what} {resolved} is outside the allowed workspace roots ({self.describe()}); "
                "the server operator can add a root (magpie mcp --root DIR, or mcp.allowed_roots)"
            )
        return resolved

    # --- commands ------------------------------------------------------------------

    def check_argv(self, argv: list[str], cwd: Path, what: str) -> list[str]:
        """``argv`` with its program pinned to the allowed file; an error when the policy refuses it."""
        if not argv:
            raise TrustError(f"{what}: empty command")
        if not self.programs:
            raise TrustError(
                f"{what}: this server runs only magpie's own harness (kernels in files under the allowed roots); "
                "client-supplied commands are refused. Use entry/reference instead, or ask the operator to start "
                "the server with --allow-commands PROG[,PROG]"
            )
        program = argv[0]
        if "/" in program:
            target = self.check_path(program, f"{what}: program", base=cwd)
        else:
            located = shutil.which(program)
            target = Path(located).resolve() if located else None
        allowed = sorted(self.programs)
        if target is None or target not in self.programs.values():
            raise TrustError(
                f"{what}: program {program!r} is not allowed by this server (allowed: {', '.join(allowed)}; "
                "resolved with the server's PATH)"
            )
        return [str(target), *argv[1:]]

    def check_env(self, env: dict[str, str], what: str) -> None:
        for name, value in env.items():
            check_size(name, f"{what} name", MAX_CHARS["name"])
            check_size(value, f"{what}: {name}", MAX_CHARS["env"])
            if not _ENV_NAME.fullmatch(name) or "\x00" in value:
                raise TrustError(f"{what}: {name!r} is not a valid environment variable name or value")
            if not env_allowed(name, self.allow_env):
                raise TrustError(
                    f"{what}: {name} is not a variable a client may set (allowed: {', '.join(sorted(CLIENT_ENV))}); "
                    "the operator can allow more with --allow-env VAR[,VAR] or mcp.allow_env (patterns like VLLM_*)"
                )

    def check_module(self, spec: str, cwd: Path, what: str) -> None:
        """``spec``'s module part: a file under a root, an allowed package, or a module file in ``cwd``."""
        module = spec.rsplit(":", 1)[0] if ":" in spec else None
        if module is None:
            return
        if module.endswith(".py") or "/" in module:
            self.check_path(module, f"{what} file", base=cwd)
            return
        top = module.split(".")[0]
        if top in self.modules:
            return
        local = [cwd / f"{top}.py", cwd / top]
        if top not in sys.stdlib_module_names and any(p.exists() and self.is_allowed(p.resolve()) for p in local):
            return
        raise TrustError(
            f"{what}: module {module!r} is neither a file under the allowed roots nor an allowed package "
            f"({', '.join(self.modules)}; mcp.allowed_modules)"
        )

    # --- whole kernel files ----------------------------------------------------------

    def check_kernel_file(self, file: KernelConfigFile, config_dir: Path) -> KernelConfigFile:
        """``file`` with every command's program pinned, after checking every field (:meth:`check_field`)."""
        self.check_path(config_dir, "config folder")
        self.check_timeouts(file.model_dump(), "kernel config")
        for owner, name, value, where in walk(file, skip=frozenset({"kernel", "kernels"})):
            self.check_field(rule_for(owner, name), value, f"kernel config: {where}", config_dir, config_dir)
        pinned = [self.check_kernel(kernel, config_dir) for kernel in file.all_kernels()]
        if file.kernel is not None:
            return file.model_copy(update={"kernel": pinned[0], "kernels": pinned[1:]})
        return file.model_copy(update={"kernels": pinned})

    def check_kernel(self, kernel: KernelConfig, config_dir: Path) -> KernelConfig:
        """``kernel`` with its commands pinned and its options normalized, after checking every field."""
        check_size(kernel.id, "kernel id", MAX_CHARS["name"])
        label = f"kernel {kernel.id!r}"
        cwd = self.check_path(kernel.resolved_working_dir(config_dir), f"{label}: working_dir")
        updates: dict[str, Any] = {}
        for owner, name, value, where in walk(kernel):
            checked = self.check_field(rule_for(owner, name), value, f"{label}: {where}", cwd, config_dir)
            if owner is KernelConfig and checked is not value:
                updates[name] = checked
        return kernel.model_copy(update=updates)

    def check_field(self, rule: Rule | None, value: Any, what: str, cwd: Path, config_dir: Path) -> Any:
        """The one check every kernel and benchmark config field goes through (:mod:`magpie_mcp.fields` says
        which rule each field has); returns the value to run with (commands pinned, options normalized)."""
        check_size(value, what, MAX_CHARS.get(rule or "", MAX_TEXT_CHARS))
        if rule is None:
            if isinstance(value, bool | int | float):
                return value
            # fail closed: a field this policy does not know may name code or files
            raise TrustError(f"{what}: this setting is not covered by this server's policy; the operator sets it")
        if rule == "text":
            return value
        if rule == "name":
            if any(c in value for c in "/\\\x00") or value.strip(".") == "":
                raise TrustError(f"{what}: {value!r} must be a plain name (no path separators)")
            return value
        if rule in ("path", "config_path"):
            base = cwd if rule == "path" else config_dir
            for path in [value] if isinstance(value, str) else value:
                self.check_path(path, what, base=base)
            return value
        if rule == "callable":
            if ":" not in value and not _ATTRIBUTE.fullmatch(value):
                raise TrustError(f"{what}: {value!r} must be 'module:function', 'file.py:function' or a function name")
            self.check_module(value, cwd, what)
            return value
        if rule == "module":
            self.check_module(f"{value}:x", cwd, what)
            return value
        if rule == "command":
            commands = as_argv_list(value)
            return [self.check_argv(argv, cwd, what) for argv in commands] if commands else value
        if rule == "env":
            self.check_env(value, what)
            return value
        if rule == "options":
            return self.check_options(value, what)
        if rule == "ray_address":
            if str(value) not in (*LOCAL_RAY, *self.ray_addresses):
                raise TrustError(
                    f"{what}: connecting to Ray cluster {value!r} is refused; a client may use a local runtime, "
                    "or a cluster the operator lists in mcp.ray_addresses"
                )
            return value
        if rule == "operator":
            if not value or self.programs:
                return value
            raise TrustError(
                f"{what}: this setting (container image, server arguments, GPU or profiler settings) is refused "
                "by this server's execution policy; the operator configures it, or allows it with --allow-commands"
            )
        if rule == "model":
            return self.check_model(str(value), what, cwd)
        if rule == "url":
            check_benchmark_target(str(value), self.benchmark_hosts, what)
            return value
        if rule == "loopback_host":
            if not host_is_loopback(str(value)):
                raise TrustError(f"{what}: {value!r}: a server magpie starts binds a loopback address only")
            return value
        if rule == "benchmark_envs":
            from magpie_benchmark.amd_magpie import CONSUMED

            for key, item in value.items():
                key_rule = benchmark_env_rule(str(key), CONSUMED)
                if key_rule == "env":
                    self.check_env({str(key): str(item)}, f"{what} (exported to the server)")
                elif item not in (None, ""):
                    self.check_field(key_rule, str(item), f"{what}.{key}", cwd, config_dir)
            return value
        raise AssertionError(f"unknown policy rule {rule!r}")

    def check_model(self, model: str, what: str, cwd: Path) -> str:
        """A model to serve: a local folder (under a root), or a hub id the serving framework downloads."""
        if not model:
            return model
        local = model.startswith(("/", ".", "~")) or (cwd / model).exists()
        if local:
            self.check_path(model, what, base=cwd)
        elif not _MODEL_ID.fullmatch(model):
            raise TrustError(f"{what}: {model!r} is neither a model id (org/name) nor a folder under an allowed root")
        return model

    def check_options(self, options: dict[str, Any], what: str) -> dict[str, Any]:
        """Backend options: typed and bounded (:class:`~magpie_mcp.fields.ClientOptions`) unless the
        operator allows any; free-form options reach compilers and ``torch.compile(**kwargs)``."""
        if self.backend_options or not options:
            return options
        flags = sorted(k for k in options if k.endswith("_flags"))
        if flags and not self.programs:
            raise TrustError(
                f"{what} {', '.join(flags)}: compiler flags from a client are refused by this server's "
                "execution policy (they can load plugins or replace tools); the operator can allow them with "
                "--allow-commands"
            )
        checked = {k: v for k, v in options.items() if k not in flags}
        try:
            typed = ClientOptions.model_validate(checked)
        except ValidationError as exc:
            problems = "; ".join(f"{what}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise TrustError(
                f"{problems} (a client may pass only {', '.join(ClientOptions.model_fields)}; the operator "
                "can allow any backend options with mcp.allow_backend_options)"
            ) from exc
        return typed.model_dump(exclude_unset=True) | {k: options[k] for k in flags}

    def check_timeouts(self, data: Any, what: str) -> None:
        """Every ``*timeout*`` number in ``data`` is finite and within the server's maximum."""
        for key, value in _numbers(data):
            if "timeout" not in key.rsplit(".", 1)[-1]:
                continue
            if not math.isfinite(value) or value > self.max_timeout_s:
                raise TrustError(
                    f"{what}: {key}={value:g} is above this server's maximum timeout of {self.max_timeout_s:g} s "
                    "(mcp.max_timeout_s)"
                )


def _numbers(data: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _numbers(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _numbers(value, f"{prefix}.{i}")
    elif isinstance(data, int | float) and not isinstance(data, bool):
        yield prefix, float(data)


# --- benchmark targets -----------------------------------------------------------------


def host_is_loopback(host: str) -> bool:
    """Every address ``host`` resolves to is a loopback address (a name is resolved here, once)."""
    import ipaddress
    import socket

    name = host.strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def check_benchmark_target(url: str, allowed_hosts: Iterable[str], what: str = "base_url") -> None:
    """``url`` is an http(s) URL of a loopback host or of a host the operator allowed (no SSRF)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018  (a bad port raises here)
    except ValueError as exc:
        raise TrustError(f"{what} {url!r} is not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise TrustError(f"{what} {url!r}: only http(s)://host[:port] URLs")
    allowed = {h.lower() for h in allowed_hosts}
    if host.lower() in allowed or host_is_loopback(host):
        return
    raise TrustError(
        f"{what} {url!r}: benchmark sends load only to loopback servers or hosts the operator allows "
        f"(mcp.benchmark_hosts); {host} is neither"
    )


def check_benchmark_config(policy: TrustPolicy, config: BaseModel) -> None:
    """A benchmark config from a tool call (``magpie_benchmark.config.BenchmarkConfig``): every field through
    :meth:`TrustPolicy.check_field`, as for kernel files (paths under the roots, no client-chosen code or
    server arguments, environment on the allowlist, loopback or allowed targets); timeouts capped."""
    policy.check_timeouts(config.model_dump(), "benchmark config")
    for owner, name, value, where in walk(config):
        policy.check_field(rule_for(owner, name), value, f"benchmark {where}", policy.cwd, policy.cwd)
