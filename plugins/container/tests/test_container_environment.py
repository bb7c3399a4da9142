"""The `container` execution environment.

No Docker engine runs on our machines, so: the docker command is checked as
built, and the round trip runs through tests/helpers/fake_docker.py, which runs
the inner command directly. What a real container adds (isolation, the image's
own files) is not covered here.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

from magpie_env_container.plugin import ContainerEnvironment

from tests.conftest import DATA, ROOT

FAKE_DOCKER = ROOT / "tests" / "helpers" / "fake_docker.py"


class Item:
    def __init__(self, workdir: Path, config_dir: Path) -> None:
        self.workdir = str(workdir)
        self.config_dir = str(config_dir)


def test_command_for_nvidia_and_cpu_items(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    env = ContainerEnvironment(image="rocm/magpie:latest", docker="docker")
    item = Item(tmp_path / "ws" / "k", DATA / "kernels")
    call, result = tmp_path / "x" / "call.pkl", tmp_path / "x" / "result.pkl"
    argv = env.command(call, result, item, gpu=1, vendor="nvidia")
    assert argv[:3] == ["docker", "run", "--rm"]
    assert argv[argv.index("--gpus") + 1] == '"device=1"'
    assert f"{call.parent}:{call.parent}" in argv and f"{tmp_path / 'ws' / 'k'}:{tmp_path / 'ws' / 'k'}" in argv
    image_at = argv.index("rocm/magpie:latest")
    assert argv[image_at + 1 :] == ["python", "-m", "magpie_env_container.call", str(call), str(result)]
    amd = env.command(call, result, item, gpu=0, vendor="amd")
    assert "/dev/kfd" in amd and "HIP_VISIBLE_DEVICES=0" in amd
    cpu = env.command(call, result, item, gpu=None, vendor=None)
    assert "--gpus" not in cpu and "/dev/kfd" not in cpu


def test_missing_image_fails_each_item_clearly(monkeypatch):
    monkeypatch.delenv("MAGPIE_CONTAINER_IMAGE", raising=False)
    results = ContainerEnvironment().map(len, [[1], [2]])
    assert all("no container image" in str(r) for r in results)


def _stand_in_docker(tmp_path: Path) -> tuple[Path, Path]:
    """The stand-in docker client, run with this interpreter whatever is on PATH, and the log of its calls."""
    docker = tmp_path / "docker"
    docker.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE_DOCKER)!r}\n"
        f"runpy.run_path({str(FAKE_DOCKER)!r}, run_name='__main__')\n"
    )
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    return docker, tmp_path / "docker.log"


def test_analyze_round_trip_through_stand_in_docker(run_magpie, tmp_path):
    docker, log = _stand_in_docker(tmp_path)
    config = tmp_path / "k.yaml"
    K = DATA / "kernels"
    config.write_text(
        "performance:\n  budget_seconds: 0.5\n  min_samples: 3\n  warmup_ms: 1\n"
        "correctness:\n  timeout_seconds: 60\n"
        "kernels:\n"
        f"  - {{id: good, type: pytorch, entry: {K}/faulty.py:good, reference: {K}/faulty.py:reference}}\n"
        f"  - {{id: crashes, type: pytorch, entry: {K}/faulty.py:crashes, reference: {K}/faulty.py:reference}}\n"
    )
    result = run_magpie(
        [
            "-e",
            "container",
            "--docker-image",
            "magpie:test",
            "-o",
            str(tmp_path / "out"),
            "analyze",
            "-k",
            str(config),
            "--json",
        ],
        env={"MAGPIE_DOCKER": str(docker), "FAKE_DOCKER_LOG": str(log)},
    )
    assert result.returncode == 1, result.stderr  # `crashes` fails; `good` passes
    report = json.loads(result.stdout)
    by_id = {r["kernel_id"]: r for r in report["results"]}
    assert by_id["good"]["correctness"]["status"] == "passed"
    assert by_id["good"]["performance"]["timing"]["median"] > 0
    assert by_id["crashes"]["correctness"]["status"] == "error"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2 and {c["image"] for c in calls} == {"magpie:test"}


def test_compare_checks_and_times_in_one_container(run_magpie, tmp_path):
    """A compare's referee side goes into the container with the candidates (one `docker run`, interleaved blocks
    there): a candidate that replaces the output comparison in its own process is caught as on this machine."""
    docker, log = _stand_in_docker(tmp_path)
    hacks = ROOT / "plugins" / "pytorch" / "tests" / "data" / "reward_hacks"
    files = [str(hacks / f"softmax_{name}.py") for name in ("ref", "honest", "patch_compare")]
    args = ["-e", "container", "--docker-image", "magpie:test", "-o", str(tmp_path / "out"), "compare", *files]
    result = run_magpie([*args, "--json", "--no-html"], env={"MAGPIE_DOCKER": str(docker), "FAKE_DOCKER_LOG": str(log)})
    assert result.returncode in (0, 1), result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["settings"]["timing"] == "interleaved blocks, in one 'container' task"
    rows = {r["kernel_id"]: r["correctness"] for r in report["results"]["kernel_results"]}
    assert rows["softmax_honest"]["status"] == "passed", rows
    assert "REJECTED (integrity" in rows["softmax_patch_compare"]["message"], rows
    assert len(log.read_text().splitlines()) == 1  # one container for the whole compare
