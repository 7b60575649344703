# steps.py DIR: from Nsight Compute's SASS source counters (DIR/NAME-source.csv.gz,
# NAME = off, cur, nok), how many instructions a consumer warp executes per k
# step (those executed as often as the first HGMMA, within 10%), a producer
# warp's (as often as the first UTMALDG, within 1%: its pair path runs on
# all steps but one per CTA), and the launch's total.
import csv, gzip, io, sys
for name in ("off", "cur", "nok"):
    rows = list(csv.reader(io.StringIO(gzip.open(f"{sys.argv[1]}/{name}-source.csv.gz", "rt").read())))
    hdr = rows[1]
    ins = [dict(zip(hdr, r)) for r in rows[2:] if len(r) > 5]
    ex = [(x["Source"].strip(), int(x["Instructions Executed"] or 0)) for x in ins]
    total = sum(n for _, n in ex)
    h = next(n for s, n in ex if "HGMMA" in s)
    u = next(n for s, n in ex if "UTMALDG" in s)
    cons = sum(1 for _, n in ex if 0.9 * h <= n <= 1.1 * h)
    prod = sum(1 for _, n in ex if 0.99 * u <= n <= 1.01 * u)
    print(f"{name}: {total} warp instructions; consumer k step {cons} instructions "
          f"({h} warp-steps); producer k step {prod} ({u} warp-steps)")
