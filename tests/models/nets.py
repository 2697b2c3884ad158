"""Small torch networks of the kinds issue 13 names, shared by
gen_models.py (random weights) and the Fashion-MNIST training scripts.

DenseBlockNet: DenseNet pre-activation layers, so every BatchNormalization
reads a Concat and cannot fold into the conv before it.
ViT: patch-embedding conv, attention written with batched MatMul (Q.K^T and
.V over a [B, heads, N, d] layout), Softmax, LayerNorm (opset 13 exports the
decomposed ReduceMean/Sub/Pow/Sqrt/Div form) and GELU; `gelus` picks the
form per block: "erf" (nn.GELU()) or "tanh" (GELU(approximate='tanh')).
"""
import torch
import torch.nn as nn


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bottleneck):
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, bottleneck, 1, bias=False),
            nn.BatchNorm2d(bottleneck), nn.ReLU(), nn.Conv2d(bottleneck, growth, 3, padding=1, bias=False))

    def forward(self, feats):
        return self.body(torch.cat(feats, 1))


class DenseBlock(nn.Module):
    def __init__(self, cin, layers, growth, bottleneck):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth, bottleneck) for i in range(layers))

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class DenseBlockNet(nn.Module):
    """stem conv, dense block, transition (BN-ReLU-1x1-avgpool), dense
    block, BN-ReLU, global average pool, classifier."""

    def __init__(self, cin=3, classes=10, stem=16, growth=12, layers=(3, 3), bottleneck=24, stem_stride=1):
        super().__init__()
        c = stem
        mods = [nn.Conv2d(cin, stem, 3, stride=stem_stride, padding=1, bias=False)]
        for i, n in enumerate(layers):
            mods.append(DenseBlock(c, n, growth, bottleneck))
            c += n * growth
            if i + 1 < len(layers):
                mods += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)]
                c //= 2
        mods += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
        self.net = nn.Sequential(*mods)

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * (self.hd ** -0.5), dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, n, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, dim, heads, mlp, gelu):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.att = Attention(dim, heads)
        act = nn.GELU() if gelu == "erf" else nn.GELU(approximate="tanh")
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), act, nn.Linear(mlp, dim))

    def forward(self, x):
        x = x + self.att(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    """patch embedding, learned position embedding, pre-LN blocks, final
    LayerNorm, mean over tokens, classifier."""

    def __init__(self, cin=3, size=32, patch=4, dim=32, heads=4, mlp=64, gelus=("erf", "tanh"), classes=10):
        super().__init__()
        self.embed = nn.Conv2d(cin, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2, dim) * 0.02)
        self.blocks = nn.Sequential(*(Block(dim, heads, mlp, g) for g in gelus))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        x = self.ln(self.blocks(x))
        return self.head(x.mean(1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, depthwise 3x3, 1x1 linear project;
    `act` builds the activation (ReLU6 for MobileNetV2, Hardswish for V3),
    `se` adds a squeeze-excite gate after the depthwise conv."""

    def __init__(self, cin, cout, stride, expand, act=nn.ReLU6, se=False):
        super().__init__()
        mid = cin * expand
        mods = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act(),
                nn.Conv2d(mid, mid, 3, stride=stride, padding=1, groups=mid, bias=False), nn.BatchNorm2d(mid), act()]
        if se:
            mods.append(SqueezeExcite(mid, max(8, mid // 4)))
        mods += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*mods)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.res else y


class SqueezeExcite(nn.Module):
    """MobileNetV3's gate: global average pool, 1x1 reduce, ReLU, 1x1
    expand, Hardsigmoid, times the input."""

    def __init__(self, c, mid):
        super().__init__()
        self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, mid, 1), nn.ReLU(),
                                  nn.Conv2d(mid, c, 1), nn.Hardsigmoid())

    def forward(self, x):
        return x * self.gate(x)


class MobileNetLike(nn.Module):
    """stride-2 stem, inverted residuals (cout, stride, expand) per entry of
    `blocks`, a 1x1 head conv, global average pool, classifier. With
    act=nn.Hardswish and se=True it is the MobileNetV3 kind."""

    def __init__(self, cin=1, classes=10, stem=8, blocks=((12, 2, 3), (12, 1, 3), (20, 2, 3), (20, 1, 3)), head=48,
                 act=nn.ReLU6, se=False):
        super().__init__()
        mods = [nn.Conv2d(cin, stem, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(stem), act()]
        c = stem
        for cout, stride, expand in blocks:
            mods.append(InvertedResidual(c, cout, stride, expand, act, se))
            c = cout
        mods += [nn.Conv2d(c, head, 1, bias=False), nn.BatchNorm2d(head), act(), nn.AdaptiveAvgPool2d(1),
                 nn.Flatten(), nn.Linear(head, classes)]
        self.net = nn.Sequential(*mods)

    def forward(self, x):
        return self.net(x)
