"""LS6: the depth floor judged inside the past (see ls6_depth_floor_declared.txt)."""
import sys

sys.path.insert(0, "/work/main")
import numpy as np  # noqa: E402

import sim.fit as F  # noqa: E402
from sim.fidelity import fidelity  # noqa: E402
from sim.log_inference import cluster_size, infer_limits  # noqa: E402
from sim.start_order import Queues, rank_bound, grid_config  # noqa: E402
from sim.traces import read_trace  # noqa: E402

trace = read_trace("/work/shared/traces/ls6-a100.log")
inner = F.FIT_FRACTION * F.FIT_FRACTION
t0, t1 = float(trace.submit[0]), float(trace.submit[-1])
a, b = t0 + inner * (t1 - t0), t0 + F.FIT_FRACTION * (t1 - t0)
judged = np.isfinite(trace.recorded_start) & (trace.submit >= a) & (trace.submit < b)
rec = (trace.recorded_start - trace.submit)[judged]
units, _ = cluster_size(trace)
walls = infer_limits(trace, trace.submit < a)
floor = rank_bound(Queues(trace, units, walls, until=a).ranks(grid_config("fairshare-3.5d"))) + 1
shipped = F.BACKFILL_DEPTHS
floored = tuple(d for d in shipped if d is None or d >= floor)
print(f"inner fit part until t={a / 86400:.1f} d; judged {judged.sum()} jobs; floor {floor}: {floored}")
losses = {}
for name, depths in (("shipped depths", shipped), ("floored depths", floored)):
    F.BACKFILL_DEPTHS = depths
    prof = F.fit(trace, fraction=inner, recent=F.RECENT_SHARE, workers=2)
    runs = [
        F.loss(fidelity(F.replay_waits(trace, prof, jitter=F.JITTER, seed=s)[judged], rec))
        for s in range(F.INNER_JITTERS)
    ]
    losses[name] = runs
    print(f"{name}: {prof.describe()}; judged loss {np.mean(runs):.3f} ± {np.std(runs):.3f}", flush=True)
s, f = (np.asarray(v) for v in losses.values())
spread = max(s.std(), f.std())
print("floor preferred inside the past:", bool(f.mean() < s.mean() - spread))
