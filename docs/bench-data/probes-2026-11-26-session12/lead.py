import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits, split, loss
from sim.fidelity import fidelity
from sim.availability import Availability
tr = read_trace('../shared/traces/ls6-a100.log')
trace_name=sys.argv[1] if len(sys.argv)>1 and sys.argv[1].endswith(('log','swf')) else None
p = SiteProfile.from_json(open('sim/data/ls6-a100.log.profile.json').read())
fit_mask,_,_ = split(tr, 2/3, p.recent)
rec=tr.recorded_start-tr.submit
orig=SiteProfile._fitted
def ahead(av, lead):
  if lead==0: return av
  t=np.array(av.times); u=np.array(av.units)
  # units at each step time = min of levels over [t, t+lead]
  pts=np.unique(np.r_[t, t-lead]); 
  out=[]
  for x in pts:
    i=np.searchsorted(t,x,side='right')-1; j=np.searchsorted(t,x+lead,side='left')
    lv=list(u[max(i,0):max(j,i+1)]) 
    if i<0: lv=[u.max()]+lv  # before first: total
    out.append(min(lv))
  out=np.array(out); keep=np.r_[True,out[1:]!=out[:-1]]
  return Availability(tuple(float(x) for x in pts[keep]), tuple(int(v) for v in out[keep]))
for lead in [float(x)*3600 for x in (sys.argv[1:] or ["0","1","3","6"])]:
  SiteProfile._fitted=lambda self,trace,units,scaled_to,lead=lead: ahead(orig(self,trace,units,scaled_to),lead)
  fs=[fidelity(replay_waits(tr,p,jitter=0.02,seed=s)[fit_mask],rec[fit_mask]) for s in range(3)]
  L=[loss(f) for f in fs]; f=fs[0]
  print(f"lead {lead/3600:4.1f} h loss {np.mean(L):.3f}±{np.std(L):.3f} sp {np.mean([x.spearman for x in fs]):.3f} ks {np.mean([x.ks for x in fs]):.3f} mean {np.mean([x.sim_mean_h for x in fs]):.2f}/{f.rec_mean_h:.2f} p90 {np.mean([x.sim_p90_h for x in fs]):.2f}/{f.rec_p90_h:.2f}", flush=True)
