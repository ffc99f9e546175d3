"""Session 19 probe: finer off-grid weight searches against the shipped refine.
Usage: refine_probe.py LOGDIR SEED...  (logs from bench/unseen_sites.py --off-grid --keep)"""
import sys, time, math
sys.path.insert(0, "/work/main")
import numpy as np
from bench.unseen_sites import draw
from sim.traces import read_trace
from sim.log_inference import infer_limits, cluster_size
from sim.start_order import Queues, grid_config, rank_bound, refine, weight_lines, HALF_LIVES, AGE_RATES, SIZE_SHARES, MAX_AGES
from sim.profile import PRIORITY_SETTINGS
from sim.config import SlurmConfig

def cfg_of(x):
    return SlurmConfig.from_text("\n".join(weight_lines(*x)) + "\n", "w")

def objective(kind, r):
    if kind == "p98":
        return rank_bound(r)
    if kind == "cvar":
        return float(np.mean(np.sort(r)[int(0.95 * r.size):]))
    if kind == "p98+":  # bound, then the tail mean as a tie-break
        return rank_bound(r) + float(np.mean(np.sort(r)[int(0.95 * r.size):])) * 1e-4
    if kind == "log":
        return float(np.mean(np.log1p(r)))

def search(q, key, kind):
    size_weight = PRIORITY_SETTINGS[key][1]
    half = grid_config(key).decay_half_life
    point = [half / 86400, 0.01 / 7, size_weight / 100000, 7.0]
    seen = {}
    def score(x):
        k = tuple(round(v, 6) for v in x)
        if k not in seen:
            seen[k] = objective(kind, q.ranks(cfg_of(x)))
        return seen[k]
    axes = (HALF_LIVES, AGE_RATES, SIZE_SHARES, MAX_AGES)
    for _ in range(3):
        moved = False
        for i, options in enumerate(axes):
            for v in options:
                cand = point[:i] + [v] + point[i + 1:]
                if score(cand) < score(point):
                    point, moved = cand, True
        if not moved:
            break
    # pattern search: multiplicative steps per coordinate (a zero becomes the axis' smallest
    # non-zero), half-life rounded to whole hours
    floor = [None, AGE_RATES[1], SIZE_SHARES[1], None]
    for f in (1.5, 1.22, 1.1):
        moved = True
        rounds = 0
        while moved and rounds < 4:
            moved = False
            rounds += 1
            for i in range(4):
                for up in (True, False):
                    v = point[i]
                    if v == 0:
                        if not up:
                            continue
                        nv = floor[i]
                    else:
                        nv = v * f if up else v / f
                        if floor[i] is not None and nv < floor[i] / 2:
                            nv = 0.0
                    if i == 0:
                        nv = max(round(nv * 24) / 24, 1 / 24)
                    if i == 3:
                        nv = min(max(round(nv * 24) / 24, 1 / 24), 30.0)
                    cand = point[:i] + [nv] + point[i + 1:]
                    if score(cand) < score(point):
                        point, moved = cand, True
    return point, rank_bound(q.ranks(cfg_of(point))), len(seen)

logdir = sys.argv[1]
kinds = ["p98", "p98+", "cvar", "log"]
for seed in [int(a) for a in sys.argv[2:]]:
    site, _ = draw(seed, grid=False)
    t = read_trace(f"{logdir}/site{seed}.swf")
    units, _ = cluster_size(t)
    lim = infer_limits(t, np.isfinite(t.recorded_start))
    q = Queues(t, units, lim)
    bounds = {k: rank_bound(q.ranks(grid_config(k))) for k in PRIORITY_SETTINGS}
    best = min(bounds, key=lambda k: (bounds[k], k != "fifo"))
    true = rank_bound(q.ranks(SlurmConfig.from_text("\n".join(site.lines) + "\n", "t"))) if site.lines else -1
    t0 = time.time(); w, b = refine(q, best); ship = (b, round(time.time() - t0, 1))
    out = []
    for kind in kinds:
        t0 = time.time(); p, b, n = search(q, best, kind)
        out.append(f"{kind}: {b} ({n} evals, {time.time() - t0:.1f} s, h={p[0]:.2f}d r={p[1]:.4f} s={p[2]:.3f} m={p[3]:.1f})")
    print(seed, site.describe().split(",")[1:6], "| best", best, bounds[best], "| true", true, "| shipped", ship, "|", " ; ".join(out), flush=True)
