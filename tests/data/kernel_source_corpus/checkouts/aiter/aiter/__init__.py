# marker: aiter package root (extract)
