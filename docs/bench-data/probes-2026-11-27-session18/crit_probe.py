import sys
sys.path.insert(0, "/work/main")
import numpy as np
from sim.traces import read_trace
from sim.log_inference import infer_limits, cluster_size
from sim.start_order import start_ranks
from bench.unseen_sites import draw
for seed in [int(a) for a in sys.argv[1:]]:
    site, _ = draw(seed)
    t = read_trace(f"/tmp/s18/sites/site{seed}.swf")
    units, _ = cluster_size(t)
    lim = infer_limits(t, np.isfinite(t.recorded_start))
    ranks, q = start_ranks(t, units, lim)
    rows = sorted(((float(np.mean(r/q)), int(np.percentile(r, 98)), float(np.mean(r < 50)), k) for k, r in ranks.items()), key=lambda x: x[1])
    print(seed, site.priority, site.depth, " | ".join(f"{k} share {a:.3f} p98 {b}" for a, b, c, k in rows[:4]), flush=True)
