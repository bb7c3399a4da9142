"""HIP kernels for magpie: hipcc builds, resource remarks, AMD GPU detection."""
