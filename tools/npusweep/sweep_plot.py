"""npusweep's plots through gnuplot (Debian's gnuplot-nox): data files and a
script per plot in the plots folder, so a plot can be redrawn or restyled by
hand. Energy and area come from whatever the stats carry: any total whose
key contains "energy", the total whose key contains "area" (npusim's
area.total_mm2, computed from the target's area figures)."""
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


def area_key(summary):
    """The stats' total area: the target's area figures are per unit (per
    MAC, per KiB), so only the stats' sum over the components is an area."""
    keys = _ordered(k for p in summary for k in p["totals"] if "area" in k.lower())
    total = [k for k in keys if "total" in k.lower()]
    return (total or [None])[0]


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


def _per_variant(summary, key, d, stem, ylabel, title, relative=False):
    """One line per model over the variants; relative: each model's values
    over its first variant's, on a linear axis (a few percent stay visible)."""
    variants = _ordered(p["variant"] for p in summary)
    models = _ordered(p["model"] for p in summary)
    dat = os.path.join(d, stem + ".dat")
    titles = []
    with open(dat, "w") as f:
        for m in models:
            f.write(f"# {m}\n")
            ref = None
            for i, v in enumerate(variants):
                p = next((p for p in summary if p["variant"] == v and p["model"] == m), None)
                if not p or p["totals"].get(key) is None:
                    continue
                val = p["totals"][key]
                ref = val if ref is None else ref
                f.write(f"{i} {val / ref if relative and ref else val} {_q(v)}\n")
            f.write("\n\n")
            titles.append(f"{m} ({variants[0]}: {ref:.6g})" if relative and ref is not None else m)
    plots = ", ".join(f"{_q(dat)} index {k} using 1:2:xtic(3) with linespoints lw 2 pt 7 title {_q(t)}"
                      for k, t in enumerate(titles))
    scale = "unset logscale\n" if relative else "set logscale y\n"
    return (f"set output {_q(os.path.join(d, stem + '.png'))}\nset title {_q(title)}\n{scale}"
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


def _pareto(summary, d, stem, xof, xlabel):
    models = _ordered(p["model"] for p in summary)
    dat = os.path.join(d, stem + ".dat")
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
    return (f"set output {_q(os.path.join(d, stem + '.png'))}\n"
            "set title 'cycles against cost: every variant (dots) and the Pareto front (line, labelled)'\n"
            f"set logscale y\nset xlabel {_q(xlabel)}\nset ylabel 'cycles per inference'\nset grid\n"
            f"set key outside right\nplot {', '.join(plots)}\nunset logscale\n")


def _paretos(summary, d, ekey):
    """pareto.png against the area (else the energy, else a resource index);
    pareto_energy.png against the energy when there is an area too."""
    akey = area_key(summary)
    if akey:
        gp = _pareto(summary, d, "pareto", lambda p: p["totals"].get(akey), f"area ({akey})")
        if ekey:
            gp += _pareto(summary, d, "pareto_energy", lambda p: p["totals"].get(ekey), f"energy per inference ({ekey})")
        return gp
    if ekey:
        return _pareto(summary, d, "pareto", lambda p: p["totals"].get(ekey), f"energy per inference ({ekey})")
    ref = summary[0]["params"]
    return _pareto(summary, d, "pareto", lambda p: resource_index(p["params"], ref),
                   f"resource index: mean of MACs, SRAM and DRAM bandwidth relative to '{summary[0]['variant']}' "
                   "(no area or energy in the stats)")


def plot_all(summary, d):
    """Writes the data and scripts; draws the PNGs when gnuplot is there. Returns a one-line report."""
    os.makedirs(d, exist_ok=True)
    ekey = energy_key(summary)
    gp = "set terminal pngcairo size 1100,650 noenhanced font ',10'\n"
    gp += _per_variant(summary, "cycles.total", d, "cycles", "cycles per inference (NPU clock)",
                       "cycles per variant (total: NPU and host)")
    if ekey:
        gp += _per_variant(summary, ekey, d, "energy", f"{ekey} relative to the first variant",
                           "energy per inference per variant (relative; the legend gives the first variant's)",
                           relative=True)
    gp += _roofline(summary, d)
    gp += _paretos(summary, d, ekey)
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
