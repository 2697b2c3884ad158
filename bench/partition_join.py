#!/usr/bin/python3
"""Joins npucc's --stats-json "partition" (estimated host cycles per host
step) with npusim's --stats-json "steps" (measured host cycles per step) by
step name, and prints one row: host steps, estimated and simulated host
cycles (NPU clock), their error, the estimated cycles of the chosen
partition and of first fit, the cycles saved, the switches.
With --steps, each host step too. Exit status 1 when the partition
estimates more cycles than first fit.

usage: bench/partition_join.py NAME COMPILE.json SIM.json [--steps]"""
import json
import sys


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    name, cj, sj = sys.argv[1:4]
    est = json.load(open(cj))["partition"]
    sim = json.load(open(sj))
    meas = {s["name"]: s["host_cycles"] for s in sim["steps"] if s["kind"] == "host"}
    rows = [(h["name"], h["op"], h["estimated_cycles"], meas[h["name"]])
            for h in est["host_steps"] if h["name"] in meas]  # a view the plan aliased is no step
    te, tm = sum(r[2] for r in rows), sum(r[3] for r in rows)
    err = 100.0 * (te - tm) / tm if tm else 0.0
    ff = est["first_fit"]["estimated_cycles"]
    saved = ff - est["estimated_cycles"]
    print(f"{name:22s} {len(rows):5d} {te:12d} {tm:12d} {err:7.1f}% {est['estimated_cycles']:12d} {ff:12d} "
          f"{saved:9d} {est['switches']:4d}/{est['first_fit']['switches']:<4d} {'ok' if abs(err) <= 15 else 'OFF'}")
    if "--steps" in sys.argv:
        for n, op, e, m in rows:
            print(f"    {n[:40]:40s} {op:18s} {e:10d} {m:10d} {100.0 * (e - m) / max(m, 1):7.1f}%")
    return 1 if saved < 0 else 0


if __name__ == "__main__":
    sys.exit(main())
