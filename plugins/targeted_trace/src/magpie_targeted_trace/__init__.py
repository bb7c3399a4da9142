"""AMD Magpie's TargetedKernelTrace: selected kernels of PyTorch profiler traces as checksummed evidence shards
(:mod:`magpie_targeted_trace.contract`), made by :mod:`~magpie_targeted_trace.adapt` and checked by
:mod:`~magpie_targeted_trace.postprocess`."""
