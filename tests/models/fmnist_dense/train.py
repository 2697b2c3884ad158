#!/usr/bin/python3
"""Trains the Fashion-MNIST model of the DenseNet kind (every BatchNorm
after a Concat) and writes model.onnx, calib/ and float_top1.txt here
(tests/models/fmnist_train.py). Deterministic; the output is committed."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fmnist_train  # noqa: E402
import nets  # noqa: E402

if __name__ == "__main__":
    fmnist_train.run(lambda: nets.DenseBlockNet(cin=1, stem=16, growth=12, layers=(3, 3), bottleneck=24,
                                                stem_stride=2),
                     HERE, epochs=3, lr=4e-3)
