"""Paths to the shared test data; the shared fixtures are in the repository's root conftest.py."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"

# tests/data holds fixture trees (e.g. miniature checkouts with their own tests/): never collect them
collect_ignore_glob = ["data/*"]
