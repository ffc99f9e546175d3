"""Sites whose order the grid leaves unbounded: does refine, started from the best grid
setting anyway, find weights that bound it?   python unbounded_refine.py SEED... """
import sys, time
sys.path.insert(0, "/work/main"); sys.path.insert(0, "/work/main/bench")
import numpy as np
from unseen_sites import draw, record
from sim.log_inference import infer_limits
from sim.availability import recorded_usage
from sim.config import SlurmConfig
from sim.start_order import Queues, grid_config, rank_bound, refine, DEEPER, DEEP_SHARE
from sim.profile import PRIORITY_SETTINGS
for seed in map(int, sys.argv[1:]):
    site, rng = draw(seed, grid=False)
    tr = record(site, rng, 8000)
    total = max(tr.total_units or 0, recorded_usage(tr).peak)
    q = Queues(tr, total, infer_limits(tr, np.isfinite(tr.recorded_start)))
    bounds = {k: rank_bound(q.ranks(grid_config(k))) for k in PRIORITY_SETTINGS}
    best = min(bounds, key=bounds.get)
    t0 = time.time()
    w, b = refine(q, best)
    true = rank_bound(q.ranks(SlurmConfig.from_text("\n".join(site.lines) + "\n", "t"))) if site.lines else None
    share = lambda bd: float(np.mean(q.lengths >= DEEPER * (bd + 1)))
    print(f"site {seed} ({site.describe()}): grid best {best} {bounds[best]} (deep share {share(bounds[best]):.2f}); "
          f"refined {b} (deep share {share(b):.2f}) in {time.time()-t0:.0f} s: {w}; true weights {true} (deep share {share(true) if true else 0:.2f})", flush=True)
