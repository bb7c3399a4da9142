#!/usr/bin/env bash
# Install Debian's Chromium for the report tests (headless, driven by Playwright through executable_path).
# Idempotent: does nothing when a chromium is already on the PATH. Never run implicitly by magpie
# itself; `make test` calls it. Needs root (or sudo) and the Debian/Ubuntu archive.
set -euo pipefail
for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null 2>&1; then
    echo "chromium already installed: $(command -v "$name")"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_chromium.sh: apt-get not found; install chromium yourself to run the report browser tests" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup_chromium.sh: need root or sudo to apt-get install chromium" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation
command -v chromium
