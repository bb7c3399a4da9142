# marker: sglang package root (extract)
