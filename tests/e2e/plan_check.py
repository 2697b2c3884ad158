#!/usr/bin/env python3
"""An outside checker of npucc's memory plan (--stats-json memory.plan).

Usage: plan_check.py NPUCC.json [NPUSIM.json MAX_RATIO]

From the plan entries alone (tensor, offset, size, first_pos/last_pos,
level, alias_of) it checks, per memory level, that no two root buffers
whose node-position lifetimes meet share a byte, that every alias lies
inside its root and at its level, and that each level's size is at its
bound (the most root bytes live at any one position). With an npusim
stats file it also checks that the DRAM bytes moved per inference are at
most MAX_RATIO times the compulsory ones (weights, model input and output).
Prints "ok ..." lines; exits 1 on the first failure."""
import json
import sys


def fail(msg):
    print("FAIL plan_check: " + msg)
    sys.exit(1)


def check_level(level, roots, size_reported):
    # sweep by first_pos: each buffer against those still live
    roots = sorted(roots, key=lambda b: (b["first_pos"], b["offset"]))
    live = []
    for b in roots:
        live = [a for a in live if a["last_pos"] >= b["first_pos"]]
        for a in live:
            if a["offset"] < b["offset"] + b["size"] and b["offset"] < a["offset"] + a["size"]:
                fail("%s: '%s' [%d,+%d) live %d..%d overlaps '%s' [%d,+%d) live %d..%d" % (
                    level, a["tensor"], a["offset"], a["size"], a["first_pos"], a["last_pos"],
                    b["tensor"], b["offset"], b["size"], b["first_pos"], b["last_pos"]))
        live.append(b)
    end = max([b["offset"] + b["size"] for b in roots], default=0)
    horizon = max([b["last_pos"] for b in roots], default=-1) + 1
    bound = 0
    for p in range(horizon):
        bound = max(bound, sum(b["size"] for b in roots if b["first_pos"] <= p <= b["last_pos"]))
    if end > size_reported:
        fail("%s: buffers end at %d, past the reported %d bytes" % (level, end, size_reported))
    if size_reported > 0 and end != size_reported:
        fail("%s: reported %d bytes, the buffers end at %d" % (level, size_reported, end))
    if end != bound:
        fail("%s: %d bytes, above its bound %d" % (level, end, bound))
    print("ok plan_check: %s level: %d buffers, %d bytes = bound" % (level, len(roots), end))


def main():
    st = json.load(open(sys.argv[1]))
    mem = st["memory"]
    plan = mem["plan"]
    for b in plan:
        for k in ("first_pos", "last_pos", "level"):
            if k not in b:
                fail("entry '%s' has no %s" % (b["tensor"], k))
        if b["first_pos"] > b["last_pos"] or b["first"] > b["last"]:
            fail("'%s' lives backwards" % b["tensor"])
    by_name = {b["tensor"]: b for b in plan}
    for b in plan:
        if "alias_of" not in b:
            continue
        r = by_name.get(b["alias_of"])
        if r is None or "alias_of" in r:
            fail("'%s' aliases '%s', not a root" % (b["tensor"], b["alias_of"]))
        if r["level"] != b["level"] or b["offset"] < r["offset"] or \
           b["offset"] + b["size"] > r["offset"] + r["size"] or \
           b["first_pos"] < r["first_pos"] or b["last_pos"] > r["last_pos"]:
            fail("'%s' is not inside its root '%s'" % (b["tensor"], r["tensor"]))
    sizes = {"dram": mem["arena_bytes"], "sram": mem.get("sram_resident_bytes", 0)}
    for level in ("dram", "sram"):
        check_level(level, [b for b in plan if b["level"] == level and "alias_of" not in b], sizes[level])
    if len(sys.argv) > 3:
        sim = json.load(open(sys.argv[2]))
        ratio = float(sys.argv[3])
        width = {"float32": 4, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "float16": 2}
        io = 0
        for t in sim.get("io") or st["io"]:
            n = 1
            for d in t["shape"]:
                n *= d
            io += n * width[t["dtype"]]
        compulsory = mem["weights_bytes"] + io
        moved = sim["dram"]["read_bytes"] + sim["dram"]["write_bytes"]
        if moved > ratio * compulsory:
            fail("DRAM %d bytes per inference, %.3fx the compulsory %d (at most %.2fx)" % (
                moved, moved / compulsory, compulsory, ratio))
        print("ok plan_check: DRAM %d bytes, %.3fx the compulsory %d (weights %d, io %d)" % (
            moved, moved / compulsory, compulsory, mem["weights_bytes"], io))


main()
