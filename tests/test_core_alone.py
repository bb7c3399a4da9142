"""The core installs and works alone: no first-party plugin, a third-party one with the built-ins' powers, and the
PyTorch backend alone.

A fresh venv gets only ``magpie-core`` (dependencies from the package index or pip's cache), then the
test plugin package and the one distribution it needs, the trace library ``magpie-trace`` (pure Python: no
``magpie-trace-native``), then ``magpie-kernels-pytorch``; nothing else of the repository's distributions is
importable there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, TEST_PLUGINS

TRACE = DATA / "traces" / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


#: one xdist worker runs them all: pip builds a distribution's wheel in its source folder (ROOT/build), and two
#: workers building the core's at once collide there ("File exists: .../magpie_core-0.1.0.dist-info")
pytestmark = pytest.mark.xdist_group("core_alone")


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-compile",  # byte-compiling all of torch is half its install; Python compiles what it imports
            "-c",
            str(ROOT / "constraints.txt"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"pip install {' '.join(args)}: {done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def core_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("core_only")
    venv.create(where / "venv", with_pip=True)
    # built from a copy of what the core's distribution holds: pip builds a wheel in its source folder (build/), and
    # two builds in ROOT at once (another worker's, a developer's) collided there ("File exists .../dist-info")
    source = where / "magpie-core"
    shutil.copytree(ROOT / "magpie_core", source / "magpie_core", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    _pip(where / "venv" / "bin" / "python", str(source))
    return where / "venv" / "bin"


def _magpie(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "COLUMNS": "200", "NO_COLOR": "1", "HOME": str(cwd)}
    return subprocess.run(
        [str(bin_dir / "magpie"), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_core_alone_lists_its_one_builtin_and_has_no_plugin_commands(core_only, tmp_path):
    listed = _magpie(core_only, "plugins", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [(p["name"], p["distribution"]) for p in json.loads(listed.stdout)] == [("local", "magpie-core")]
    # the core names no plugin: a command nothing installed declares is unknown
    for command in ("gap", "inference", "benchmark"):
        result = _magpie(core_only, command, str(TRACE), cwd=tmp_path)
        assert result.returncode == 2
        assert f"No such command '{command}'" in result.stderr
    unknown = _magpie(core_only, "analyze", "-k", str(DATA / "kernels" / "numpy_kernel.yaml"), cwd=tmp_path)
    assert unknown.returncode == 2 and "no kernel backend named 'numpy' is installed" in unknown.stderr


def test_a_third_party_plugin_adds_a_command_and_an_analyzer(core_only, tmp_path):
    _pip(core_only / "python", "--no-deps", str(ROOT / "magpie_trace"), str(TEST_PLUGINS / "example_plugin"))
    result = _magpie(core_only, "kernel-count", str(TRACE), "--top", "2", "--output-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert len(summary["kernels"]) == 2 and all(count > 0 for count in summary["kernels"].values())
    listed = {p["name"]: p for p in json.loads(_magpie(core_only, "plugins", "--json", cwd=tmp_path).stdout)}
    assert listed["example"]["components"]["command"] == ["kernel-count"]
    analyzed = _magpie(core_only, "analyze", "-k", str(DATA / "kernels" / "numpy_kernel.yaml"), "--json", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    assert json.loads(analyzed.stdout)["results"][0]["correctness"]["status"] == "passed"
    assert sys.executable not in str(core_only)  # the test venv is not the one running the tests


def test_core_with_the_pytorch_plugin_alone_analyzes_and_compares(core_only, tmp_path):
    """``magpie-core`` plus ``magpie-kernels-pytorch`` (torch from the constraints), nothing else: ``analyze`` and
    ``compare`` of two PyTorch kernels work end to end (compile, correctness, timing, verdict)."""
    _pip(core_only / "python", str(ROOT / "plugins" / "pytorch"))
    softmax = ROOT / "examples" / "softmax" / "softmax.py"
    kernels = "".join(
        f"  - id: {kid}\n    type: pytorch\n    entry: {softmax}:{fn}\n    reference: {softmax}:reference\n"
        for kid, fn in (("eager", "softmax_eager"), ("eager_manual", "softmax_manual"))
    )
    config = tmp_path / "compare.yaml"
    config.write_text(f"baseline: eager\nperformance:\n  budget_seconds: 1\n  min_samples: 10\nkernels:\n{kernels}")
    compared = _magpie(core_only, "-o", str(tmp_path / "runs"), "compare", "-k", str(config), "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    results = json.loads(compared.stdout)["results"]["kernel_results"]
    assert {r["kernel_id"]: r["correctness"]["status"] for r in results} == {
        "eager": "passed",
        "eager_manual": "passed",
    }
    one = tmp_path / "analyze.yaml"
    one.write_text(
        f"performance:\n  budget_seconds: 1\n  min_samples: 10\nkernels:\n{kernels.split('  - id: eager_manual')[0]}"
    )
    analyzed = _magpie(core_only, "-o", str(tmp_path / "runs"), "analyze", "-k", str(one), "--json", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    (result,) = json.loads(analyzed.stdout)["results"]
    assert result["correctness"]["status"] == "passed" and result["performance"]["status"] == "passed"
