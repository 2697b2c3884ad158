#!/usr/bin/python3
"""Trains the Fashion-MNIST model of the MobileNetV2 kind (inverted
residuals, ReLU6, depthwise 3x3, linear bottlenecks with residual adds) and
writes model.onnx, calib/ and float_top1.txt here
(tests/models/fmnist_train.py). Deterministic; the output is committed."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fmnist_train  # noqa: E402
import nets  # noqa: E402

if __name__ == "__main__":
    fmnist_train.run(lambda: nets.MobileNetLike(cin=1), HERE, epochs=2, lr=5e-3)
