import sys, time
from pathlib import Path; ROOT = Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "bench"))
import numpy as np
import unseen_sites as us
from sim.availability import recorded_usage
from sim.log_inference import infer_limits
from sim.profile import PRIORITY_SETTINGS, weights_text
from sim.start_order import Queues, refine, grid_config, rank_bound
seed = int(sys.argv[1])
site, rng = us.draw(seed, grid=False)
trace = us.record(site, rng, 8000)
q = Queues(trace, recorded_usage(trace).peak, infer_limits(trace, np.isfinite(trace.recorded_start)))
for k in PRIORITY_SETTINGS:
    if k == "fifo": continue
    t = time.process_time()
    w, b = refine(q, k)
    print(f"{k}: grid {rank_bound(q.ranks(grid_config(k)))} -> refined {b} ({weights_text(w)}) {time.process_time()-t:.1f} s", flush=True)
