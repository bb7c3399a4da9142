#!/usr/bin/env bash
# Shared by the setup_*.sh scripts: `apt_install WHAT PACKAGE...` installs Debian packages for WHAT (a phrase for
# messages), with sudo when not root. Never run implicitly by magpie itself; `make test` calls the setup scripts.
apt_install() {
  local what=$1
  shift
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not found; install $* yourself to run $what" >&2
    exit 1
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "need root or sudo to apt-get install $* (for $what)" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  # `make test` runs its setup steps side by side: one apt at a time (apt's own lock would fail, not wait)
  (
    if command -v flock >/dev/null 2>&1; then flock 9; fi
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "$@"
  ) 9>"${TMPDIR:-/tmp}/magpie-apt.lock"
}
