"""magpie gap analysis: kernel time tables, GPU idle gaps and launch-boundness from PyTorch profiler traces.

A magpie plugin (entry point ``gap``): the ``gap`` trace analyzer (:class:`~magpie_gap_analysis.analyzer.GapAnalyzer`)
and the ``magpie gap`` command. :func:`magpie_gap_analysis.pipeline.gap_analysis` is the pipeline they run.
"""
