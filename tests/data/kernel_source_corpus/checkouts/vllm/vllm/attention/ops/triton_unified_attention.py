# Reduced extract of vllm-project/vllm @ 1c98a4967619, vllm/attention/ops/triton_unified_attention.py:
# the decorators and def lines of the three Triton kernels and of the launching function, as upstream;
# parameter lists, bodies and launch arguments are shortened.
import triton
import triton.language as tl


@triton.jit
def kernel_unified_attention_2d(
    output_ptr,  # [num_tokens, num_query_heads, head_size]
    query_ptr,  # [num_tokens, num_query_heads, head_size]
    key_cache_ptr,  # [num_blks, blk_size, num_kv_heads, head_size]
):
    pass


@triton.jit
def kernel_unified_attention_3d(
    segm_output_ptr,
    query_ptr,  # [num_tokens, num_query_heads, head_size]
    key_cache_ptr,  # [num_blks, blk_size, num_kv_heads, head_size]
):
    pass


@triton.jit
def reduce_segments(
    output_ptr,  # [num_tokens, num_query_heads, head_size]
    segm_output_ptr,
):
    pass


def unified_attention(q, k, v, out, cu_seqlens_q, max_seqlen_q, seqused_k, max_seqlen_k, softmax_scale, causal,
                      window_size, block_table, softcap, q_descale, k_descale, v_descale):
    if max_seqlen_q > 1:
        kernel_unified_attention_2d[(1, 1)](output_ptr=out, query_ptr=q, key_cache_ptr=k)
    else:
        kernel_unified_attention_3d[(1, 1, 1)](segm_output_ptr=out, query_ptr=q, key_cache_ptr=k)
        reduce_segments[(1, 1)](output_ptr=out, segm_output_ptr=out)
