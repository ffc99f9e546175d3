import os, sys, time
sys.path.insert(0, os.environ.get("ROOT", "/work/main"))  # the tree to fit with
import numpy as np
from sim.traces import read_trace
from sim.fit import fit, split, replay_waits
from sim.fidelity import fidelity
seed = int(sys.argv[1])
t = read_trace(f"/tmp/s20_sites/site{seed}.swf")
t0 = time.time()
prof = fit(t, workers=int(os.environ.get('WORKERS', '2')), progress=lambda m: print(f"{time.time()-t0:7.1f}s {m}", flush=True))
print("FIT", round(time.time()-t0), "s:", prof.describe(), "|", prof.start_order, flush=True)
fit_mask, test_mask, cut = split(t, 2/3)
rec = t.recorded_start - t.submit
for s in range(3):
    w = replay_waits(t, prof, jitter=0.02 if s else 0.0, seed=s)
    f = fidelity(w[test_mask], rec[test_mask])
    print("held-out third: mean %.1f / %.1f h (x%.2f) Spearman %.3f KS %.3f" % (f.sim_mean_h, f.rec_mean_h, f.sim_mean_h/f.rec_mean_h, f.spearman, f.ks), flush=True)
