# marker: flashinfer package root (extract)
