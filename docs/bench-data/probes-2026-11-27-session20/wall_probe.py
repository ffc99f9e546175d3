"""Depth by the ranks' 98th percentile (as infer_order) against depth by the wall where the
ranks' density drops, on seen sites of bench/unseen_sites.py.
    python wall_probe.py FIRST N [--off-grid]"""
import sys
sys.path.insert(0, "/work/main")
sys.path.insert(0, "/work/main/bench")
import numpy as np
from unseen_sites import draw, record
from sim.config import SlurmConfig
from sim.log_inference import infer_limits
from sim.availability import recorded_usage
from sim.start_order import Queues, infer_order, grid_config


def wall(ranks, bound):
    counts = np.bincount(ranks, minlength=2 * bound + 8).astype(float)
    lo = max(1, int(np.percentile(ranks, 80)))
    best, at = -np.inf, bound + 1
    for d in range(lo, bound + 2):
        w = max(3, d // 5)
        below = counts[max(0, d - w):d].mean()
        above = counts[d:d + w].mean()
        if below - above > best:
            best, at = below - above, d
    return at, best


first, n = int(sys.argv[1]), int(sys.argv[2])
SAVED = {}
off = "--off-grid" in sys.argv
for seed in range(first, first + n):
    site, rng = draw(seed, grid=not off)
    tr = record(site, rng, 8000)
    total = max(tr.total_units or 0, recorded_usage(tr).peak)
    lim = infer_limits(tr, np.isfinite(tr.recorded_start))
    order = infer_order(tr, total, lim)
    if order is None or not order.bounded:
        print(f"site {seed}: depth {site.depth}: not bounded"); continue
    q = Queues(tr, total, lim)
    cfg = (SlurmConfig.from_text("\n".join(order.weights) + "\n", "w") if order.refined
           else grid_config(order.priority))
    r = q.ranks(cfg)
    wd, contrast = wall(r, order.depth - 1)
    SAVED[f"s{seed}"] = np.r_[site.depth, order.depth, r]
    print(f"site {seed}: depth {site.depth} ({site.priority}{' off' if site.lines else ''}): "
          f"p98 gives {order.depth}, wall {wd} (drop {contrast:.1f}/rank)", flush=True)
np.savez(f"/tmp/s20_ranks_{first}_{'off' if off else 'on'}.npz", **SAVED)
