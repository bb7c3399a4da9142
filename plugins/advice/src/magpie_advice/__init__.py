"""magpie-advice: what magpie says about kernels and reports beyond running them.

* :mod:`magpie_advice.discovery`: kernel sources and kernel configs in a folder, by the installed
  kernel backends' ``source_patterns``.
* :mod:`magpie_advice.suggestions`: advice derived from what a report measured, each with its evidence.
* :mod:`magpie_advice.comparison`: benchmark reports side by side.

Its MCP tools (``discover_kernels``, ``suggest_optimizations``, ``compare_benchmark_reports``) are
registered through ``magpie_register_mcp_tools``, as any plugin's are.
"""
