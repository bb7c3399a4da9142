"""KernelBench files through the MCP tools, without a YAML, as ``magpie compare ref.py sol.py`` takes them.

A real ``magpie mcp`` over stdio (the MCP SDK's client); the files are the pytorch plugin's tiny ReLU problem.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from magpie_mcp.testing import call, call_error, run_session, write_workspace
from mcp import ClientSession

KERNELBENCH = Path(__file__).parents[2] / "pytorch" / "tests" / "data" / "kernelbench"
FILES = ("relu_reference.py", "relu_clamp.py", "relu_wrong.py")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The server's CWD and only allowed root, holding a copy of the problem and two solutions."""
    ws = write_workspace(tmp_path / "ws", roots=[tmp_path / "ws"])
    for name in FILES:
        shutil.copy(KERNELBENCH / name, ws / name)
    return ws


def test_compare_and_analyze_take_kernelbench_files_without_a_yaml(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(KERNELBENCH / "relu_clamp.py", outside / "relu_clamp.py")

    async def scenario(s: ClientSession) -> None:
        compared = await call(s, "compare", {"sources": list(FILES), "measure_performance": False})
        results = {r["kernel_id"]: r["correctness"] for r in compared["report"]["results"]["kernel_results"]}
        assert compared["report"]["baseline_id"] == "relu_reference"
        clamp, wrong = results["relu_clamp"], results["relu_wrong"]
        # checked the way KernelBench checks: its tolerances, five input sets
        assert clamp["status"] == "passed" and clamp["trials"] == 5 and "preset 'kernelbench'" in clamp["message"]
        assert wrong["status"] == "failed" and "largest error at index" in wrong["message"]
        # AMD Magpie's kernel_paths naming KernelBench files: the same compare, not a HIP build of .py files
        by_paths = await call(s, "compare", {"kernel_paths": list(FILES), "measure_performance": False})
        assert by_paths["report"]["baseline_id"] == "relu_reference"
        assert [r["correctness"]["status"] for r in by_paths["report"]["results"]["kernel_results"]] == [
            r["status"] for r in results.values()
        ]

        analyzed = await call(
            s,
            "analyze",
            {"sources": ["relu_reference.py", "relu_clamp.py"], "wait": True, "measure_performance": False},
        )
        assert analyzed["passed"] is True and len(analyzed["report"]["results"]) == 2

        # a YAML's kernelbench: block is written out as the CLI writes it
        (workspace / "kb.yaml").write_text(
            "kernelbench:\n  reference: relu_reference.py\n  solutions: [relu_wrong.py]\n"
        )
        from_yaml = await call(s, "compare", {"kernel_config": "kb.yaml", "measure_performance": False})
        states = {r["kernel_id"]: r["correctness"]["status"] for r in from_yaml["report"]["results"]["kernel_results"]}
        assert states == {"relu_reference": "passed", "relu_wrong": "failed"}

        # paths still go through the trust policy, and a solution alone says what to add
        msg = await call_error(s, "compare", {"sources": ["relu_reference.py", str(outside / "relu_clamp.py")]})
        assert "outside the allowed workspace roots" in msg
        assert "give the reference first" in await call_error(s, "analyze", {"sources": ["relu_clamp.py"]})
        msg = await call_error(s, "compare", {"sources": ["config.yaml", "relu_clamp.py"]})
        assert "no installed plugin recognises" in msg

    run_session(workspace, scenario)
