"""magpie plugin: AMD GPU detection through amd-smi (or rocm-smi)."""
