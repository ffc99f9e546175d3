import sys, numpy as np
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from sim.traces import read_trace
from sim.profile import SiteProfile, split, replay_waits
from sim.fidelity import fidelity
import sim.profile as P
tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
prof = SiteProfile.from_json(open(ROOT / 'sim/data/ls6-a100.log.profile.json').read())
fitm, held, cut = split(tr)
rec = tr.recorded_start - tr.submit
orig = SiteProfile.slurm_conf
for extra in sys.argv[1:]:
    SiteProfile.slurm_conf = lambda self, total_units=None, e=extra: orig(self, total_units).replace("batch_sched_delay=1", "batch_sched_delay=1" + e)
    res = []
    for s in range(3):
        w = replay_waits(tr, prof, jitter=0.02, seed=s)
        res.append((fidelity(w[fitm], rec[fitm]), fidelity(w[held], rec[held])))
    for name, k in (("fit", 0), ("held", 1)):
        fs = [r[k] for r in res]
        print(f"{extra or 'default'} {name}: sp={np.mean([f.spearman for f in fs]):.3f} ks={np.mean([f.ks for f in fs]):.3f} med={np.mean([f.sim_median_h for f in fs]):.2f}/{fs[0].rec_median_h:.2f} mean={np.mean([f.sim_mean_h for f in fs]):.2f}/{fs[0].rec_mean_h:.2f} p90={np.mean([f.sim_p90_h for f in fs]):.2f}/{fs[0].rec_p90_h:.2f} loss={np.mean([P.loss(f) for f in fs]):.3f}", flush=True)
