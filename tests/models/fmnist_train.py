"""Shared training loop of the Fashion-MNIST test models (the style of
examples/fmnist/train.py): Debian's dataset-fashion-mnist, Adam, fixed seeds,
then writes into the model's folder

  model.onnx      opset 13, input "image" [1,1,28,28] float in [0,1]
  calib/NNN.npy   100 calibration samples from the training set
  float_top1.txt  the float top-1 measured here by torch on the 10k test set

The outputs are committed; rerun only to change a model."""
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def load(kind):
    with gzip.open(f"{DATA}/{kind}-images-idx3-ubyte.gz") as f:
        _, n, h, w = struct.unpack(">IIII", f.read(16))
        x = np.frombuffer(f.read(), np.uint8).reshape(n, 1, h, w)
    with gzip.open(f"{DATA}/{kind}-labels-idx1-ubyte.gz") as f:
        f.read(8)
        y = np.frombuffer(f.read(), np.uint8)
    return x.astype(np.float32) / 255.0, y.astype(np.int64)


def run(make_net, out, epochs, lr):
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    epochs = int(os.environ.get("EPOCHS", str(epochs)))
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    net = make_net()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    steps = epochs * ((len(xtr) + 127) // 128)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    bs, t0 = 128, time.time()
    for ep in range(epochs):
        net.train()
        perm = np.random.permutation(len(xtr))
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            loss = nn.functional.cross_entropy(net(torch.from_numpy(xtr[idx])), torch.from_numpy(ytr[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {ep}: loss {loss.item():.3f} ({time.time() - t0:.0f} s)", file=sys.stderr)
    net.eval()
    with torch.no_grad():
        pred = np.concatenate([net(torch.from_numpy(xte[i:i + 1000])).argmax(1).numpy()
                               for i in range(0, len(xte), 1000)])
    top1 = float((pred == yte).mean())
    print(f"float top-1 {top1:.4f}")
    with open(os.path.join(out, "float_top1.txt"), "w") as f:
        f.write(f"{top1:.4f}\n")
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), os.path.join(out, "model.onnx"), opset_version=13,
                      input_names=["image"], output_names=["logits"])
    cal = os.path.join(out, "calib")
    os.makedirs(cal, exist_ok=True)
    pick = np.random.RandomState(1).choice(len(xtr), 100, replace=False)
    for k, i in enumerate(pick):
        np.save(os.path.join(cal, f"{k:03d}.npy"), xtr[i:i + 1])
