"""Seen sites the grid leaves unbounded: would refine from the best grid setting bound
them, and at what depth (true depth 50: right; 500: a false bound)?
    python unbounded_scan.py FIRST N [--off-grid]"""
import sys
sys.path.insert(0, "/work/main"); sys.path.insert(0, "/work/main/bench")
import numpy as np
from unseen_sites import draw, record
from sim.log_inference import infer_limits
from sim.availability import recorded_usage
from sim.start_order import Queues, grid_config, rank_bound, refine, DEEPER, DEEP_SHARE, REFINE_GAIN
from sim.profile import PRIORITY_SETTINGS
first, n = int(sys.argv[1]), int(sys.argv[2]); off = "--off-grid" in sys.argv
for seed in range(first, first + n):
    site, rng = draw(seed, grid=not off)
    tr = record(site, rng, 8000)
    total = max(tr.total_units or 0, recorded_usage(tr).peak)
    q = Queues(tr, total, infer_limits(tr, np.isfinite(tr.recorded_start)))
    if not q.started:
        continue
    bounds = {k: rank_bound(q.ranks(grid_config(k))) for k in PRIORITY_SETTINGS}
    best = min(bounds, key=lambda k: (bounds[k], k != "fifo"))
    share = lambda bd: float(np.mean(q.lengths >= DEEPER * (bd + 1)))
    if share(bounds[best]) >= DEEP_SHARE:
        continue  # bounded already
    nonfifo = min((k for k in bounds if k != "fifo"), key=bounds.get)
    w, b = refine(q, nonfifo)
    ok = share(b) >= DEEP_SHARE and b <= (1 - REFINE_GAIN) * bounds[nonfifo]
    print(f"site {seed}: true depth {site.depth} {site.priority}: grid {best} {bounds[best]} ({share(bounds[best]):.2f}); "
          f"refined from {nonfifo} {bounds[nonfifo]} -> {b} ({share(b):.2f}): {'BOUNDED' if ok else 'still not'}", flush=True)
