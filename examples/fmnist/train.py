#!/usr/bin/python3
"""Trains the example Fashion-MNIST CNN and exports it for npucc.

Writes, next to this script:
  fmnist_cnn.onnx   the model (opset 13, input [1,1,28,28] float in [0,1])
  calib/NNN.npy     100 calibration samples from the training set
  float_top1.txt    the float test accuracy measured here (torch)

Uses Debian's python3-torch and the dataset-fashion-mnist package. The
output is committed; rerun only to change the model. Deterministic
(fixed seeds, one thread).
"""
import gzip
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))


def load(kind):
    with gzip.open(f"{DATA}/{kind}-images-idx3-ubyte.gz") as f:
        _, n, h, w = struct.unpack(">IIII", f.read(16))
        x = np.frombuffer(f.read(), np.uint8).reshape(n, 1, h, w)
    with gzip.open(f"{DATA}/{kind}-labels-idx1-ubyte.gz") as f:
        f.read(8)
        y = np.frombuffer(f.read(), np.uint8)
    return x.astype(np.float32) / 255.0, y.astype(np.int64)


class Net(nn.Module):
    """Conv-BN-ReLU blocks, a depthwise separable block, a residual add,
    pooling, and a classifier: the op mix the NPU is built for."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16), nn.ReLU6())
        self.pw = nn.Sequential(nn.Conv2d(16, 16, 1), nn.BatchNorm2d(16))
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.pool2 = nn.MaxPool2d(2)
        self.conv3 = nn.Sequential(nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(x + self.pw(self.dw(x)))
        x = self.pool2(self.conv2(self.pool1(x)))
        x = self.gap(self.conv3(x))
        return self.fc(torch.flatten(x, 1))


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    epochs = int(os.environ.get("EPOCHS", "8"))
    bs = 128
    for ep in range(epochs):
        net.train()
        perm = np.random.permutation(len(xtr))
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            loss = nn.functional.cross_entropy(net(torch.from_numpy(xtr[idx])), torch.from_numpy(ytr[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {ep}: loss {loss.item():.3f}", file=sys.stderr)
    net.eval()
    with torch.no_grad():
        pred = np.concatenate([net(torch.from_numpy(xte[i:i + 1000])).argmax(1).numpy()
                               for i in range(0, len(xte), 1000)])
    top1 = float((pred == yte).mean())
    print(f"float top-1 {top1:.4f}")
    with open(os.path.join(HERE, "float_top1.txt"), "w") as f:
        f.write(f"{top1:.4f}\n")
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), os.path.join(HERE, "fmnist_cnn.onnx"), opset_version=13,
                      input_names=["image"], output_names=["logits"])
    cal = os.path.join(HERE, "calib")
    os.makedirs(cal, exist_ok=True)
    pick = np.random.RandomState(1).choice(len(xtr), 100, replace=False)
    for k, i in enumerate(pick):
        np.save(os.path.join(cal, f"{k:03d}.npy"), xtr[i:i + 1])


if __name__ == "__main__":
    main()
