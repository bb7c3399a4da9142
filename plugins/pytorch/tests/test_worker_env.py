"""The pytorch backend's worker environment reaches its workers, and only them (GOMP_SPINCOUNT: see
``HarnessBackend.worker_env``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, multiprocessing.forkserver as fs, os, time
from magpie_core.measurement.worker_client import warm_fork_server
warm_fork_server()
server = fs._forkserver._forkserver_pid
# the server may still be between fork and exec (its environ reads empty then) on a busy machine: wait for PATH
for _ in range(200):
    environ = dict(v.split("=", 1) for v in open(f"/proc/{server}/environ").read().split("\\0") if "=" in v)
    if "PATH" in environ:
        break
    time.sleep(0.05)
print(json.dumps({"server": environ.get("GOMP_SPINCOUNT"), "here": os.environ.get("GOMP_SPINCOUNT")}))
"""


def _probe(env: dict[str, str]) -> dict[str, str | None]:
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_fork_server_starts_with_the_backends_worker_env_and_this_process_keeps_its_own() -> None:
    clean = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    assert _probe(clean) == {"server": "10000", "here": None}
    assert _probe({**clean, "GOMP_SPINCOUNT": "5"}) == {"server": "5", "here": "5"}  # the user's value wins
