"""magpie kernel-name parsers: PyTorch: Triton JIT, Inductor, ATen native."""
