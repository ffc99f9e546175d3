import sys, numpy as np
from dataclasses import replace
ROOT = __import__('pathlib').Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT))
from sim.traces import read_trace
from sim.profile import SiteProfile, split, replay_waits
from sim.fidelity import fidelity
import sim.profile as P
tr = read_trace(str(ROOT.parent / 'shared/traces/ls6-a100.log'))
prof = SiteProfile.from_json(open(ROOT / 'sim/data/ls6-a100.log.profile.json').read())
print(prof.describe())
fitm, held, cut = split(tr)
rec = tr.recorded_start - tr.submit
variants = {'shipped': prof, 'clamp0': replace(prof, clamp=(0.0,0.0)), 'win1h': replace(prof, window_s=3600.0), 'win1h_clamp0': replace(prof, window_s=3600.0, clamp=(0.0,0.0)), 'nowin': replace(prof, window_s=None)}
for name, p in variants.items():
    res=[]
    for s in range(3):
        w = replay_waits(tr, p, jitter=0.02, seed=s)
        res.append((fidelity(w[fitm], rec[fitm]), fidelity(w[held], rec[held])))
    for part,k in (("fit",0),("held",1)):
        fs=[r[k] for r in res]
        print(f"{name:14s} {part}: sp={np.mean([f.spearman for f in fs]):.3f} ks={np.mean([f.ks for f in fs]):.3f} med={np.mean([f.sim_median_h for f in fs]):.2f}/{fs[0].rec_median_h:.2f} mean={np.mean([f.sim_mean_h for f in fs]):.2f}/{fs[0].rec_mean_h:.2f} p90={np.mean([f.sim_p90_h for f in fs]):.2f}/{fs[0].rec_p90_h:.2f} loss={np.mean([P.loss(f) for f in fs]):.3f}", flush=True)
