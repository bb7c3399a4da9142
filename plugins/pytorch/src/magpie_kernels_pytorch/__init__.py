"""PyTorch kernels for magpie, plus the harness other Python-callable backends reuse."""
