"""Trace engine: lean loading of PyTorch profiler traces, rank discovery, per-rank analysis."""

from magpie_core.trace.discover import TraceFile, discover, find_trace_files
from magpie_core.trace.loader import Event, LoadedTrace, TraceLoadError, load_trace

__all__ = ["Event", "LoadedTrace", "TraceFile", "TraceLoadError", "discover", "find_trace_files", "load_trace"]
