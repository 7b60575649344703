import csv,gzip,io,sys,collections,re
def load(p):
    rows=list(csv.reader(io.StringIO(gzip.open(p,'rt').read())))
    hdr=rows[1]; data=[dict(zip(hdr,r)) for r in rows[2:] if len(r)>5]
    return hdr,data
res={}
for name in ('off','cur','nok'):
    hdr,data=load(f'{sys.argv[1]}/{name}-source.csv.gz')
    stalls=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    # regions: find loops: producer (contains UTMALDG), consumer (HGMMA), epilogue (UTMASTG); by address order
    ins=[(int(d['Address'],16),d['Source'].strip(),d) for d in data]
    def first(pat): return next(i for i,(a,t,d) in enumerate(ins) if pat in t)
    def last(pat): return max(i for i,(a,t,d) in enumerate(ins) if pat in t)
    tot=collections.Counter(); samples=0; execd=0
    for a,t,d in ins:
        for s in stalls: tot[s]+=int(d[s] or 0)
        samples+=int(d['Warp Stall Sampling (All Samples)'] or 0)
        execd+=int(d['Instructions Executed'] or 0)
    res[name]=(tot,samples,execd,ins,stalls)
    print(name,'samples',samples,'warp instructions executed',execd)
names=sorted({k for v in res.values() for k in v[0]}, key=lambda k:-res['off'][0][k])
print(f"{'reason':24s}{'off':>10s}{'cur':>10s}{'nok':>10s}")
for k in names:
    v=[res[n][0][k] for n in ('off','cur','nok')]
    if max(v)>500: print(f"{k:24s}"+''.join(f"{x:>10d}" for x in v))
# samples per SASS opcode class of interest
def bykey(name, pred):
    return sum(int(d['Warp Stall Sampling (All Samples)'] or 0) for a,t,d in res[name][3] if pred(t))
for label,pred in [('TRYWAIT loops (barrier waits)',lambda t:'TRYWAIT' in t or ('BRA' in t and False)),('HGMMA',lambda t:'HGMMA' in t),('WARPGROUP.DEPBAR',lambda t:'WARPGROUP.DEPBAR' in t),('STG (events)',lambda t:t.startswith('@') and 'STG' in t or t.startswith('STG')),('UTMALDG',lambda t:'UTMALDG' in t),('CS2R clock',lambda t:'SR_CLOCKLO' in t),('R2UR',lambda t:'R2UR' in t)]:
    print(f"{label:32s}"+''.join(f"{bykey(n,pred):>10d}" for n in ('off','cur','nok')))
print()
for name in ('cur','nok','off'):
    ins=res[name][3]
    for reason in ('stall_short_sb','stall_drain','stall_long_sb','stall_branch_resolving','stall_wait'):
        idx=sorted(range(len(ins)),key=lambda i:-int(ins[i][2][reason] or 0))[:5]
        print(name,reason,' ; '.join(f"{int(ins[i][2][reason])}@{i}:{ins[i][1][:42]}" for i in idx if int(ins[i][2][reason] or 0)>150))
