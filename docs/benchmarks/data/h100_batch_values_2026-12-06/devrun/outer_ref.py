import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.outer(a, b)


def get_inputs():
    return [torch.randn(2048), torch.randn(2048)]


def get_init_inputs():
    return []
