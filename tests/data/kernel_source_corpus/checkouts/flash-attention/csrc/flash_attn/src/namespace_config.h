// Extract of Dao-AILab/flash-attention @ 0251105a2fb1, csrc/flash_attn/src/namespace_config.h: the namespace macro; the rest of the file is left out.
#ifndef FLASH_NAMESPACE
#define FLASH_NAMESPACE flash
#endif
