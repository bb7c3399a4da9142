"""rocprofv3 and rocprof-compute for magpie."""
