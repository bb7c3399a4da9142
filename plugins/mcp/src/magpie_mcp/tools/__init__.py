"""The built-in MCP tools, one module per area; each module registers its tools through the hook."""
