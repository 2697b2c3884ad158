#!/usr/bin/python3
"""EfficientNet-B0 as the shared zoo's models are made (torchvision's
architecture, seeded random weights, 224x224, ONNX opset 13), for the
benches when ../shared/models/zoo has none.
    bench/gen_efficientnet.py OUT.onnx"""
import sys

import torch
import torchvision

torch.manual_seed(0)
m = torchvision.models.efficientnet_b0(weights=None).eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), sys.argv[1], opset_version=13,
                  input_names=["input"], output_names=["output"])
