"""npusweep's plots through gnuplot (Debian's gnuplot-nox): data files and a
script per plot in the plots folder, so a plot can be redrawn or restyled by
hand. Energy and area come from whatever the stats and the target carry:
any total whose key contains "energy", any target parameter whose key
contains "area"."""
import os
import shutil
import subprocess


def _q(s):
    return '"' + str(s).replace('\\', '\\\\').replace('"', '\\"') + '"'


def _ordered(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def energy_key(summary):
    keys = _ordered(k for p in summary for k in p["totals"] if "energy" in k.lower())
    total = [k for k in keys if "total" in k.lower()]
    return (total or keys or [None])[0]


def area_of(params):
    vals = [v for k, v in params.items() if "area" in k.lower() and isinstance(v, (int, float))
            and not isinstance(v, bool)]
    return sum(vals) if vals else None


def peak_and_bw(params):
    peak = params.get("npu.mac.rows", 0) * params.get("npu.mac.cols", 0)
    bw = params.get("npu.dram.bytes_per_cycle")
    if not bw and params.get("npu.dram.mb_per_s") and params.get("npu.clock_mhz"):
        bw = params["npu.dram.mb_per_s"] / params["npu.clock_mhz"]
    return peak, bw or 0


def resource_index(params, ref):
    """An unweighted stand-in for area: the mean of the MAC array, the SRAM
    and the DRAM bandwidth, each relative to the reference variant."""
    keys = [("npu.mac.rows", "npu.mac.cols"), ("npu.sram.bytes",), ("npu.dram.bytes_per_cycle",)]
    parts = []
    for ks in keys:
        v = r = 1.0
        for k in ks:
            v *= params.get(k, 1) or 1
            r *= ref.get(k, 1) or 1
        parts.append(v / r)
    return sum(parts) / len(parts)


def pareto(pts):
    """The points no other beats on both x and y (smaller is better), by x."""
    front, best = [], None
    for x, y, lab in sorted(pts, key=lambda t: (t[0], t[1])):
        if best is None or y < best:
            front.append((x, y, lab))
            best = y
    return front


def _per_variant(summary, key, d, stem, ylabel, title):
    variants = _ordered(p["variant"] for p in summary)
    models = _ordered(p["model"] for p in summary)
    dat = os.path.join(d, stem + ".dat")
    with open(dat, "w") as f:
        for m in models:
            f.write(f"# {m}\n")
            for i, v in enumerate(variants):
                p = next((p for p in summary if p["variant"] == v and p["model"] == m), None)
                if p and p["totals"].get(key) is not None:
                    f.write(f"{i} {p['totals'][key]} {_q(v)}\n")
            f.write("\n\n")
    plots = ", ".join(f"{_q(dat)} index {k} using 1:2:xtic(3) with linespoints lw 2 pt 7 title {_q(m)}"
                      for k, m in enumerate(models))
    return (f"set output {_q(os.path.join(d, stem + '.png'))}\nset title {_q(title)}\nset logscale y\n"
            f"set ylabel {_q(ylabel)}\nset xlabel 'variant'\nset xtics rotate by -30\nset grid ytics\n"
            f"set key outside right\nplot {plots}\nunset logscale\nunset xtics\nset xtics\n")


def _roofline(summary, d):
    variants = _ordered(p["variant"] for p in summary)
    dat = os.path.join(d, "roofline.dat")
    roofs, xs = [], []
    with open(dat, "w") as f:
        for v in variants:
            f.write(f"# {v}\n")
            params = None
            for p in summary:
                if p["variant"] != v:
                    continue
                params = p["params"]
                for l in p["layers"]:
                    if l.get("unit") == "npu" and l.get("macs", 0) > 0 and l.get("dram_bytes", 0) > 0 \
                            and l.get("cycles", 0) > 0:
                        oi = l["macs"] / l["dram_bytes"]
                        xs.append(oi)
                        f.write(f"{oi:.6g} {l['macs'] / l['cycles']:.6g}\n")
            f.write("\n\n")
            roofs.append(peak_and_bw(params or {}))
    if not xs:
        return ""
    lo, hi = min(xs) / 2, max(xs) * 2
    plots = []
    for k, (v, (peak, bw)) in enumerate(zip(variants, roofs)):
        pt = (7, 6, 9, 8, 5, 4, 13, 12)[k % 8]  # open and filled shapes: coinciding layers stay visible
        plots.append(f"{_q(dat)} index {k} using 1:2 with points pt {pt} ps 0.8 lc {k + 1} title {_q(v)}")
        if peak and bw:
            plots.append(f"(x < {peak / bw} ? {bw}*x : {peak}) with lines dt 2 lc {k + 1} notitle")
    return (f"set output {_q(os.path.join(d, 'roofline.png'))}\n"
            "set title 'per-layer roofline (NPU layers; dashed: the roof of each variant)'\n"
            f"set logscale xy\nset xrange [{lo:.6g}:{hi:.6g}]\nset samples 400\n"
            "set xlabel 'operational intensity (MACs per DRAM byte)'\nset ylabel 'achieved MACs per NPU cycle'\n"
            f"set grid\nset key outside right\nplot {', '.join(plots)}\nunset logscale\nset xrange [*:*]\n")


def _pareto(summary, d, ekey):
    have_area = all(area_of(p["params"]) is not None for p in summary)
    if have_area:
        xof, xlabel = (lambda p: area_of(p["params"])), "area (sum of the target's area figures)"
    elif ekey:
        xof, xlabel = (lambda p: p["totals"].get(ekey)), f"energy ({ekey})"
    else:
        ref = summary[0]["params"]
        xof = lambda p: resource_index(p["params"], ref)  # noqa: E731
        xlabel = (f"resource index: mean of MACs, SRAM and DRAM bandwidth relative to '{summary[0]['variant']}' "
                  "(no area figures in the target)")
    models = _ordered(p["model"] for p in summary)
    dat = os.path.join(d, "pareto.dat")
    with open(dat, "w") as f:
        for m in models:
            pts = [(xof(p), p["totals"].get("cycles.total"), p["variant"]) for p in summary if p["model"] == m]
            pts = [t for t in pts if t[0] is not None and t[1] is not None]
            f.write(f"# {m}: all\n")
            for x, y, lab in pts:
                f.write(f"{x} {y} {_q(lab)}\n")
            f.write(f"\n\n# {m}: front\n")
            for x, y, lab in pareto(pts):
                f.write(f"{x} {y} {_q(lab)}\n")
            f.write("\n\n")
    plots = []
    for k, m in enumerate(models):
        plots.append(f"{_q(dat)} index {2 * k} using 1:2 with points pt 7 lc {k + 1} title {_q(m)}")
        plots.append(f"{_q(dat)} index {2 * k + 1} using 1:2 with lines lw 2 lc {k + 1} notitle")
        plots.append(f"{_q(dat)} index {2 * k + 1} using 1:2:3 with labels offset 0,0.8 font ',7' "
                     f"tc lt {k + 1} notitle")
    return (f"set output {_q(os.path.join(d, 'pareto.png'))}\n"
            "set title 'cycles against cost: every variant (dots) and the Pareto front (line, labelled)'\n"
            f"set logscale y\nset xlabel {_q(xlabel)}\nset ylabel 'cycles per inference'\nset grid\n"
            f"set key outside right\nplot {', '.join(plots)}\nunset logscale\n")


def plot_all(summary, d):
    """Writes the data and scripts; draws the PNGs when gnuplot is there. Returns a one-line report."""
    os.makedirs(d, exist_ok=True)
    ekey = energy_key(summary)
    gp = "set terminal pngcairo size 1100,650 noenhanced font ',10'\n"
    gp += _per_variant(summary, "cycles.total", d, "cycles", "cycles per inference (NPU clock)",
                       "cycles per variant (total: NPU and host)")
    if ekey:
        gp += _per_variant(summary, ekey, d, "energy", ekey, "energy per inference per variant")
    gp += _roofline(summary, d)
    gp += _pareto(summary, d, ekey)
    script = os.path.join(d, "plots.gp")
    with open(script, "w") as f:
        f.write(gp)
    if not shutil.which("gnuplot"):
        return f"plots skipped: gnuplot not found (apt-get install gnuplot-nox; then gnuplot {script})"
    r = subprocess.run(["gnuplot", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        return f"gnuplot failed on {script}: {r.stdout.strip()[-400:]}"
    pngs = sorted(f for f in os.listdir(d) if f.endswith(".png"))
    return f"plots in {d}: {', '.join(pngs)}"
