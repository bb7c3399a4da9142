#!/usr/bin/env bash
# Install Debian's hipcc (ROCm 5.2) for compile-only HIP tests on CI and dev machines.
# Idempotent: does nothing when hipcc is already on the PATH. Never run implicitly by magpie
# itself; `make test` calls it. Needs root (or sudo) and the Debian/Ubuntu archive.
set -euo pipefail
if command -v hipcc >/dev/null 2>&1; then
  echo "hipcc already installed: $(command -v hipcc)"
  exit 0
fi
. "$(dirname "$0")/apt_install.sh"
apt_install "the HIP compile tests" hipcc
command -v hipcc
