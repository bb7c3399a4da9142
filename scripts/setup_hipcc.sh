#!/usr/bin/env bash
# Install Debian's hipcc (ROCm 5.2) for compile-only HIP tests on CI and dev machines.
# Idempotent: does nothing when hipcc is already on the PATH. Never run implicitly by magpie
# itself; `make test` calls it. Needs root (or sudo) and the Debian/Ubuntu archive.
set -euo pipefail
if command -v hipcc >/dev/null 2>&1; then
  echo "hipcc already installed: $(command -v hipcc)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_hipcc.sh: apt-get not found; install hipcc (ROCm) yourself to run the HIP compile tests" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup_hipcc.sh: need root or sudo to apt-get install hipcc" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends hipcc
command -v hipcc
