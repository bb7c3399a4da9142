"""The public trace-reading library for trace analyzers: lean loading of PyTorch profiler traces, rank discovery,
column tables (:mod:`~magpie_core.trace.columns`), byte-range parts of large files (:mod:`~magpie_core.trace.parts`),
kernel-name parsing (:mod:`~magpie_core.trace.kernel_names`)."""

from magpie_core.trace.discover import TraceFile, discover, find_trace_files
from magpie_core.trace.loader import Event, LoadedTrace, TraceLoadError, load_trace

__all__ = ["Event", "LoadedTrace", "TraceFile", "TraceLoadError", "discover", "find_trace_files", "load_trace"]
