#!/usr/bin/env bash
# Install the official MCP Inspector (npm) into ./.npm-inspector for the test that drives its CLI against
# `magpie mcp` (plugins/mcp/tests/test_mcp_inspector_cli.py). Project-local: no global install, no sudo.
# Idempotent: an install whose stamp matches the pinned version is left as it is (no npm call).
# Never fails: without npm, or when the install or the Inspector itself does not work here, it says why and
# exits 0, and the test is skipped with that reason (`make test` goes on).
#   bash scripts/setup_inspector.sh                 # creates ./.npm-inspector
#   INSPECTOR_SPEC=@modelcontextprotocol/inspector@2.12.0 bash scripts/setup_inspector.sh
set -uo pipefail
cd "$(dirname "$0")/.."
# pinned: the test asserts the Inspector's CLI options and its JSON output, which change between releases
INSPECTOR_SPEC=${INSPECTOR_SPEC:-@modelcontextprotocol/inspector@2.12.0}
DIR=${INSPECTOR_DIR:-.npm-inspector}
STAMP="$DIR/.magpie-inspector-installed"
BIN="$DIR/node_modules/.bin/mcp-inspector"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$INSPECTOR_SPEC" ] && [ -x "$BIN" ]; then
  echo "setup_inspector: $DIR already has $INSPECTOR_SPEC"
  exit 0
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup_inspector: no $tool on PATH: the MCP Inspector CLI test will be skipped (install Node.js and npm)"
    exit 0
  fi
done
rm -rf "$DIR"
mkdir -p "$DIR"
# --ignore-scripts: the package's only install script installs its clients in a source checkout (a no-op here);
# nothing of it needs to run at install time
if ! npm install --prefix "$DIR" --no-audit --no-fund --ignore-scripts --loglevel=error "$INSPECTOR_SPEC"; then
  echo "setup_inspector: npm install $INSPECTOR_SPEC failed (registry unreachable?): the test will be skipped"
  rm -rf "$DIR"
  exit 0
fi
# the Inspector declares node >= 22.19 but its CLI runs on node 20; an install that does not start here is removed,
# so the test is skipped instead of failing on the machine's node
if ! version=$(HOME="$DIR" MCP_INSPECTOR_SECRET_STORE=memory "$BIN" --cli --version 2>&1); then
  echo "setup_inspector: $INSPECTOR_SPEC does not run on node $(node --version): $version"
  echo "setup_inspector: the test will be skipped"
  rm -rf "$DIR"
  exit 0
fi
echo "$INSPECTOR_SPEC" > "$STAMP"
echo "setup_inspector: $INSPECTOR_SPEC installed in $DIR (CLI $version, node $(node --version))"
