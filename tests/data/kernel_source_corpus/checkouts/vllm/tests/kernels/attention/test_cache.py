# Reduced extract of vllm-project/vllm, tests/kernels/attention/test_cache.py: the imports and the op calls of
# two tests, as upstream; parametrisation and checks shortened.
import pytest

from vllm import _custom_ops as ops


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8"])
def test_reshape_and_cache(kv_cache_dtype):
    ops.reshape_and_cache(None, None, None, None, None, kv_cache_dtype, None, None)


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "fp8"])
def test_reshape_and_cache_flash(kv_cache_dtype):
    ops.reshape_and_cache_flash(None, None, None, None, None, kv_cache_dtype, None, None)
