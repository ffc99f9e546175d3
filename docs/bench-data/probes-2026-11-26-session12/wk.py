import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits
tr = read_trace('../shared/traces/ls6-a100.log')
p = SiteProfile.from_json(open('sim/data/ls6-a100.log.profile.json').read())
w=replay_waits(tr,p,jitter=0.02,seed=0)
av=p.availability(tr)
ss=tr.submit+w; rs=tr.recorded_start
t0,t1=tr.submit[0],tr.submit[-1]
grid=np.arange(t0,t1,600.)
def busy(st):
  b=np.zeros(len(grid)); 
  for s,r,n in zip(st,tr.runtime,tr.units):
    if np.isfinite(s):
      i=np.searchsorted(grid,s); j=np.searchsorted(grid,s+r); b[i:j]+=n
  return b
def pend(st):
  b=np.zeros(len(grid))
  for sub,s in zip(tr.submit,st):
    if np.isfinite(s):
      i=np.searchsorted(grid,sub); j=np.searchsorted(grid,s); b[i:j]+=1
  return b
rb,sb,rp,sp=busy(rs),busy(ss),pend(rs),pend(ss)
A=np.array([av.at(g,p.units) for g in grid])
wk=((grid-t0)/86400/7).astype(int)
print("wk  avail  recbusy simbusy | recpend simpend | rec idle-while-pending(avail-busy)")
for k in range(wk.max()+1):
  m=wk==k
  mp=m&(rp>0)
  print(f"{k:3d} {A[m].mean():6.1f} {rb[m].mean():6.1f} {sb[m].mean():6.1f} | {rp[m].mean():6.1f} {sp[m].mean():6.1f} | {(A[mp]-rb[mp]).mean() if mp.any() else 0:5.1f} sim {(A[m&(sp>0)]-sb[m&(sp>0)]).mean() if (m&(sp>0)).any() else 0:5.1f}")
print("pending job-hours in weeks 17-21 by limit class and units")
m=(wk>=17)&(wk<=21); g0,g1=grid[m][0],grid[m][-1]
def ph(st,k):
  a=np.clip(tr.submit[k],g0,g1); b=np.clip(st[k],g0,g1); return np.nansum(b-a)/3600
for lo,hi in ((0,1),(1,4),(4,12),(12,24),(24,49)):
  k=(tr.limit>lo*3600)&(tr.limit<=hi*3600)&np.isfinite(rs)&np.isfinite(ss)
  print(f"limit {lo}-{hi} h jobs {k.sum()}: rec {ph(rs,k):8.0f} sim {ph(ss,k):8.0f}")
for lo,hi in ((1,1),(2,4),(5,16),(17,99)):
  k=(tr.units>=lo)&(tr.units<=hi)&np.isfinite(rs)&np.isfinite(ss)
  print(f"units {lo}-{hi}: rec {ph(rs,k):8.0f} sim {ph(ss,k):8.0f}")
# runtime/limit ratio
k=np.isfinite(rs)
r=tr.runtime/tr.limit
print("runtime/limit median fit-part vs held", np.median(r[tr.submit<t0+2/3*(t1-t0)]), np.median(r[tr.submit>=t0+2/3*(t1-t0)]))
