#!/usr/bin/python3
"""Trains the Fashion-MNIST vision transformer (7x7 patches: 16 tokens,
width 32, 4 heads, MLP 64, two blocks: one nn.GELU() erf form, one tanh form) and
writes model.onnx, calib/ and float_top1.txt here
(tests/models/fmnist_train.py). Deterministic; the output is committed."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fmnist_train  # noqa: E402
import nets  # noqa: E402

if __name__ == "__main__":
    fmnist_train.run(lambda: nets.ViT(cin=1, size=28, patch=7, dim=32, heads=4, mlp=64), HERE, epochs=4, lr=2e-3)
