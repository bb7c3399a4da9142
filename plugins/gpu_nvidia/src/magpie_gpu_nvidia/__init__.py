"""magpie plugin: NVIDIA GPU detection through nvidia-smi."""
