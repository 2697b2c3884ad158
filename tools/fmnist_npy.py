#!/usr/bin/python3
"""fmnist_npy.py DATA OUT_X.npy OUT_Y.npy
The Fashion-MNIST test set of Debian's dataset-fashion-mnist (DATA holds the
idx files) as float32 images in [0, 1] [N, 1, 28, 28] and int64 labels:
what the demo and the benchmarks feed npuref/npusim."""
import gzip
import struct
import sys

import numpy as np

d, out_x, out_y = sys.argv[1:4]
with gzip.open(f"{d}/t10k-images-idx3-ubyte.gz") as f:
    _, n, h, w = struct.unpack(">IIII", f.read(16))
    x = np.frombuffer(f.read(), np.uint8).reshape(n, 1, h, w).astype(np.float32) / 255.0
with gzip.open(f"{d}/t10k-labels-idx1-ubyte.gz") as f:
    f.read(8)
    y = np.frombuffer(f.read(), np.uint8)
np.save(out_x, x)
np.save(out_y, y.astype(np.int64))
