#!/usr/bin/env python3
"""A stand-in for the `docker` client (no Docker engine runs on CI machines).

`fake_docker.py run [options] IMAGE CMD...` checks the options magpie passes,
records the argv to $FAKE_DOCKER_LOG, and runs CMD directly on this machine
with the `-e` variables, with `python` meaning this interpreter. Everything a
real container would do beyond that (isolation, the image's own files) is
not simulated.
"""

import json
import os
import subprocess
import sys

TAKES_VALUE = {
    "--name",
    "--network",
    "--ipc",
    "--shm-size",
    "--gpus",
    "--device",
    "--group-add",
    "--security-opt",
    "--cap-add",
    "-e",
    "-v",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "run":
        print(f"fake docker: unsupported command {argv[:1]}", file=sys.stderr)
        return 125
    env = dict(os.environ)
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        flag = argv[i]
        if flag == "--rm":
            i += 1
            continue
        if flag not in TAKES_VALUE:
            print(f"fake docker: unknown option {flag}", file=sys.stderr)
            return 125
        value = argv[i + 1]
        if flag == "-e":
            key, _, val = value.partition("=")
            if _:
                env[key] = val
        i += 2
    image, cmd = argv[i], argv[i + 1 :]
    if os.environ.get("FAKE_DOCKER_LOG"):
        with open(os.environ["FAKE_DOCKER_LOG"], "a") as log:
            log.write(json.dumps({"argv": argv, "image": image}) + "\n")
    if cmd and cmd[0] == "python":
        cmd = [sys.executable, *cmd[1:]]
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
