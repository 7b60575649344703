#!/usr/bin/env python3
"""Shape of the gemm's SASS (cuobjdump -sass of one build), per build:
distinct uniform registers, BSSY convergence regions, BRA.DIV checks, and the
producer's path from its slot wait (the last SYNCS.PHASECHK before the first
UTMALDG) to that UTMALDG, in instructions.

Usage: python3 shape.py FILE.sass[.gz] ...
       python3 shape.py --diff A.sass[.gz] B.sass[.gz]
The second form prints the lines that differ between two builds once
register numbers, predicates and addresses are erased.
"""
import difflib
import gzip
import re
import sys


def instructions(path):
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    with opener(path, "rt") as f:
        for line in f:
            m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
            if m:
                out.append(m.group(1))
    return out


def main(paths):
    print(f"{'build':12s} {'URs':>4s} {'BSSY':>5s} {'BRA.DIV':>8s} {'wait->UTMALDG':>14s}")
    for p in paths:
        ins = instructions(p)
        urs = {u for t in ins for u in re.findall(r"\bUR\d+\b", t)}
        tma = next(i for i, t in enumerate(ins) if "UTMALDG" in t)
        wait = max(i for i in range(tma) if "SYNCS.PHASECHK" in ins[i])
        name = re.sub(r"\.sass(\.gz)?$", "", p.split("/")[-1])
        print(f"{name:12s} {len(urs):4d} {sum('BSSY' in t for t in ins):5d} "
              f"{sum('BRA.DIV' in t for t in ins):8d} {tma - wait:14d}")


def shape_free(path):
    return [re.sub(r"0x[0-9a-f]+", "X", re.sub(r"\b(U?R|U?P|B)\d+\b", r"\1", t)) for t in instructions(path)]


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--diff":
        for line in difflib.unified_diff(shape_free(sys.argv[2]), shape_free(sys.argv[3]),
                                         sys.argv[2], sys.argv[3], n=0, lineterm=""):
            print(line)
    elif len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    else:
        main(sys.argv[1:])
