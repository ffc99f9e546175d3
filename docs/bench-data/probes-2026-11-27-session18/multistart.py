import sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from bench.unseen_sites import draw
from sim.traces import read_trace
from sim.log_inference import infer_limits, cluster_size
from sim.start_order import Queues, grid_config, rank_bound, refine
from sim.profile import PRIORITY_SETTINGS
from sim.config import SlurmConfig
for seed in [int(a) for a in sys.argv[1:]]:
    site, _ = draw(seed, grid=False)
    t = read_trace(f"/tmp/s18/sites/site{seed}.swf")
    units, _ = cluster_size(t)
    lim = infer_limits(t, np.isfinite(t.recorded_start))
    q = Queues(t, units, lim)
    bounds = {k: rank_bound(q.ranks(grid_config(k))) for k in PRIORITY_SETTINGS if k != "fifo"}
    top = sorted(bounds, key=bounds.get)[:3]
    true = rank_bound(q.ranks(SlurmConfig.from_text("\n".join(site.lines) + "\n", "t"))) if site.lines else -1
    out = []
    for k in top:
        t0 = time.time(); w, b = refine(q, k); out.append((k, bounds[k], b, round(time.time() - t0, 1)))
    print(seed, "true", true, out, flush=True)
