"""magpie kernel-name parsers: AMD libraries: CK Tile, CK, Tensile, hipBLASLt, AITER, HIP C++, rocclr blits, RCCL."""
