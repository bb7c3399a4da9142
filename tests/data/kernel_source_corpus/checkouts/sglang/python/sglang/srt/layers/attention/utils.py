# Reduced extract of sgl-project/sglang, python/sglang/srt/layers/attention/utils.py: the decorator and def line of
# the Triton kernel as upstream; parameters after the fourth and the body are left out.
import triton
import triton.language as tl


@triton.jit
def create_flashinfer_kv_indices_triton(
    req_to_token_ptr,  # [max_batch, max_context_len]
    req_pool_indices_ptr,
    page_kernel_lens_ptr,
    kv_indptr,
):
    pass
