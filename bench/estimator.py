#!/usr/bin/python3
"""An analytic estimate of a model's NPU cycles, independent of npusim and
of the ISA's timing expressions (docs/npu-model.md "Checking the model").

Per layer, from the ONNX model's shapes (shape inference) and the target
YAML's numbers only:
- compute: a SCALE-Sim-style fold model of the weight-stationary MAC array
  (rows = reduction lanes, cols = output channels): the layer's filters fold
  into ceil(K / rows) x ceil(M / cols) array loads, each streaming the
  output pixels through the array, the next fold's weights loading while
  one streams (double-buffered weight registers), so the array's fill
  (`mac.fill`, else rows + cols) is paid once per layer; depthwise
  convolutions fold channels over cols and stream pixel groups of `rows`
  through the window; vector layers (pooling, elementwise, LUTs) stream
  their elements over the lanes; in a fused group (a cascade) the MAC array
  and the vector unit work on different tiles at once (the busier counts);
- memory: compulsory bytes (inputs, outputs, weights) over the bus each one
  uses, weights over flash when the target leaves them there, activation
  rows rounded up to whole bus beats; what a layer fused into its
  producer's tiles (no cycles of its own in the stats' layer list) passes
  on stays on chip, and so does every intermediate activation the SRAM can
  hold for its lifetime (a greedy first-fit in production order, against
  the SRAM less the largest layer's weights; graph outputs and what the
  host reads go to DRAM);
- the layer: a roofline max(compute, its activations' traffic), plus the
  part that cannot overlap: the first load's latency and the last store's;
- across layers (`schedule`): the layers compute one after the other, and a
  layer's weights load on their bus from the start of the layer before it
  (the boundary prefetch), so a weight-bound layer after a compute-bound one
  hides part of its load.

Usage: estimator.py MODEL.onnx NPUSIM_STATS.json TARGET.yaml [--json]
prints the model's estimate, npusim's NPU cycles and their ratio.
"""
import json
import math
import sys

import onnx
import yaml
from onnx import shape_inference


def size_of(v):
    if isinstance(v, int):
        return v
    s = str(v)
    for suf, mul in (("Ki", 1024), ("Mi", 1 << 20), ("Gi", 1 << 30)):
        if s.endswith(suf):
            return int(s[: -len(suf)]) * mul
    return int(s)


class Target:
    def __init__(self, path):
        y = yaml.safe_load(open(path))
        n = y["npu"]
        self.mhz = float(n["clock_mhz"])
        self.rows, self.cols = n["mac"]["rows"], n["mac"]["cols"]
        # the array's pipeline fill, once per stream of folds (double-buffered weight registers: a fold's
        # weights load while the one before streams); rows + cols where the target does not say
        self.fill = n["mac"].get("fill", self.rows + self.cols)
        self.lanes = n["vector"]["lanes"]
        self.dram = self.bw(n["dram"])
        self.flash = self.bw(n["flash"])
        self.dram_lat = self.lat(n["dram"])
        self.flash_lat = self.lat(n["flash"])
        place = n.get("placement", {}).get("constants", "dram")
        self.wbus = self.flash if place == "flash" else self.dram
        self.sram = size_of(n["sram"]["bytes"])

    def bw(self, b):  # bytes per NPU cycle
        return b["mb_per_s"] / self.mhz if "mb_per_s" in b else float(b["bytes_per_cycle"])

    def lat(self, b):
        return b["latency_ns"] * self.mhz / 1000.0 if "latency_ns" in b else float(b["latency"])


def shapes(model):
    m = shape_inference.infer_shapes(model)
    d = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        d[vi.name] = [x.dim_value for x in vi.type.tensor_type.shape.dim]
    for init in m.graph.initializer:
        d[init.name] = list(init.dims)
    return m, d


def numel(s):
    return math.prod(s) if s else 1


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def compute_cycles(t, node, sh):
    """Cycles of one ONNX node on the MAC array or the vector unit; None for
    a node the estimate has no model of (views: no time)."""
    op = node.op_type
    ins = [sh.get(i, []) for i in node.input]
    out = sh.get(node.output[0], [])
    if op in ("Conv", "Gemm", "MatMul") and len(out) >= 2:
        if op == "Conv":
            n, m, oh, ow = (out + [1, 1, 1, 1])[:4]
            w = ins[1]
            g = attr(node, "group", 1)
            k = w[1] * numel(w[2:])
            pix = n * oh * ow
            if g > 1 and g == m:  # depthwise: channels over columns, pixels over rows
                return math.ceil(m / t.cols) * math.ceil(pix / t.rows) * numel(w[2:]) + t.fill
            return math.ceil(m / g / t.cols) * math.ceil(k / t.rows) * g * pix + t.fill
        m, k, pix = out[-1], ins[0][-1], numel(out[:-1])
        return math.ceil(m / t.cols) * math.ceil(k / t.rows) * pix + t.fill
    if op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat"):
        return None
    # vector unit: every element read and written, over the lanes
    win = 1
    if op in ("MaxPool", "AveragePool"):
        win = numel(attr(node, "kernel_shape", [1]))
    elif op == "GlobalAveragePool" and len(ins[0]) == 4:
        win = ins[0][2] * ins[0][3]
    act_in = sum(numel(sh.get(i, [])) for i in node.input if i)
    return max(numel(out) * win, act_in) / t.lanes


def burst_bytes(t, shape):
    """Bytes an activation costs on DRAM: its rows (the innermost dimension,
    NCHW) each rounded up to whole bus beats, as a DRAM burst moves them."""
    if not shape:
        return 1
    beat = max(1, round(t.dram))
    return numel(shape[:-1]) * math.ceil(shape[-1] / beat) * beat


def groups(stats, nodes):
    """The NPU layers in order, a layer npusim reports with no cycles of its
    own (fused into the previous one's tiles) joining the previous group."""
    out = []
    for L in stats["layers"]:
        if L["unit"] != "npu":
            out.append(None)
            continue
        if L["cycles"] == 0 and out and out[-1]:
            out[-1]["names"].append(L["name"])
            out[-1]["sim"] += 0
            continue
        out.append({"names": [L["name"]], "sim": L["cycles"]})
    return [g for g in out if g]


def resident(t, model, sh, consts, stats):
    """The intermediate activations (int8, one byte an element) that stay in
    SRAM: each, in production order, if at every step of its lifetime the
    ones already kept plus it fit in the SRAM less the largest layer's
    weights. Graph outputs and the inputs of host layers live in DRAM."""
    nodes = list(model.graph.node)
    host = {L["name"] for L in stats["layers"] if L["unit"] != "npu"}
    dram = {o.name for o in model.graph.output}
    dram |= {i for n in nodes if n.name in host for i in n.input}
    budget = t.sram - max((sum(numel(sh.get(i, [])) for i in n.input if i in consts) for n in nodes), default=0)
    last = {}
    for k, n in enumerate(nodes):
        for i in n.input:
            last[i] = k
    gin = [i.name for i in model.graph.input if i.name not in consts]
    spans = [(i, -1, last.get(i, -1)) for i in gin]  # the quantized input, written before the first layer
    spans += [(o, k, last.get(o, k)) for k, n in enumerate(nodes) for o in n.output if o not in dram]
    load = [0] * (len(nodes) + 1)
    keep = set()
    for name, a, b in spans:
        size = numel(sh.get(name, []))
        if all(load[j + 1] + size <= budget for j in range(a, b + 1)):
            keep.add(name)
            for j in range(a, b + 1):
                load[j + 1] += size
    return keep


MAC_OPS = ("Conv", "Gemm", "MatMul")


def group_cycles(t, g, nodes, sh, consts, stats):
    """Roofline of a group: its compute against the compulsory bytes of what
    enters it (activations over DRAM, weights over their bus) and leaves it,
    plus one load's and one store's latency that double buffering cannot hide."""
    members = [nodes[n] for n in g["names"] if n in nodes]
    if not members:  # npucc's own layers (quantize:X): the float input in, int8 out (to SRAM if kept there)
        n = sum(numel(i["shape"]) for i in stats["io"] if i["kind"] == "input")
        return {"comp": 0, "act": n * (4 + (0 if g["in_sram"] else 1)) / t.dram, "wts": 0, "lat": t.dram_lat}
    alias = g["alias"]
    root = lambda x: root(alias[x]) if x in alias else x
    produced = {root(o) for m in members for o in m.output}
    # a cascade's MAC array and vector unit work on different tiles at once
    mac = sum(c or 0 for c in (compute_cycles(t, m, sh) for m in members if m.op_type in MAC_OPS))
    vec = sum(c or 0 for c in (compute_cycles(t, m, sh) for m in members if m.op_type not in MAC_OPS))
    comp = max(mac, vec)
    kept = g["kept"]
    act = sum(burst_bytes(t, sh.get(i, [])) for m in members for i in m.input
              if i and i not in consts and root(i) not in produced and root(i) not in kept)
    wts = sum(numel(sh.get(i, [])) for m in members for i in m.input if i in consts)
    o = members[-1].output[0]
    out = 0 if o in kept else burst_bytes(t, sh.get(o, []))
    mem = (act + out) / t.dram + wts / t.wbus
    # the latencies double buffering cannot hide: the first load's (its bus) and the last store's
    lat = (t.flash_lat if wts and t.wbus == t.flash else t.dram_lat if wts or act else 0) + (t.dram_lat if out else 0)
    return {"comp": comp, "act": (act + out) / t.dram, "wts": wts / t.wbus, "lat": lat}


def schedule(parts):
    """The groups in order on two resources, as npucc's cross-layer
    schedule runs them: the compute units, one group after the other, and
    the weight bus, on which a group's weights load as soon as the group
    before it has started (its boundary prefetch and the pieces in earlier
    layers' idle bus time), not before; activations move with their own
    group. A group ends when its compute and its own traffic are done."""
    end = start = bus = 0.0
    ends = []
    for p in parts:
        w0 = max(bus, start)            # this group's weights from the previous group's start
        wdone = w0 + p["wts"]
        s = end                          # its compute after the previous group's
        run = max(p["comp"], p["act"])   # its tiles: compute beside its activations' traffic
        e = max(s + run + p["lat"], wdone)  # a weight-bound group waits for its last weights
        bus = wdone
        start, end = s, e
        ends.append(e)
    return end, ends


def estimate(model_path, stats, t):
    model, sh = shapes(onnx.load(model_path))
    consts = {i.name for i in model.graph.initializer}
    nodes = {n.name: n for n in model.graph.node}
    # a node npucc folded into its producer (an activation, a batch norm) has no layer: its output is its input
    listed = {L["name"] for L in stats["layers"]}
    alias = {n.output[0]: n.input[0] for n in model.graph.node
             if n.name not in listed and n.input and n.output and n.input[0] not in consts}
    gs = groups(stats, nodes)
    kept = resident(t, model, sh, consts, stats)
    kept |= {a for a, b in alias.items() if b in kept}  # a folded node's output is where its input is
    for g in gs:
        g["alias"], g["kept"] = alias, kept
        g["in_sram"] = all(i.name in kept for i in model.graph.input if i.name not in consts)
    parts = [group_cycles(t, g, nodes, sh, consts, stats) for g in gs]
    total, ends = schedule(parts)
    rows = [(g["names"][0], e - (ends[i - 1] if i else 0), g["sim"]) for i, (g, e) in enumerate(zip(gs, ends))]
    return total, rows


def main():
    model, stats_path, target = sys.argv[1:4]
    stats = json.load(open(stats_path))
    t = Target(target)
    est, rows = estimate(model, stats, t)
    sim = stats["cycles"]["npu"]
    if "--layers" in sys.argv:
        for n, c, s in rows:
            print(f"  {n:40.40s} {c:12.0f} {s:12d}")
    out = {"estimate": round(est), "npusim": sim, "ratio": sim / est if est else 0.0}
    print(json.dumps(out) if "--json" in sys.argv else
          f"{est:12.0f} {sim:12d} {out['ratio']:8.3f}")


if __name__ == "__main__":
    main()
