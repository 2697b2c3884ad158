"""Random pre-quantized (QDQ) CNNs for the differential run, written as
onnxruntime's and PyTorch's exporters write them: each Conv, Gemm, pool,
Add and Concat between DequantizeLinear of its int8/uint8 inputs (and of
its int8 weights, int32 bias) and QuantizeLinear of its output, a Relu or
Clip inside the Q. Activation scales come from the float network's ranges
on the case's own input (a small numpy evaluation below), widened or
narrowed at random so that some tensors saturate. npucc compiles such a
model with its own parameters and no calibration (docs/numerics.md
"Pre-quantized (QDQ) models"); tests/diff/run.py checks it against
onnxruntime within a few output steps."""
import numpy as np
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH


def conv_f(x, w, b, stride, pad, group):
    """Float Conv (NCHW, square kernel, symmetric pads) in float64."""
    n, c, h, wd = x.shape
    m, cg, k, _ = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(k):
            for j in range(k):
                win = xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,oc->nohw", win, w[g * mg:(g + 1) * mg, :, i, j])
    return y + b[None, :, None, None]


def pool_f(x, kind):
    n, c, h, w = x.shape
    v = x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2)
    return v.max(axis=(3, 5)) if kind == "MaxPool" else v.mean(axis=(3, 5))


class Net:
    def __init__(self, rng, x):
        self.rng, self.nodes, self.inits, self.k = rng, [], [], 0
        self.unsigned = bool(rng.integers(0, 2))
        # a third of the nets quantize weights as PyTorch's symmetric qint8 does: scale amax / 127.5 over
        # [-128, 127], so that the most negative weight takes the code -128
        self.wlo = -128 if rng.integers(0, 3) == 0 else -127
        self.x = x

    def wscale(self, amax):
        return (np.maximum(amax, 1e-6) / (127.5 if self.wlo == -128 else 127)).astype(np.float32)

    def ri(self, a, b):
        return int(self.rng.integers(a, b + 1))

    def const(self, name, a):
        self.inits.append(NH.from_array(a, name))
        return name

    def params(self, t):
        """Scale and zero point for a tensor with float values t: its range,
        times 0.6 to 1.5 (below 1 some values saturate)."""
        lo, hi = min(float(t.min()), 0.0), max(float(t.max()), 0.0)
        s = np.float32(max(hi - lo, 1e-3) / 255.0 * self.rng.uniform(0.6, 1.5))
        zp = int(np.clip(round(-128 - lo / float(s)), -128, 127))
        return s, zp

    def qdq(self, src, s, zp):
        """Q then DQ of src with (s, zp): the int8 tensor between them is the
        one the integer graph keeps."""
        self.k += 1
        n = "q%d" % self.k
        dt = np.uint8 if self.unsigned else np.int8
        args = [self.const(n + "_s", np.array(s, np.float32)),
                self.const(n + "_z", np.array(zp + 128 if self.unsigned else zp, dt))]
        self.nodes.append(H.make_node("QuantizeLinear", [src] + args, [n + "_q"], name=n + "_Q"))
        self.nodes.append(H.make_node("DequantizeLinear", [n + "_q"] + args, [n + "_dq"], name=n + "_DQ"))
        return n + "_dq"

    def fake(self, t, s, zp):
        """The float values after Q/DQ (numpy's round is half to even, as ONNX's)."""
        return (np.clip(np.round(t / s) + zp, -128, 127) - zp) * s

    def weight(self, name, w, b, in_s):
        """DQ of int8 symmetric weights (per output channel or per tensor) and
        of the int32 bias at in_scale * w_scale."""
        per_ch = self.ri(0, 3) > 0
        flat = np.abs(w.reshape(w.shape[0], -1))
        amax = flat.max(axis=1) if per_ch else np.full(w.shape[0], flat.max())
        ws = self.wscale(amax)
        wq = np.clip(np.round(w / ws.reshape(-1, *([1] * (w.ndim - 1)))), self.wlo, 127).astype(np.int8)
        if per_ch:
            wa, ax = [self.const(name + "_ws", ws), self.const(name + "_wz", np.zeros(w.shape[0], np.int8))], 0
        else:
            wa, ax = [self.const(name + "_ws", np.array(ws[0], np.float32))], None
        at = {"axis": ax} if ax is not None else {}
        self.nodes.append(H.make_node("DequantizeLinear", [self.const(name + "_wq", wq)] + wa, [name + "_w"],
                                      name=name + "_wDQ", **at))
        wf = wq.astype(np.float64) * ws.reshape(-1, *([1] * (w.ndim - 1)))
        bs = (np.float64(in_s) * ws.astype(np.float64)).astype(np.float32)
        bq = np.clip(np.round(b / bs), -2**31 + 1, 2**31 - 1).astype(np.int32)  # a tiny scale: int32 saturates
        self.nodes.append(H.make_node("DequantizeLinear", [self.const(name + "_bq", bq), self.const(name + "_bs", bs),
                                                           self.const(name + "_bz", np.zeros(len(bq), np.int32))],
                                      [name + "_b"], name=name + "_bDQ", axis=0))
        return name + "_w", name + "_b", wf, bq * bs.astype(np.float64)


def make(rng):
    """(nodes, inputs, initializers, opset, outputs, extra): extra holds the
    input array the scales were chosen on and the output's scale."""
    big = rng.integers(0, 4) == 0  # sizes the tiler splits into tiles and bands
    side = (24, 56) if big else (6, 24)
    C, Hh, W = int(rng.integers(1, 9)), int(rng.integers(*side)), int(rng.integers(*side))
    x = rng.uniform(-3, 3, (1, C, Hh, W)).astype(np.float32)
    net = Net(rng, x)
    s, zp = net.params(x)
    cur, t = net.qdq("x", s, zp), net.fake(x.astype(np.float64), s, zp)
    cur_s, cur_zp = s, zp
    int_in = net.ri(0, 3) == 0  # the application's integer codes in: the model starts at the DequantizeLinear
    if int_in:
        q = net.nodes.pop(0)
        net.nodes[0].input[0] = "x"
        z = zp + 128 if net.unsigned else zp
        x = np.clip(np.round(x.astype(np.float64) / s) + z, *((0, 255) if net.unsigned else (-128, 127)))
        x = x.astype(np.uint8 if net.unsigned else np.int8)
        assert q.op_type == "QuantizeLinear"
    want, tries = net.ri(1, 5), 0
    while len([n for n in net.nodes if n.op_type not in ("QuantizeLinear", "DequantizeLinear")]) < want and tries < 20:
        tries += 1  # a layer the shapes refuse (a pool of a 1-pixel plane) is drawn again
        kind = ["conv", "conv", "dw", "pool", "res", "concat", "sigmoid", "act", "mul", "resize", "addc", "clip",
                "transpose", "split", "pad", "reduce", "qlinear"][net.ri(0, 16)]
        net.k += 1
        name = "l%d" % net.k
        if kind in ("conv", "dw", "res"):
            dw = kind == "dw"
            M = C if kind != "conv" else net.ri(2, 48 if big else 24)
            k = [1, 3, 3, 5][net.ri(0, 3)] if kind == "conv" else 3
            st = net.ri(1, 2) if kind != "res" else 1
            if (Hh + 2 * (k // 2) - k) // st + 1 < 1 or (W + 2 * (k // 2) - k) // st + 1 < 1:
                continue
            w = rng.uniform(-0.5, 0.5, (M, 1 if dw else C, k, k)).astype(np.float32)
            b = rng.uniform(-0.5, 0.5, M).astype(np.float32)
            wn, bn, wf, bf = net.weight(name, w, b, cur_s)
            at = dict(kernel_shape=[k, k], strides=[st, st], pads=[k // 2] * 4)
            if dw:
                at["group"] = C
            net.nodes.append(H.make_node("Conv", [cur, wn, bn], [name], name=name, **at))
            y = conv_f(t, wf, bf, st, k // 2, C if dw else 1)
            act = ["", "Relu", "Clip"][net.ri(0, 2)] if kind != "res" else ""
            if act == "Relu":
                net.nodes.append(H.make_node("Relu", [name], [name + "r"], name=name + "r"))
                name, y = name + "r", np.maximum(y, 0)
            elif act == "Clip":
                lo, hi = net.const(name + "lo", np.array(0, np.float32)), net.const(name + "hi", np.array(6, np.float32))
                net.nodes.append(H.make_node("Clip", [name, lo, hi], [name + "c"], name=name + "c"))
                name, y = name + "c", np.clip(y, 0, 6)
            s, zp = net.params(y)
            out, yq = net.qdq(name, s, zp), net.fake(y, s, zp)
            if kind == "res":  # the block's input plus the conv's output, each at its own scale
                a = yq + t
                s, zp = net.params(a)
                net.nodes.append(H.make_node("Add", [cur, out], [name + "a"], name=name + "a"))
                out, yq = net.qdq(name + "a", s, zp), net.fake(a, s, zp)
            cur, t, cur_s, cur_zp, C = out, yq, s, zp, M
            Hh, W = t.shape[2], t.shape[3]
        elif kind == "pool":
            if Hh < 2 or W < 2:
                continue
            op = ["MaxPool", "AveragePool"][net.ri(0, 1)]
            net.nodes.append(H.make_node(op, [cur], [name], name=name, kernel_shape=[2, 2], strides=[2, 2]))
            y = pool_f(t, op)
            s, zp = (cur_s, cur_zp) if op == "MaxPool" else net.params(y)  # MaxPool keeps its parameters
            cur, t, cur_s, cur_zp = net.qdq(name, s, zp), net.fake(y, s, zp), s, zp
            Hh, W = t.shape[2], t.shape[3]
        elif kind == "concat":  # the input beside a 1x1 conv of it, each requantized to the concat's scale
            M = net.ri(2, 12)
            w = rng.uniform(-0.5, 0.5, (M, C, 1, 1)).astype(np.float32)
            b = rng.uniform(-0.5, 0.5, M).astype(np.float32)
            wn, bn, wf, bf = net.weight(name, w, b, cur_s)
            net.nodes.append(H.make_node("Conv", [cur, wn, bn], [name], name=name, kernel_shape=[1, 1]))
            y = conv_f(t, wf, bf, 1, 0, 1)
            s, zp = net.params(y)
            br, bq = net.qdq(name, s, zp), net.fake(y, s, zp)
            cat = np.concatenate([t, bq], axis=1)
            s, zp = net.params(cat)
            net.nodes.append(H.make_node("Concat", [cur, br], [name + "k"], name=name + "k", axis=1))
            cur, t, cur_s, cur_zp, C = net.qdq(name + "k", s, zp), net.fake(cat, s, zp), s, zp, C + M
        elif kind == "mul":  # the tensor times a per-channel constant of its own int8 parameters
            c = rng.uniform(-2, 2, (1, C, 1, 1)).astype(np.float32)
            cs = np.float32(np.abs(c).max() / 127)
            cq = np.clip(np.round(c / cs), -127, 127).astype(np.int8)
            net.nodes.append(H.make_node("DequantizeLinear", [net.const(name + "_cq", cq),
                                                              net.const(name + "_cs", np.array(cs, np.float32))],
                                         [name + "_c"], name=name + "_cDQ"))
            net.nodes.append(H.make_node("Mul", [cur, name + "_c"], [name], name=name))
            y = t * (cq.astype(np.float64) * cs)
            s, zp = net.params(y)
            cur, t, cur_s, cur_zp = net.qdq(name, s, zp), net.fake(y, s, zp), s, zp
        elif kind == "addc":  # plus a per-channel int8 constant of its own scale
            c = rng.uniform(-1, 1, (1, C, 1, 1)).astype(np.float32)
            cs = np.float32(max(np.abs(c).max(), 1e-3) / 127)
            cq = np.clip(np.round(c / cs), -127, 127).astype(np.int8)
            net.nodes.append(H.make_node("DequantizeLinear", [net.const(name + "_cq", cq),
                                                              net.const(name + "_cs", np.array(cs, np.float32))],
                                         [name + "_c"], name=name + "_cDQ"))
            net.nodes.append(H.make_node("Add", [cur, name + "_c"], [name], name=name))
            y = t + cq.astype(np.float64) * cs
            s, zp = net.params(y)
            cur, t, cur_s, cur_zp = net.qdq(name, s, zp), net.fake(y, s, zp), s, zp
        elif kind == "clip":  # a Clip of its own bounds as its own QDQ op
            lo = float(rng.uniform(-2, 0))
            hi = lo + float(rng.uniform(0.5, 3))
            net.nodes.append(H.make_node("Clip", [cur, net.const(name + "lo", np.array(lo, np.float32)),
                                                  net.const(name + "hi", np.array(hi, np.float32))], [name], name=name))
            y = np.clip(t, np.float32(lo), np.float32(hi))
            s, zp = net.params(y)
            cur, t, cur_s, cur_zp = net.qdq(name, s, zp), net.fake(y, s, zp), s, zp
        elif kind == "transpose":  # rows and columns swapped, the parameters kept
            net.nodes.append(H.make_node("Transpose", [cur], [name], name=name, perm=[0, 1, 3, 2]))
            cur, t = net.qdq(name, cur_s, cur_zp), t.transpose(0, 1, 3, 2)
            Hh, W = t.shape[2], t.shape[3]
        elif kind == "split":  # split in two along an axis, one half through a Relu, concatenated again
            ax = net.ri(1, 3)
            if t.shape[ax] < 2:
                continue
            a = net.ri(1, t.shape[ax] - 1)
            net.nodes.append(H.make_node("Split", [cur, net.const(name + "_sp", np.array([a, t.shape[ax] - a], np.int64))],
                                         [name + "a", name + "b"], name=name, axis=ax))
            qa = net.qdq(name + "a", cur_s, cur_zp)  # Split keeps its parameters
            qb = net.qdq(name + "b", cur_s, cur_zp)
            net.nodes.append(H.make_node("Relu", [qa], [name + "r"], name=name + "r"))
            ta, tb = np.split(t, [a], axis=ax)
            ya = np.maximum(ta, 0)
            sa, za = net.params(ya)
            ra = net.qdq(name + "r", sa, za)
            cat = np.concatenate([net.fake(ya, sa, za), tb], axis=ax)
            s, zp = net.params(cat)
            net.nodes.append(H.make_node("Concat", [ra, qb], [name + "k"], name=name + "k", axis=ax))
            cur, t, cur_s, cur_zp = net.qdq(name + "k", s, zp), net.fake(cat, s, zp), s, zp
        elif kind == "qlinear":  # the QOperator form: QLinearConv on the codes, then a DQ for what follows
            dq = next(n for n in net.nodes if cur in n.output)
            M, k = net.ri(2, 24), [1, 3][net.ri(0, 1)]
            w = rng.uniform(-0.5, 0.5, (M, C, k, k)).astype(np.float32)
            b = rng.uniform(-0.5, 0.5, M).astype(np.float32)
            ws = net.wscale(np.abs(w.reshape(M, -1)).max(axis=1))
            wq = np.clip(np.round(w / ws[:, None, None, None]), net.wlo, 127).astype(np.int8)
            bs = np.float64(cur_s) * ws.astype(np.float64)
            bq = np.clip(np.round(b / bs), -2**31 + 1, 2**31 - 1).astype(np.int32)
            y = conv_f(t, wq.astype(np.float64) * ws[:, None, None, None], bq * bs, 1, k // 2, 1)
            s, zp = net.params(y)
            dt = np.uint8 if net.unsigned else np.int8
            ys, yz = net.const(name + "_ys", np.array(s, np.float32)), net.const(name + "_yz", np.array(
                zp + 128 if net.unsigned else zp, dt))
            ins = [dq.input[0], dq.input[1], dq.input[2], net.const(name + "_wq", wq), net.const(name + "_ws", ws),
                   net.const(name + "_wz", np.zeros(M, np.int8)), ys, yz, net.const(name + "_bq", bq)]
            net.nodes.append(H.make_node("QLinearConv", ins, [name + "_q"], name=name, kernel_shape=[k, k],
                                         pads=[k // 2] * 4))
            net.nodes.append(H.make_node("DequantizeLinear", [name + "_q", ys, yz], [name + "_dq"], name=name + "_DQ"))
            cur, t, cur_s, cur_zp, C = name + "_dq", net.fake(y, s, zp), s, zp, M
        elif kind == "pad":  # zeros around, the same parameters on both sides (0.0 is a code when zp is one)
            p = [0, 0, net.ri(0, 2), net.ri(0, 2), 0, 0, net.ri(0, 2), net.ri(0, 2)]
            net.nodes.append(H.make_node("Pad", [cur, net.const(name + "_p", np.array(p, np.int64))], [name], name=name,
                                         mode="constant"))
            t = np.pad(t, ((0, 0), (0, 0), (p[2], p[6]), (p[3], p[7])))
            cur = net.qdq(name, cur_s, cur_zp)
            Hh, W = t.shape[2], t.shape[3]
        elif kind == "reduce":  # a mean over the rows, kept: a float op between its DQ and Q
            net.nodes.append(H.make_node("ReduceMean", [cur], [name], name=name, axes=[2], keepdims=1))
            y = t.mean(axis=2, keepdims=True)
            s, zp = net.params(y)
            cur, t, cur_s, cur_zp = net.qdq(name, s, zp), net.fake(y, s, zp), s, zp
            Hh = 1
        elif kind == "resize":  # nearest 2x, the same parameters on both sides
            if Hh * W > 900:
                continue
            sc = net.const(name + "_sc", np.array([1, 1, 2, 2], np.float32))
            net.nodes.append(H.make_node("Resize", [cur, "", sc], [name], name=name, mode="nearest"))
            y = t.repeat(2, axis=2).repeat(2, axis=3)
            cur, t = net.qdq(name, cur_s, cur_zp), y
            Hh, W = t.shape[2], t.shape[3]
        else:  # Sigmoid, or an activation as its own QDQ op: Relu, LeakyRelu
            op = "Sigmoid" if kind == "sigmoid" else ["Relu", "LeakyRelu"][net.ri(0, 1)]
            at = {"alpha": float(rng.uniform(0.05, 0.3))} if op == "LeakyRelu" else {}
            net.nodes.append(H.make_node(op, [cur], [name], name=name, **at))
            y = (1 / (1 + np.exp(-t)) if op == "Sigmoid" else np.maximum(t, 0) if op == "Relu"
                 else np.where(t >= 0, t, t * at["alpha"]))
            s, zp = net.params(y)
            cur, t, cur_s, cur_zp = net.qdq(name, s, zp), net.fake(y, s, zp), s, zp
    if net.ri(0, 1):  # the classifier head
        net.k += 1
        name, N = "l%d" % net.k, net.ri(2, 12)
        net.nodes.append(H.make_node("GlobalAveragePool", [cur], [name + "g"], name=name + "g"))
        y = t.mean(axis=(2, 3), keepdims=True)
        s, zp = net.params(y)
        g, t = net.qdq(name + "g", s, zp), net.fake(y, s, zp)
        net.nodes.append(H.make_node("Flatten", [g], [name + "f"], name=name + "f"))
        f = net.qdq(name + "f", s, zp)  # Flatten keeps its parameters
        w = rng.uniform(-0.5, 0.5, (N, C)).astype(np.float32)
        b = rng.uniform(-0.5, 0.5, N).astype(np.float32)
        if net.ri(0, 1):
            wn, bn, wf, bf = net.weight(name, w, b, s)
            net.nodes.append(H.make_node("Gemm", [f, wn, bn], [name], name=name, transB=1))
            y = t.reshape(1, C) @ wf.T + bf
        else:  # MatMul by [K, N] weights, their scales along axis 1 (one per output column), no bias
            ws = net.wscale(np.abs(w).max(axis=1))
            wq = np.clip(np.round(w.T / ws[None, :]), net.wlo, 127).astype(np.int8)
            net.nodes.append(H.make_node("DequantizeLinear", [net.const(name + "_wq", wq), net.const(name + "_ws", ws),
                                                              net.const(name + "_wz", np.zeros(N, np.int8))],
                                         [name + "_w"], name=name + "_wDQ", axis=1))
            net.nodes.append(H.make_node("MatMul", [f, name + "_w"], [name], name=name))
            y = t.reshape(1, C) @ (wq.astype(np.float64) * ws[None, :])
        s, zp = net.params(y)
        cur = net.qdq(name, s, zp)
        if net.ri(0, 2) == 0:  # a float Softmax after the last DequantizeLinear
            net.nodes.append(H.make_node("Softmax", [cur], ["y"], name=name + "s", axis=1))
            return net.nodes, [("x", list(x.shape))], net.inits, 13, ["y"], extra(net, x, int_in, 1 / 256, False)
    int_out = net.ri(0, 3) == 0  # the integer codes out: the model ends at the QuantizeLinear
    if int_out:
        net.nodes.pop()
    net.nodes[-1].output[0] = "y"
    return net.nodes, [("x", list(x.shape))], net.inits, 13, ["y"], extra(net, x, int_in, float(s), int_out)


def extra(net, x, int_in, out_scale, int_out):
    """The case's extra facts for gen.py: the input array, the graph's
    input and output element types, the output's step (1 for integer codes)."""
    code = TP.UINT8 if net.unsigned else TP.INT8
    return {"inputs": [x], "out_scale": 1.0 if int_out else out_scale,
            "in_types": [code if int_in else TP.FLOAT], "out_types": [code if int_out else TP.FLOAT]}

