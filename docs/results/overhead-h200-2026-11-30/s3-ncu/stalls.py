#!/usr/bin/env python3
"""Summarise the warp-stall samples of an ncu source-page export.

Usage: python3 stalls.py source.csv.gz

The export holds one table per profiled launch of the gemm kernel (the
instrumented build is the one that reads SR_CLOCKLO). Prints the stall
reasons of both launches side by side, then per launch the instructions
with the most samples of the reasons that differ most.
"""
import collections
import csv
import gzip
import io
import sys


def launches(path):
    text = gzip.open(path, "rt").read()
    out = []
    for block in text.split('"Kernel Name","gemm",\n')[1:]:
        rows = list(csv.reader(io.StringIO(block)))
        hdr = rows[0]
        data = [dict(zip(hdr, r)) for r in rows[1:] if len(r) > 5]
        stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
        total = collections.Counter()
        for d in data:
            for s in stalls:
                total[s] += int(d[s] or 0)
        build = "instrumented" if any("CLOCKLO" in d["Source"] for d in data) else "uninstrumented"
        out.append((build, total, data))
    return out


def main(argv):
    ls = sorted(launches(argv[1]), key=lambda l: l[0] != "uninstrumented")
    names = sorted({k for _, t, _ in ls for k in t}, key=lambda k: -max(t[k] for _, t, _ in ls))
    print(f"{'stall reason':24s}" + "".join(f"{b:>16s}" for b, _, _ in ls))
    for k in names:
        vals = [t[k] for _, t, _ in ls]
        if max(vals) >= 50:
            print(f"{k:24s}" + "".join(f"{v:16d}" for v in vals))
    print(f"{'all samples':24s}" + "".join(f"{sum(t.values()):16d}" for _, t, _ in ls))
    for build, _, data in ls:
        print(f"\n{build}: instructions with the most samples of")
        for key in ("stall_long_sb", "stall_lg", "stall_barrier"):
            top = sorted(((int(d[key] or 0), i, d["Source"].strip()) for i, d in enumerate(data)), reverse=True)[:4]
            print(f"  {key}:")
            for v, i, src in top:
                if v >= 300:
                    print(f"    {v:7d}  [{i:4d}] {src[:64]}")
        lg = sum(int(d["stall_lg"] or 0) for d in data if "STG.E.64" in d["Source"])
        print(f"  stall_lg samples on the 8-byte event stores (STG.E.64): {lg}")


if __name__ == "__main__":
    main(sys.argv)
