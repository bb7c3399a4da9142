import triton
import triton.language as tl


@triton.jit
def create_flashinfer_kv_indices_triton(req_to_token_ptr, req_pool_indices_ptr, kv_indptr, kv_indices_ptr):
    pass
