"""Seen off-grid sites of bench/unseen_sites.py with bf_max_job_test=50: the recorded starts'
ranks under the site's *true* weights and under the weights `infer_order` finds, near the wall.
    python depth_wall.py FIRST N"""
import sys
sys.path.insert(0, "/work/main")
sys.path.insert(0, "/work/main/bench")
import numpy as np
from unseen_sites import draw, record
from sim.config import SlurmConfig
from sim.log_inference import infer_limits
from sim.availability import recorded_usage
from sim.start_order import Queues, infer_order, refine, rank_bound
from sim.profile import weight_lines

first, n = int(sys.argv[1]), int(sys.argv[2])
for seed in range(first, first + n):
    site, rng = draw(seed, grid=False)
    if site.depth != 50 or site.priority == "fifo":
        continue
    tr = record(site, rng, 8000)
    total = max(tr.total_units or 0, recorded_usage(tr).peak)
    lim = infer_limits(tr, np.isfinite(tr.recorded_start))
    q = Queues(tr, total, lim)
    true_cfg = SlurmConfig.from_text("\n".join(site.lines) + "\n", "true")
    r_true = q.ranks(true_cfg)
    order = infer_order(tr, total, lim)
    def row(r):
        qs = np.percentile(r, [90, 95, 97, 98, 99])
        frac = [np.mean(r >= d) for d in (45, 50, 55, 60)]
        h = np.bincount(np.minimum(r, 80), minlength=81)
        return (" ".join(f"{x:.0f}" for x in qs) + " | >=45,50,55,60: " + " ".join(f"{x:.3f}" for x in frac)
                + " | counts 40-49: " + str(h[40:50].tolist()) + " 50-59: " + str(h[50:60].tolist()))
    print(f"site {seed} ({site.describe()}), {len(q.started)} starts, queue median {np.median(q.lengths):.0f}")
    print("  true    p90/95/97/98/99:", row(r_true))
    if order.refined:
        r_inf = q.ranks(SlurmConfig.from_text("\n".join(order.weights) + "\n", "inf"))
        print("  refined p90/95/97/98/99:", row(r_inf), "depth", order.depth)
    else:
        print("  inferred:", order.describe()[:120])
    sys.stdout.flush()
