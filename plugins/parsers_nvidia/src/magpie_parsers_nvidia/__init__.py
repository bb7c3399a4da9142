"""magpie kernel-name parsers: NVIDIA libraries: cuBLAS/cuBLASLt, CUTLASS, cuDNN, flash-attention, FlashInfer, NCCL."""
