import sys, time
root = sys.argv[1]; sys.path.insert(0, root)
import numpy as np
from sim.traces import read_trace
from sim.log_inference import infer_limits, cluster_size
from sim.start_order import infer_order
for seed in sys.argv[2:]:
    t = read_trace(f"/tmp/s19/sites/site{seed}.swf")
    units, _ = cluster_size(t)
    lim = infer_limits(t, np.isfinite(t.recorded_start))
    t0 = time.perf_counter(); o = infer_order(t, units, lim); dt = time.perf_counter() - t0
    print(seed, f"{dt:.1f} s", o.depth, o.weights_bound, flush=True)
