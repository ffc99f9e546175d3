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
def st(lines):
    r = q.ranks(SlurmConfig.from_text("\n".join(lines) + "\n", "x"))
    top = np.sort(r)[int(0.95 * r.size):]
    return rank_bound(r), top.mean(), np.mean(np.log1p(r)), np.mean(r > 50)
for rate, cap in ((1363/95313/2, 2.0), (282/100000/(205/24), 205/24)):
    print("rate", round(rate, 5), "cap", cap)
    for s in np.arange(0.024, 0.042, 0.001):
        b, tm, ml, fr = st(weight_lines(58/24, rate, s, cap))
        print(f"  size {s:.3f}: p98 {b:4d}  top5% mean {tm:7.1f}  mean log1p {ml:.3f}  share>50 {fr:.3f}")
