"""Rerun before stopping (session 14, limit steps active in every profile replay): the shipped profiles' held-out thirds replayed from the stored files, no refit, 3 jitters."""
import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits, split
from sim.fidelity import fidelity
for tr_name in ("ls6-a100.log","hpc2n-excerpt.swf"):
  tr=read_trace("../shared/traces/"+tr_name); p=SiteProfile.from_json(open(f"sim/data/{tr_name}.profile.json").read())
  _,held,_=split(tr); rec=(tr.recorded_start-tr.submit)[held]
  fs=[fidelity(replay_waits(tr,p,jitter=0.02,seed=s)[held],rec) for s in range(3)]
  print(tr_name, "spearman %.3f±%.3f ks %.3f mean %.2f/%.2f p90 %.2f/%.2f"%(np.mean([f.spearman for f in fs]),np.std([f.spearman for f in fs]),np.mean([f.ks for f in fs]),np.mean([f.sim_mean_h for f in fs]),fs[0].rec_mean_h,np.mean([f.sim_p90_h for f in fs]),fs[0].rec_p90_h))
