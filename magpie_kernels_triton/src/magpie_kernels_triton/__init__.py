"""Triton kernels for magpie."""
