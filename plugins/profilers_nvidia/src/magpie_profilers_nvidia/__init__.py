"""Nsight Compute for magpie."""
