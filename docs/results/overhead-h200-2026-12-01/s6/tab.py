# tab.py DIR: one line per variant and pass from DIR/time-<variant>-<pass>.json:
# per size ratio, paired ratio, control ratio; then per variant the range.
import json, glob, os, re, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(d, "time-*.json"))):
    m = re.match(r"time-(.+)-(\d+)\.json", os.path.basename(f))
    v, p = m.group(1), int(m.group(2))
    for r in json.load(open(f))["results"]:
        L = r["latency"]
        rows[(v, r["m"])].append((p, L["uninstrumented"]["median_us"], L["instrumented"]["median_us"],
                                  L["ratio"], L["paired_ratio"], L.get("control_ratio", 0), L.get("control_paired_ratio", 0)))
print("variant size pass uninstr instr ratio paired control control_paired")
for (v, m), rs in rows.items():
    for p, u, i, ra, pr, c, cp in sorted(rs):
        print(f"{v} {m} {p} {u:.1f} {i:.1f} {ra:.4f} {pr:.4f} {c:.4f} {cp:.4f}")
print()
print("variant size n ratio-range paired-range mean-paired control-range")
for (v, m), rs in rows.items():
    ra = [r[3] for r in rs]; pr = [r[4] for r in rs]; c = [r[5] for r in rs]
    print(f"{v:6} {m} {len(rs)} {min(ra):.4f}-{max(ra):.4f} {min(pr):.4f}-{max(pr):.4f} {sum(pr)/len(pr):.4f} {min(c):.4f}-{max(c):.4f}")
