import numpy as np, dataclasses
from sim.traces.read import read_trace
from sim.profile import load
from sim.availability import recorded_usage, fitted, waiting_bins
from sim.phases import gc_paused
tr=read_trace('/work/shared/traces/ls6-a100.log')
prof=load(tr)
sim=prof.simulator(tr)
with gc_paused(): sim.run()
st=np.full(len(tr),np.nan)
for r in sim.records:
    if r.trace_index>=0: st[r.trace_index]=r.start
simtr=dataclasses.replace(tr, recorded_start=st)
su=recorded_usage(simtr); ru=recorded_usage(tr)
step=900.0; t0=np.floor(ru.times[0]/step)*step; n=int(np.ceil((ru.times[-1]-t0)/step))+1
def mean_bins(u):
    ts=np.arange(t0,t0+step*n,60.0); i=np.searchsorted(u.times,ts,side='right')-1
    return np.where(i>=0,u.units[np.maximum(i,0)],0).reshape(n,15).mean(1)
mr,ms=mean_bins(ru),mean_bins(su)
av=fitted(ru,80,window=prof.window_s); ai=np.searchsorted(np.asarray(av.times),t0+step*np.arange(n),side='right')-1
a=np.where(ai>=0,np.asarray(av.units)[np.maximum(ai,0)],80)
wr=waiting_bins(tr,t0,step,n); ws=waiting_bins(simtr,t0,step,n)
sub0,sub1=tr.submit[0],tr.submit[-1]
third=np.clip(((t0+step*np.arange(n)-sub0)/(sub1-sub0)*3).astype(int),0,2)
# backlog: requested node-hours of submitted-but-not-started jobs (by runtime), averaged
def backlog(starts):
    ts=t0+step*np.arange(n)+step/2
    ok=np.isfinite(starts)
    out=np.zeros(n)
    sub=tr.submit[ok]; s=starts[ok]; w=(tr.units[ok]*tr.runtime[ok]/3600.)
    a_=np.searchsorted(ts,sub); b_=np.searchsorted(ts,s)
    d=np.zeros(n+1); np.add.at(d,a_,w); np.add.at(d,b_,-w)
    return np.cumsum(d)[:n]
br,bs=backlog(tr.recorded_start),backlog(st)
for th in range(3):
    m=third==th
    print(f"third {th}: busy rec {mr[m].mean():5.1f} sim {ms[m].mean():5.1f} avail {a[m].mean():5.1f}; waiting>10min rec {wr[m].mean():.2f} sim {ws[m].mean():.2f}; backlog node-h rec {br[m].mean():6.0f} sim {bs[m].mean():6.0f}")
w=(st-tr.submit)/3600; rw=(tr.recorded_start-tr.submit)/3600
sm=tr.submit>=sub0+2/3*(sub1-sub0)
print("held-out mean wait rec %.2f sim %.2f"%(np.nanmean(rw[sm]),np.nanmean(w[sm])))
np.save('/tmp/ls6-heldout-simstart.npy',st)
