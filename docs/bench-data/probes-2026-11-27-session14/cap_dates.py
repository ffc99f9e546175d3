"""Session 14: when LS6's recorded schedule first runs a user above 16 nodes with jobs of <= 16 nodes; per-week max per-user nodes and jobs (recorded use only)."""
import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np, datetime as dt
from sim.traces.read import read_trace
from sim.profile import split
tr=read_trace("../shared/traces/ls6-a100.log")
fit,held,cut=split(tr)
m=np.isfinite(tr.recorded_start)&(tr.units<=16)
s=tr.recorded_start[m]; e=s+np.maximum(tr.runtime[m],0); u=tr.units[m].astype(int); us=tr.user[m]
ev=np.r_[s,e]; d=np.r_[u,-u]; who=np.r_[us,us]; one=np.r_[np.ones(len(s),int),-np.ones(len(s),int)]
o=np.lexsort((d, ev))  # ends (negative) first at ties
held_n={}; held_j={}; week={}
first=None
for i in o:
    w=who[i]; held_n[w]=held_n.get(w,0)+d[i]; held_j[w]=held_j.get(w,0)+one[i]
    k=int((ev[i]-tr.submit[0])//(7*86400))
    wn,wj,wu=week.get(k,(0,0,set()))
    week[k]=(max(wn,held_n[w]),max(wj,held_j[w]),wu|({w} if held_n[w]>16 else set()))
    if held_n[w]>16 and first is None: first=ev[i]
print("cut", cut, "first break", first, "days after cut", (first-cut)/86400 if first else None)
for k in sorted(week):
    t=tr.submit[0]+k*7*86400
    print(f"week {k:2d} {'held' if t>=cut else 'fit '} max user nodes {week[k][0]:3d} jobs {week[k][1]:2d} users>16: {len(week[k][2])}")
