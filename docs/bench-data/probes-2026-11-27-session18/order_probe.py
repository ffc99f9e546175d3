import sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from bench.unseen_sites import draw
from sim.traces import read_trace
from sim.log_inference import infer_limits, cluster_size
from sim.start_order import infer_order, start_ranks
for seed in range(16):
    site, _ = draw(seed)
    t = read_trace(f"/tmp/s18/sites/site{seed}.swf")
    units, _ = cluster_size(t)
    lim = infer_limits(t, np.isfinite(t.recorded_start))
    t0 = time.time()
    o = infer_order(t, units, lim)
    sh = " ".join(f"{k}:{v:.3f}" for k, v in sorted(o.shares.items(), key=lambda kv: kv[1])[:3])
    print(seed, site.priority, site.depth, "->", o.priority, o.depth, o.bounded, "bound", o.bound, o.describe(), "| ", sh, "%.1fs" % (time.time()-t0), flush=True)
