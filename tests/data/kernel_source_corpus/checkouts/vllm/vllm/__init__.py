# marker: vllm package root (extract)
