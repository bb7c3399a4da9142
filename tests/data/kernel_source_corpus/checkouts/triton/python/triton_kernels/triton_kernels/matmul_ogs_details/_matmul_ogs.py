# Reduced extract of triton-lang/triton @ dbe4f3cbd9e3,
# python/triton_kernels/triton_kernels/matmul_ogs_details/_matmul_ogs.py: the imports, the repr assignment and
# the two-line @triton.jit(...) decorator verbatim; the parameter list is shortened and the body left out.
# isort: off
# fmt: off
import triton
import triton.language as tl
from ._common import make_matmul_repr, matmul_launch_metadata, swizzle2d, xcd_swizzle, get_scaled_dot_format_string


_matmul_ogs_repr = make_matmul_repr("_matmul_ogs", [0, 1, 2])
@triton.jit(do_not_specialize=["TOKENS_PER_EXPT_FOR_ANNOTATION"],
            repr=_matmul_ogs_repr, launch_metadata=matmul_launch_metadata)
def _matmul_ogs(
             Y, YPtr, stride_y_k, stride_y_z, stride_y_m, stride_y_n,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pass
