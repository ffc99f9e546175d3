"""Which off-grid sites of bench/unseen_sites.py have a start order the grid leaves nearly
bounded (read from the recorded log only).   python near_scan.py FIRST N"""
import sys
sys.path.insert(0, "/work/main"); sys.path.insert(0, "/work/main/bench")
import numpy as np
from unseen_sites import draw, record
from sim.log_inference import infer_limits
from sim.availability import recorded_usage
from sim.start_order import Queues, grid_config, rank_bound, DEEPER, DEEP_SHARE, NEARLY
from sim.profile import PRIORITY_SETTINGS
first, n = int(sys.argv[1]), int(sys.argv[2])
for seed in range(first, first + n):
    site, rng = draw(seed, grid=False)
    tr = record(site, rng, 8000)
    total = max(tr.total_units or 0, recorded_usage(tr).peak)
    q = Queues(tr, total, infer_limits(tr, np.isfinite(tr.recorded_start)))
    if not q.started:
        print(f"site {seed}: no order", flush=True); continue
    bounds = {k: rank_bound(q.ranks(grid_config(k))) for k in PRIORITY_SETTINGS}
    b = min(bounds.values())
    share = float(np.mean(q.lengths >= DEEPER * (b + 1)))
    kind = "bounded" if share >= DEEP_SHARE else "NEARLY" if share >= DEEP_SHARE * NEARLY else "unbounded"
    print(f"site {seed}: {kind} (bound {b}, deep share {share:.2f})", flush=True)
