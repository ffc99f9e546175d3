import sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from bench.unseen_sites import draw
from sim.traces import read_trace
from sim.log_inference import infer_limits, cluster_size
from sim.start_order import infer_order, Queues
from sim.config import SlurmConfig
grid = sys.argv[1] == "grid"
for seed in [int(a) for a in sys.argv[2:]]:
    site, _ = draw(seed, grid=grid)
    t = read_trace(f"/tmp/s18/sites/site{seed}.swf")
    units, _ = cluster_size(t)
    lim = infer_limits(t, np.isfinite(t.recorded_start))
    t0 = time.time()
    o = infer_order(t, units, lim)
    t1 = time.time()
    extra = ""
    if site.lines:
        q = Queues(t, units, lim)
        r = q.ranks(SlurmConfig.from_text("\n".join(site.lines) + "\n", "true"))
        extra = f"| true weights: p98 {np.percentile(r, 98):.0f}"
    print(seed, site.describe()[:60], "->", o.priority, o.depth, o.bounded, "%.1fs" % (t1 - t0), extra, flush=True)
