"""Probe (session 13, fit part only): the shipped profile with each backfill depth, 3 jitters."""
import sys, warnings, dataclasses; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits, split, loss, BACKFILL_DEPTHS, JITTER
from sim.fidelity import fidelity
TR=sys.argv[1]; tr=read_trace("/work/shared/traces/"+TR)
p=SiteProfile.from_json(open("sim/data/"+TR+".profile.json").read())
fit_mask,_,_=split(tr, 2/3, p.recent)
rec=tr.recorded_start-tr.submit
for d in [int(x) if x!="None" else None for x in sys.argv[2].split(",")] if len(sys.argv)>2 else BACKFILL_DEPTHS:
  q=dataclasses.replace(p,bf_max_job_test=d)
  fs=[fidelity(replay_waits(tr,q,jitter=JITTER,seed=s)[fit_mask],rec[fit_mask]) for s in range(3)]
  L=[loss(f) for f in fs]
  print(f"{TR} depth {d}: loss {np.mean(L):.3f}±{np.std(L):.3f} sp {np.mean([x.spearman for x in fs]):.3f} ks {np.mean([x.ks for x in fs]):.3f} mean {np.mean([x.sim_mean_h for x in fs]):.2f}/{fs[0].rec_mean_h:.2f} p90 {np.mean([x.sim_p90_h for x in fs]):.2f}/{fs[0].rec_p90_h:.2f}", flush=True)
