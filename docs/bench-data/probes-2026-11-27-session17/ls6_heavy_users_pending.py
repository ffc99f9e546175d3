import numpy as np
from sim.traces.read import read_trace
tr=read_trace('/work/shared/traces/ls6-a100.log')
st=np.load('/tmp/ls6-heldout-simstart.npy')
sub0,sub1=tr.submit[0],tr.submit[-1]; cut=sub0+2/3*(sub1-sub0)
def conc(starts, sel, units=False):
    s=starts[sel]; e=s+tr.runtime[sel]; w=tr.units[sel] if units else np.ones(sel.sum())
    t=np.r_[s,e]; d=np.r_[w,-w]; o=np.lexsort((d,t)); return t[o], np.cumsum(d[o])
for u in [204,258,239,319,273]:
    sel=(tr.user==u)&np.isfinite(tr.recorded_start)
    out=[]
    for name,starts in (("rec",tr.recorded_start),("sim",st)):
        for units in (False,True):
            t,c=conc(starts,sel,units)
            h=t>=cut; fitp=t<cut
            out.append(f"{name} {'nodes' if units else 'jobs'} max fit {c[fitp].max() if fitp.any() else 0:.0f} held {c[h].max():.0f}")
    # pending counts in record at held-out times
    print(u, (sel&(tr.submit>=cut)).sum(), "held jobs;", "; ".join(out), "| nodes/job", np.unique(tr.units[sel&(tr.submit>=cut)]))
print()
ts=np.arange(cut, sub1, 300.0)
def running(starts, sel):
    s=starts[sel]; e=s+tr.runtime[sel]
    return (s[None,:]<=ts[:,None]).sum(1)-(e[None,:]<=ts[:,None]).sum(1)
def pending(starts, sel):
    b=tr.submit[sel]; s=starts[sel]
    return ((b[None,:]<=ts[:,None])&(s[None,:]>ts[:,None])).sum(1)
tot=[]
for u in [204,258,239,319,273,212,26]:
    sel=(tr.user==u)&np.isfinite(tr.recorded_start)
    r=[]
    for starts in (tr.recorded_start, st):
        run=running(starts,sel); pend=pending(starts,sel); m=pend>0
        r.append((m.mean(), run[m].mean() if m.any() else 0, np.bincount(run[m].astype(int),minlength=9)[:9]/max(m.sum(),1)))
    print(u, "rec: pending share %.2f running while pending %.2f"%r[0][:2], "| sim: %.2f %.2f"%r[1][:2])
    print("    rec dist", np.round(r[0][2],2)); print("    sim dist", np.round(r[1][2],2))
