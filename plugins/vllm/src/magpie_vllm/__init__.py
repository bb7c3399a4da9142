"""magpie plugin: the vLLM serving framework."""
