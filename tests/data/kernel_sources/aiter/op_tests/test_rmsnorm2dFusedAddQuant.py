import aiter


def torch_rmsnorm_quant(x, weight, eps):
    return x


def test_add_rmsnorm_quant():
    # aiter.add_rmsnorm_quant -> add_rmsnorm_quant_kernel
    aiter.add_rmsnorm_quant(None, None, None)
    assert torch_rmsnorm_quant is not None
