import sys, numpy as np, collections
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from sim.traces import read_trace
tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
sub=tr.submit.astype(float); st=tr.recorded_start.astype(float); rt=np.maximum(tr.runtime.astype(float),0); u=tr.units.astype(int); lim=tr.limit.astype(float)
end=st+rt
ok=np.isfinite(st)
print("limit hours distribution:", collections.Counter((lim/3600).round().astype(int).tolist()).most_common(12))
t0=sub.min(); span=sub.max()-t0
for lo in [24*3600, 36*3600, 47*3600]:
    m=ok&(lim>lo)
    ev=np.concatenate([np.stack([st[m], u[m]],1), np.stack([end[m], -u[m]],1)])
    ev=ev[np.lexsort((ev[:,1], ev[:,0]))]
    conc=np.cumsum(ev[:,1])
    # time-weighted histogram of concurrency
    dt=np.diff(ev[:,0], append=ev[-1,0])
    for part,(a,b) in {'first2/3':(t0,t0+2*span/3),'last1/3':(t0+2*span/3,t0+span)}.items():
        sel=(ev[:,0]>=a)&(ev[:,0]<b)
        c=conc[sel]; w=dt[sel]
        if not len(c): continue
        mx=c.max()
        top=[(v, round(w[c==v].sum()/w.sum(),3)) for v in sorted(set(c.tolist()))[-5:]]
        print(f"limit>{lo/3600:.0f}h {part}: max nodes {mx}; top levels (nodes, time share): {top}")
# total busy levels for comparison
m=ok
ev=np.concatenate([np.stack([st[m], u[m]],1), np.stack([end[m], -u[m]],1)]); ev=ev[np.lexsort((ev[:,1], ev[:,0]))]
conc=np.cumsum(ev[:,1]); dt=np.diff(ev[:,0], append=ev[-1,0])
for part,(a,b) in {'first2/3':(t0,t0+2*span/3),'last1/3':(t0+2*span/3,t0+span)}.items():
    sel=(ev[:,0]>=a)&(ev[:,0]<b); c=conc[sel]; w=dt[sel]
    print(f"all {part}: max {c.max()} mean {np.average(c,weights=w):.1f}; top levels {[(v, round(w[c==v].sum()/w.sum(),3)) for v in sorted(set(c.tolist()))[-5:]]}")
