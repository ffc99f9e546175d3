import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits
tr = read_trace('../shared/traces/ls6-a100.log')
p = SiteProfile.from_json(open('sim/data/ls6-a100.log.profile.json').read())
sim = np.nanmean([replay_waits(tr,p,jitter=0.02,seed=s) for s in range(3)],axis=0)/3600
np.save('/tmp/s12/sim_cur.npy', sim)
rec=(tr.recorded_start-tr.submit)/3600
t0,t1=tr.submit[0],tr.submit[-1]; h=tr.submit>=t0+2/3*(t1-t0)
print("held", h.sum(), "rec mean %.2f sim mean %.2f"%(np.nanmean(rec[h]),np.nanmean(sim[h])))
# per user
us=np.unique(tr.user[h]); rows=[]
for u in us:
  k=h&(tr.user==u)
  rows.append((np.nansum(rec[k])-np.nansum(sim[k]), u, k.sum(), np.nanmean(rec[k]), np.nanmean(sim[k])))
rows.sort(reverse=True)
tot=np.nansum(rec[h])-np.nansum(sim[h]); print("total deficit job-h %.0f"%tot)
for r in rows[:12]: print("user %d jobs %d rec %.2f sim %.2f deficit %.0f"%(r[1],r[2],r[3],r[4],r[0]))
for r in rows[-5:]: print("user %d jobs %d rec %.2f sim %.2f deficit %.0f"%(r[1],r[2],r[3],r[4],r[0]))
# per week
day=((tr.submit-t0)/86400).astype(int)
for w in range(day[h].min()//7, day[h].max()//7+1):
  k=h&(day//7==w)
  if k.sum(): print("week %d jobs %d rec %.2f sim %.2f"%(w,k.sum(),np.nanmean(rec[k]),np.nanmean(sim[k])))
