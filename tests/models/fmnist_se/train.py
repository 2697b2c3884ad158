#!/usr/bin/python3
"""Trains the Fashion-MNIST model of the squeeze-excite / hardswish kind
(MobileNetV3's block: inverted residual, Hardswish, an SE gate of
GAP-1x1-ReLU-1x1-Hardsigmoid-Mul after each depthwise conv) and writes
model.onnx, calib/ and float_top1.txt here (tests/models/fmnist_train.py).
Deterministic; the output is committed."""
import os
import sys

import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fmnist_train  # noqa: E402
import nets  # noqa: E402

if __name__ == "__main__":
    fmnist_train.run(lambda: nets.MobileNetLike(cin=1, act=nn.Hardswish, se=True), HERE, epochs=2, lr=5e-3)
