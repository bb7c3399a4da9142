# marker: triton package root (extract)
