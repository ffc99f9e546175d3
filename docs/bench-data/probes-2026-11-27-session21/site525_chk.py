import sys
from pathlib import Path; ROOT = Path(__file__).resolve().parents[3]; sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "bench"))
import numpy as np
import unseen_sites as us
from sim.availability import recorded_usage
from sim.config import SlurmConfig
from sim.log_inference import infer_limits
from sim.profile import weight_lines
from sim.start_order import Queues, rank_bound
site, rng = us.draw(525, grid=False)
trace = us.record(site, rng, 8000)
q = Queues(trace, recorded_usage(trace).peak, infer_limits(trace, np.isfinite(trace.recorded_start)))
def b(lines): return rank_bound(q.ranks(SlurmConfig.from_text("\n".join(lines) + "\n", "x")))
print("true", b(site.lines))
for rate in (0.005, 0.006, 0.00715, 0.008, 0.01):
    print(rate, [b(weight_lines(58/24, rate, 0.0313, cap)) for cap in (1.5, 2.0, 2.5)])
L = list(site.lines); print(L)
def sub(i, v):
    x = list(L); x[i] = v; return x
print("FS 100000", b(sub(2, "PriorityWeightFairshare=100000")))
print("age 1430", b(sub(3, "PriorityWeightAge=1430")))
print("size 3130", b(sub(4, "PriorityWeightJobSize=3130")))
print("maxage 48h", b(sub(5, "PriorityMaxAge=48:00:00")))
print("all scaled", b(weight_lines(58/24, 1363/95313/2, 2984/95313, 2.0)), weight_lines(58/24, 1363/95313/2, 2984/95313, 2.0))
