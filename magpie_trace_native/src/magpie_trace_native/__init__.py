"""The optional compiled readers of magpie-trace (C extensions, built when the distribution is installed where a C
compiler is present):

* ``_kineto_scan``: reads one JSON array of Kineto events into the columns of
  :class:`magpie_trace.columns.TableBuilder` (no Python object per event, the GIL released);
* ``_kineto_kept``: the same tokenizer, building a sink's own msgspec structs for the events it keeps (used by the
  inference analyzer, ``magpie_inference_analysis.kept_reader``).

Nothing here is called directly: :mod:`magpie_trace.native` imports ``magpie_trace_native._kineto_scan`` and
``magpie_trace_native._kineto_kept`` when they are importable and checks that they were built from the same column
layout; ``MAGPIE_TRACE_NATIVE=0`` turns them off. Without this distribution (or without a compiler when it was
installed) every read takes the msgspec path, with the same results and errors.
"""
