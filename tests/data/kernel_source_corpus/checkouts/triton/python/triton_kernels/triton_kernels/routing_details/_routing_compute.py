# Reduced extract of triton-lang/triton, python/triton_kernels/triton_kernels/routing_details/_routing_compute.py:
# the decorators and def lines of two kernels as upstream (parameter lists shortened, bodies left out).
import triton
import triton.language as tl


@triton.jit
def _combined_routing_memset(Indx, size, sentinel, BLOCK: tl.constexpr):
    pass


@triton.jit
def _combined_routing_compute(GatherIndx, ScatterIndx, GateScal, ExptScal, ExptIndx, PartialOffs, stride_pm, stride_pn,
                              TokensStart, n_tokens, BLOCK_M: tl.constexpr, N_EXPTS_ACT: tl.constexpr):
    pass
