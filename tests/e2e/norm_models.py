#!/usr/bin/python3
"""norm_models.py DIR: transformer-block test models exported by torch at
opset 13 (GELU erf and tanh, decomposed LayerNorm, Softmax, a pre-norm MLP
block, a mean over tokens), each with a calibration set DIR/NAME_calib/ and an input
DIR/NAME_input.npy (random weights, fixed seeds)."""
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

warnings.filterwarnings("ignore")
T, D = 16, 64


class LN(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


class Gelu(nn.Module):
    def __init__(self, approximate):
        super().__init__()
        self.fc, self.act, self.out = nn.Linear(D, D), nn.GELU(approximate=approximate), nn.Linear(D, D)

    def forward(self, x):
        return self.out(self.act(self.fc(x)))


class Softmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(D, D)

    def forward(self, x):
        return torch.softmax(self.fc(x) * 2.0, -1)


class Block(nn.Module):
    """pre-norm MLP block with a residual, then LN, a head and Softmax (the
    attention matmuls of two activations are not in here: no integer form yet)."""

    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.fc1, self.fc2, self.head = nn.Linear(D, 2 * D), nn.Linear(2 * D, D), nn.Linear(D, D)
        self.act = nn.GELU()

    def forward(self, x):
        x = x + self.fc2(self.act(self.fc1(self.ln1(x))))
        return torch.softmax(self.head(self.ln2(x)), -1)


class TokenMean(nn.Module):
    """a ViT's head: LayerNorm, the mean over tokens (ReduceMean), a Linear"""

    def __init__(self):
        super().__init__()
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, 10)

    def forward(self, x):
        return self.head(self.ln(x).mean(1))


class LongSoftmax(nn.Module):
    """rows of 5000: beyond npu-v1-narrow's 4096-element softmax rows"""

    def forward(self, x):
        return torch.softmax(x, -1)


def export(d, name, model, scale=2.0, shape=(T, D)):
    torch.manual_seed(1)
    x = torch.randn(*shape) * scale
    torch.onnx.export(model, x, f"{d}/{name}.onnx", opset_version=13)
    np.save(f"{d}/{name}_input.npy", x.numpy())
    os.makedirs(f"{d}/{name}_calib", exist_ok=True)
    for i in range(8):
        np.save(f"{d}/{name}_calib/{i}.npy", (torch.randn(*shape) * scale).numpy())


def main(d):
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    with torch.no_grad():
        export(d, "layernorm", LN())
        export(d, "gelu_erf", Gelu("none"))
        export(d, "gelu_tanh", Gelu("tanh"))
        export(d, "softmax", Softmax())
        export(d, "block", Block(), scale=1.0)
        export(d, "softmax_long", LongSoftmax(), shape=(2, 5000))
        export(d, "tokmean", TokenMean(), shape=(1, T, D))


if __name__ == "__main__":
    main(sys.argv[1])
