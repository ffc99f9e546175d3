import numpy as np
from sim.traces.read import read_trace
tr=read_trace('/work/shared/traces/ls6-a100.log')
sub0,sub1=tr.submit[0],tr.submit[-1]
ok=np.isfinite(tr.recorded_start)
for lo in (1,2,3,4,6,8,12):
    sel=ok&(tr.units>lo)
    s=tr.recorded_start[sel]; e=s+tr.runtime[sel]; w=tr.units[sel]
    t=np.r_[s,e]; d=np.r_[w,-w]; o=np.lexsort((d,t)); c=np.cumsum(d[o]); t=t[o]
    # time-weighted distribution in fit part (first 2/3)
    cut=sub0+2/3*(sub1-sub0)
    k=t<cut
    dt=np.diff(np.r_[t,t[-1]])
    vals=c[k]; dts=dt[k]
    top=np.sort(np.unique(vals))[-5:]
    share={int(v): round(float(dts[vals==v].sum()/dts.sum()),4) for v in top}
    # waiting jobs of that class at those moments? 
    print(f">{lo} nodes: fit-part max {vals.max()}, time share at top values {share}; held max {c[~k].max()}")
