# marker: flash_attn package root (extract)
