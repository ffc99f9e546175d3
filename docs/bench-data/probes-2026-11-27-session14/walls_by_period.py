"""Session 14: per-user concurrency walls of LS6's recorded schedule, period by period (recorded use only, no waits)."""
import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import split, user_maxima, wall
for name in ("ls6-a100.log","hpc2n-excerpt.swf"):
    tr=read_trace("../shared/traces/"+name)
    fit,held,cut=split(tr)
    t0=float(tr.submit[fit].min())
    mid=t0+(cut-t0)/2
    periods={"fit-early":fit&(tr.submit<mid),"fit-recent":fit&(tr.submit>=mid),"held":held}
    print(name)
    for k,m in periods.items():
        jobs,nodes=user_maxima(tr,m)
        vj=np.array(list(jobs.values())); vn=np.array(list(nodes.values()))
        hist={v:int((vj==v).sum()) for v in range(1,int(vj.max())+1) if (vj==v).sum()}
        print(f"  {k}: {m.sum()} jobs, {len(jobs)} users; walls jobs={wall(jobs)} nodes={wall(nodes)}; max jobs {vj.max()} nodes {vn.max()}")
        print(f"    users by max running jobs: {hist}")
        top=sorted(vn)[-8:]; print(f"    top node maxima {top}")
