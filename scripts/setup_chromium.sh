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
. "$(dirname "$0")/apt_install.sh"
apt_install "the report browser tests" chromium fonts-liberation
command -v chromium
