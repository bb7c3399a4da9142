# Reduced extract of vllm-project/vllm, tests/kernels/attention/test_triton_unified_attention.py: the import and
# the call of the op under test, as upstream; parametrisation and reference computation shortened.
import pytest

from vllm.attention.ops.triton_unified_attention import unified_attention


def ref_paged_attn(query, key_cache, value_cache, query_lens, kv_lens, block_tables, scale):
    return query


@pytest.mark.parametrize("num_seqs", [1, 5])
def test_triton_unified_attn(num_seqs):
    unified_attention(q=None, k=None, v=None, out=None, cu_seqlens_q=None, max_seqlen_q=1, seqused_k=None,
                      max_seqlen_k=1, softmax_scale=1.0, causal=True, window_size=(-1, -1), block_table=None,
                      softcap=0, q_descale=None, k_descale=None, v_descale=None)
