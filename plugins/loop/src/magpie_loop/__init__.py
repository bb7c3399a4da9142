"""magpie-loop: the optimization loop as one record.

``magpie loop start|add|status|report`` keeps ``loop.json`` in a loop folder linking the baseline
benchmark, the profiled run and its analyses, the selected kernels with their source mapping, each
kernel compare, and the final re-benchmark; ``magpie loop report`` writes the optimization report
whose conclusion is "success" only when every condition holds (docs/optimization-loop.md). The same
operations are MCP tools (``loop_start``, ``loop_add``, ``loop_status``, ``loop_report``).
"""
