#!/usr/bin/python3
"""Where a model's NPU cycles go against the issue-14 bound (docs/tiler.md,
"Where the zoo models' cycles go"). Reads what the tools write: the imported
graph's shapes (npucc --dump-ir), the compile and simulation statistics
(--stats-json) and the npusim trace (--trace). Per layer (a cascade or fused
pair is its first node's layer), its cycles are the advance of its last
instruction's end over the previous layer's, and
  b0 = max(MACs / 256, own compulsory bytes / 8)     the issue's rate
  b1 = max(op rate, own compulsory bytes / 8)        the ISA's rate
  b2 = max(op rate, DMA bytes / 8)                   with its activations' DMA
  u  = max(MAC or vector unit busy, DMA bytes / 8)   its instructions as tiled
with "op rate" the ISA timing of the whole layer as one instruction (conv:
ceil(oc/16) ceil(ic kh kw/16) oh ow; dwconv: ceil(c/16) ceil(oh ow/16) kh kw;
pool: ceil(c/16) oh ow kh kw; eltwise and other vector ops: ceil(n/16); MAC
and vector parts of a cascade overlap) and "own compulsory" its weights (and
the model input or output for the first and last layer). The gap to the
model bound splits into (e) sum(b0) - bound, (a) b1 - b0, (b) b2 - b1,
(d) u - b2, (c) cycles - max(u, b2).
Usage: bench/xlayer_breakdown.py NAME.ir NAME.cc.json NAME.sim.json NAME.trace.json [-v]
(edge-v1's 16x16 array and 16 lanes, 8 DRAM bytes per cycle)."""
import collections, json, math, re, sys

C = lambda a, b: -(-a // b)


def shapes(path):
    pat = re.compile(r'^\s+(.*?) = (\S+?)\((.*)\)(?: \{(.*)\})?\s+# (\S+)$')
    dims = re.compile(r'%[^%]*?:\w+\[([\d,]*)\]')
    nodes = {}
    for ln in open(path).read().split('\n# after ')[-1].splitlines():
        m = pat.match(ln)
        if m:
            outs, op, args, attrs, nm = m.groups()
            sh = lambda s: [[int(v) for v in d.split(',')] if d else [] for d in dims.findall(s)]
            nodes[nm] = (op, sh(outs), sh(args), attrs or '')
    return nodes


def op_rate(node):
    """(cycles, weight bytes, unit) of the node as one instruction."""
    o, outs, ins, a = node
    out = outs[0]
    ks = re.search(r'kernel_shape=\[([\d,]*)\]', a)
    kk = math.prod(int(v) for v in ks.group(1).split(',')) if ks else 1
    if o == 'Conv':
        g = re.search(r'group=(\d+)', a)
        g = int(g.group(1)) if g else 1
        oc, hw = out[1], math.prod(out[2:])
        if g > 1 and g == oc:
            return C(oc, 16) * C(hw, 16) * kk, math.prod(ins[1]), 'mac'
        return g * C(oc // g, 16) * C(ins[0][1] // g * kk, 16) * hw, math.prod(ins[1]), 'mac'
    if o in ('Gemm', 'MatMul'):
        k, n = ins[0][-1], out[-1]
        return C(n, 16) * C(k, 16) * math.prod(out[:-1]), k * n, 'mac'
    if 'Pool' in o:
        win = math.prod(ins[0][2:]) if 'Global' in o else kk
        return C(out[1], 16) * math.prod(out[2:]) * win, 0, 'vec'
    if o in ('Concat', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze', 'Identity'):
        return 0, 0, 'vec'
    return C(math.prod(out), 16), 0, 'vec'


def main(irf, ccf, simf, trf, verbose):
    nodes = shapes(irf)
    cc, sim = json.load(open(ccf)), json.load(open(simf))
    tr = json.load(open(trf))
    busy, end = collections.defaultdict(collections.Counter), {}
    for e in tr['traceEvents'] if isinstance(tr, dict) else tr:
        if e.get('pid') == 2 and e.get('ph') == 'X':
            lay = e['args'].get('layer')
            busy[lay][e.get('cat')] += e['dur'] * 500
            end[lay] = max(end.get(lay, 0), (e['ts'] + e['dur']) * 500)
    rows = []
    for lay in sim['layers']:
        if lay['unit'] != 'npu':
            continue
        r = op_rate(nodes[lay['name']]) if lay['name'] in nodes else (0, 0, 'vec')
        if lay['cycles'] == 0 and rows:  # fused into the layer before
            rows[-1]['rate'][r[2]] += r[0]
            rows[-1]['wb'] += r[1]
            continue
        rows.append(dict(name=lay['name'], macs=lay['macs'], dram=lay['dram_bytes'], rate={'mac': 0, 'vec': 0},
                         wb=r[1], busy=max(busy[lay['name']]['mac'], busy[lay['name']]['vector']),
                         end=end.get(lay['name'], 0)))
        rows[-1]['rate'][r[2]] += r[0]
    width = {'float32': 4, 'int8': 1, 'uint8': 1, 'int16': 2}
    io = {x['kind']: math.prod(x['shape']) * width[x['dtype']] for x in cc['io']}
    npu, wts = sim['cycles']['npu'], cc['memory']['weights_bytes']
    bound = max(cc['macs'] / 256, (wts + sum(io.values())) / 8)
    tot = collections.Counter()
    prev = 0
    if verbose:
        print('%-44s %8s %8s %8s %8s %8s %8s | %7s %7s %7s %7s' % ('layer', 'cycles', 'mac/256', 'op rate', 'comp/8',
              'dma/8', 'busy', '(a)', '(b)', '(d)', '(c)'))
    for i, r in enumerate(rows):
        cyc, prev = r['end'] - prev, r['end']
        comp = (r['wb'] + (io.get('input', 0) if i == 0 else 0) + (io.get('output', 0) if i == len(rows) - 1 else 0)) / 8
        m256 = r['macs'] / 256
        opr = max(max(r['rate'].values()), m256)
        b0, b1, b2 = max(m256, comp), max(opr, comp), max(opr, r['dram'] / 8)
        u = max(r['busy'], r['dram'] / 8)
        part = dict(e=b0, a=b1 - b0, b=b2 - b1, d=max(u - b2, 0), c=cyc - max(u, b2))
        tot.update(part)
        if verbose:
            print('%-44s %8d %8d %8d %8d %8d %8d | %7d %7d %7d %7d' % (r['name'][-44:], cyc, m256, opr, comp,
                  r['dram'] / 8, r['busy'], part['a'], part['b'], part['d'], part['c']))
    tot['e'] -= bound
    print('NPU cycles %d, bound %d (MACs/256 %d, compulsory bytes/8 %d): %.3fx' % (
        npu, bound, cc['macs'] / 256, (wts + sum(io.values())) / 8, npu / bound))
    what = dict(e='DMA-bound layers in series (per-layer roofline sum over the model\'s)',
                a='ISA op rate above MACs/256', b='activations to DRAM and back',
                d='tiles: unit busy above the op rate', c='exposed: cycles above the busiest unit')
    for k in 'eabdc':
        print('  (%s) %-66s %9d  %+5.1f%% of the bound' % (k, what[k], tot[k], 100 * tot[k] / bound))
    floor = bound + tot['e'] + tot['a']
    print('  barriered floor (e + a on the bound): %d = %.3fx' % (floor, floor / bound))


if __name__ == '__main__':
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    main(*sys.argv[1:5], len(sys.argv) > 5 and sys.argv[5] == '-v')
