import triton


@triton.autotune(configs=[], key=["n"])
@triton.jit
def _topk_forward(x_ptr, y_ptr, n):
    pass
