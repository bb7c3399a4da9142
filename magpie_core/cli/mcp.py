"""Moved: ``magpie mcp`` comes from the magpie-mcp plugin (``plugins/mcp``, ``magpie_register_commands``).

Kept empty until ``magpie_core/cli/__init__.py`` stops importing it; then delete this file.
"""
