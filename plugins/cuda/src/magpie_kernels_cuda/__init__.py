"""CUDA kernels for magpie: nvcc builds, ptxas resource reports, NVIDIA GPU detection."""
