# Reduced extract of triton-lang/triton, python/triton_kernels/tests/test_matmul.py: the import of the op and
# the test calling it, as upstream; parametrisation and reference checks shortened.
import pytest

from triton_kernels.matmul_ogs import matmul_ogs


def init_routing_data(m, n_expts_tot, n_expts_act):
    return None


@pytest.mark.parametrize("m, n, k", [(16, 128, 256)])
def test_op(m, n, k):
    matmul_ogs(None, None, None)


def test_unrelated_helper():
    assert init_routing_data(1, 1, 1) is None
