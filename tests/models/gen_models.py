#!/usr/bin/python3
"""Exports the issue-13 model kinds with torch, random weights, opset 13:

    /usr/bin/python3 tests/models/gen_models.py OUT [NAME ...]

writes OUT/NAME/model.onnx, OUT/NAME/calib/NNN.npy (float32, the input's
shape) and OUT/NAME/input.npy (the test input). Deterministic: every model
is seeded by its name, one thread.

Random nets are made well-conditioned before export: BatchNorm gamma/beta
are drawn at random (so no BN is an identity) and the running statistics
come from forward passes in training mode on random inputs (as a trained
net's would), so activations stay near unit scale through 100+ layers
instead of growing or vanishing.
"""
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torchvision.models import efficientnet as tv_eff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nets  # noqa: E402

NCALIB = 8


def densenet121():
    # the DenseNet-121 architecture (block_config 6,12,24,16: 120 convs + the
    # classifier, BN-ReLU-conv after every concat); widths cut for CI time:
    # growth 32 -> 8, stem 64 -> 16 channels, bottleneck 4x -> 2x growth
    return torchvision.models.DenseNet(growth_rate=8, block_config=(6, 12, 24, 16), num_init_features=16,
                                       bn_size=2, num_classes=10)


def efficientnet_b0():
    # B0's stages, depths, strides, kernels, expansions, SE and SiLU as
    # torchvision builds them; width_mult 1.0 -> 0.5 (16 MB -> 4 MB of weights)
    setting, last = tv_eff._efficientnet_conf("efficientnet_b0", width_mult=0.5, depth_mult=1.0)
    return tv_eff.EfficientNet(setting, 0.2, num_classes=10, last_channel=last)


def googlenet():
    # GoogLeNet's stem and nine Inception blocks (aux_logits off) through the
    # constructor's `blocks`: every conv at a quarter of its channels
    # (22 MB -> 1.4 MB of weights); the 3-channel input stays
    g = sys.modules["torchvision.models.googlenet"]

    def conv(cin, cout, **kw):
        return g.BasicConv2d(cin if cin == 3 else cin // 4, cout // 4, **kw)

    def inception(*chans):
        return g.Inception(*chans, conv_block=conv)

    net = g.GoogLeNet(num_classes=10, aux_logits=False, transform_input=False, init_weights=True,
                      blocks=[conv, inception, g.InceptionAux])
    net.fc = nn.Linear(1024 // 4, 10)
    return net


# name: (constructor, input shape)
MODELS = {
    "dense_block": (lambda: nets.DenseBlockNet(), (1, 3, 32, 32)),
    "densenet121": (densenet121, (1, 3, 64, 64)),
    "vit": (lambda: nets.ViT(), (1, 3, 32, 32)),
    "efficientnet_b0": (efficientnet_b0, (1, 3, 64, 64)),
    "shufflenet_v2": (lambda: torchvision.models.shufflenet_v2_x0_5(num_classes=10), (1, 3, 64, 64)),
    "googlenet": (googlenet, (1, 3, 64, 64)),
    "mnasnet": (lambda: torchvision.models.mnasnet0_5(num_classes=10), (1, 3, 64, 64)),
}


def condition(net, shape, gen):
    """random BN affine, then running statistics from 8 batches of 4"""
    bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        for m in bns:
            m.weight.uniform_(0.5, 1.5, generator=gen)
            m.bias.normal_(0.0, 0.1, generator=gen)
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the passes
        net.train()
        if bns:
            for _ in range(8):
                net(torch.randn((4,) + shape[1:], generator=gen))
    net.eval()


def export(name, out):
    make, shape = MODELS[name]
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = make()
    condition(net, shape, gen)
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "calib"), exist_ok=True)
    torch.onnx.export(net, torch.zeros(shape), os.path.join(d, "model.onnx"), opset_version=13,
                      input_names=["x"], output_names=["y"], do_constant_folding=True)
    rng = np.random.default_rng(seed)
    for k in range(NCALIB):
        np.save(os.path.join(d, "calib", f"{k:03d}.npy"), rng.standard_normal(shape).astype(np.float32))
    np.save(os.path.join(d, "input.npy"), rng.standard_normal(shape).astype(np.float32))


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gen_models.py OUT [NAME ...]")
    torch.set_num_threads(1)
    names = sys.argv[2:] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"gen_models.py: unknown model {n} (have: {' '.join(MODELS)})")
        export(n, sys.argv[1])


if __name__ == "__main__":
    main()
