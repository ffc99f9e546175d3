import sys, warnings; sys.path.insert(0,'.'); warnings.simplefilter('ignore')
import numpy as np
from sim.traces.read import read_trace
from sim.profile import SiteProfile, replay_waits, split, loss
from sim.fidelity import fidelity
import sim.profile as P
TR=__import__("os").environ.get("TR","ls6-a100.log"); tr = read_trace("../shared/traces/"+TR)
p = SiteProfile.from_json(open("sim/data/"+TR+".profile.json").read())
fit_mask,_,_ = split(tr, 2/3, p.recent)
rec=tr.recorded_start-tr.submit
orig=SiteProfile.slurm_conf
variants=sys.argv[1:] or ["", "bf_max_job_test=100", "bf_max_job_test=30", "bf_interval=300", "bf_window=2880", "bf_window=720", "default_queue_depth=20","sched_interval=300"]
for v in variants:
  def conf(self,total_units=None,v=v):
    s=orig(self,total_units)
    return __import__("re").sub(r"(SchedulerParameters=batch_sched_delay=[0-9.]+)", lambda m: m.group(1)+(","+v if v else ""), s)
  SiteProfile.slurm_conf=conf
  fs=[fidelity(replay_waits(tr,p,jitter=0.02,seed=s)[fit_mask],rec[fit_mask]) for s in range(3)]
  L=[loss(f) for f in fs]
  f=fs[0]
  print(f"{v or 'base':28s} loss {np.mean(L):.3f}±{np.std(L):.3f} sp {np.mean([x.spearman for x in fs]):.3f} ks {np.mean([x.ks for x in fs]):.3f} mean {np.mean([x.sim_mean_h for x in fs]):.2f}/{f.rec_mean_h:.2f} p90 {np.mean([x.sim_p90_h for x in fs]):.2f}/{f.rec_p90_h:.2f}", flush=True)
