"""Pipelines: the engine-neutral flows behind each CLI command and MCP tool."""
