"""Run magpie work items inside containers."""
