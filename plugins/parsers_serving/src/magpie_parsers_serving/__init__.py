"""magpie kernel-name parsers: serving engines: vLLM and SGLang custom kernels."""
